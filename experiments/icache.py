"""Instruction-fetch microbenchmark: how big a loop fits the L0 instruction cache, and how fast a scheduler
fetches a loop that does not.

    python -m experiments.icache [--out FILE.json] [--iters 200]

One kernel per loop size: a loop whose body is ``N`` independent FFMAs (8 chains, so one warp can issue one a
cycle), ``N`` from 256 to 8192 instructions (4-128 KB of SASS), run by one block per SM of 1, 4 or 8 warps (no
scheduler, one warp per scheduler, two). Thread 0 of every block reads ``clock64`` around the loop; the median
over the blocks of cycles / (iterations x N x warps per scheduler) is the cycles per instruction and scheduler.
A loop that fits the L0 issues at about 1; past the L0 the cost per instruction is the fetch's (16 B / the
fetch rate in bytes a cycle). Writes JSON (schema ``gemmscope.icache``, version 1) with the raw cycles. Needs a
GPU and CuPy; ``model.facts.INSTRUCTION_FETCH`` takes its numbers from such a run.
"""
from __future__ import annotations

import statistics

from . import kernelbench
from .kernelbench import block_cycles, device_sms, result

SIZES = (256, 512, 1024, 1536, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 8192)
WARPS = (1, 4, 8)
SRC = r"""
extern "C" __global__ void icache(float* out, long long* cycles, float a, float b, int iters) {
    float x0 = threadIdx.x, x1 = x0 + 1.f, x2 = x0 + 2.f, x3 = x0 + 3.f,
          x4 = x0 + 4.f, x5 = x0 + 5.f, x6 = x0 + 6.f, x7 = x0 + 7.f;
    long long t0 = clock64();
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int j = 0; j < NBODY / 8; ++j) {
            x0 = fmaf(x0, a, b); x1 = fmaf(x1, a, b); x2 = fmaf(x2, a, b); x3 = fmaf(x3, a, b);
            x4 = fmaf(x4, a, b); x5 = fmaf(x5, a, b); x6 = fmaf(x6, a, b); x7 = fmaf(x7, a, b);
        }
    }
    long long t1 = clock64();
    if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
    out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}
"""


def run(iters: int = 200, log=print, sizes: tuple[int, ...] = SIZES) -> dict:
    import cupy as cp
    sms = device_sms()
    rows = []
    for n in sizes:
        k = cp.RawModule(code=SRC, options=(f"-DNBODY={n}",)).get_function("icache")
        for w in WARPS:
            raw = block_cycles(k, sms, 32 * w, iters)
            per_sched = -(-w // 4)
            cpi = statistics.median(raw) / (iters * n * per_sched)
            rows.append({"ffma_per_iteration": n, "code_bytes": 16 * n, "warps_per_block": w,
                         "warps_per_scheduler": per_sched, "iterations": iters,
                         "cycles_per_instruction": cpi, "cycles_raw": raw})
            log(f"  {16 * n / 1024:6.1f} KB  {w} warp(s): {cpi:.3f} cycles per instruction and scheduler")
    return result("gemmscope.icache", rows)


def main(argv: list[str] | None = None) -> int:
    return kernelbench.main("icache", __doc__, run, 200, argv)


if __name__ == "__main__":
    raise SystemExit(main())
