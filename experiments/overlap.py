"""Issue / shared-memory overlap microbenchmark: how an SM's schedulers and its shared-memory pipe overlap when
both are busy, as a function of the warps per scheduler and of the wavefronts each shared load takes.

    python -m experiments.overlap [--out FILE.json] [--iters 400]

One kernel per (R, pattern): a loop whose body is 32 steps, each one 128-bit shared load (``LDS.128``) and R
independent FFMAs (8 chains); a load's result is consumed four steps later, so no warp waits on it. The
load's lanes read 16-byte words ``lane / g`` apart (g = 32: all lanes one word, a broadcast; g = 8: four words;
g = 1: 32 consecutive words, 512 B): the shared-memory wavefronts per load grow with the distinct bytes. Run by
one block per SM of 4, 8 or 16 warps (1, 2, 4 warps per scheduler). Thread 0 of each block reads ``clock64``
around the loop; the median over the blocks, divided by the iterations, is the cycles per iteration. The issue
cycles per iteration and scheduler are (32 (R + 1) + loop overhead) x warps per scheduler, the shared-memory
cycles 32 x wavefronts per load x warps per SM / the pipe's wavefronts a cycle: the timing model combines the
two with ``(issue^p + shared^p)^(1/p)``; this measures what the hardware does. JSON, schema ``gemmscope.overlap``,
version 1, raw cycles kept. Needs a GPU and CuPy.
"""
from __future__ import annotations

import statistics

from . import kernelbench
from .kernelbench import block_cycles, device_sms, result

RATIOS = (1, 2, 3, 4, 6, 8, 12, 16)
GROUPS = (32, 8, 1)           # lanes per 16-byte word: 1, 4 and 32 distinct words per load
WARPS = (4, 8, 16)
STEPS = 32
SRC = r"""
extern "C" __global__ void overlap(float* out, long long* cycles, float a, float b, int iters) {
    extern __shared__ float4 sm[];
    const int lane = threadIdx.x & 31;
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) sm[i] = make_float4(i, i + 1, i + 2, i + 3);
    __syncthreads();
    float x0 = threadIdx.x, x1 = x0 + 1.f, x2 = x0 + 2.f, x3 = x0 + 3.f,
          x4 = x0 + 4.f, x5 = x0 + 5.f, x6 = x0 + 6.f, x7 = x0 + 7.f;
    float4 v0 = sm[0], v1 = sm[1], v2 = sm[2], v3 = sm[3];
    float acc = 0.f;
    const int word = lane / GROUP;
    long long t0 = clock64();
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int s = 0; s < STEPS; ++s) {
            float4 v = sm[(s * 40 + word + (it & 1)) & 1023];
            const float4 u = (s & 3) == 0 ? v0 : (s & 3) == 1 ? v1 : (s & 3) == 2 ? v2 : v3;
            acc += (u.x + u.y) + (u.z + u.w);
            if ((s & 3) == 0) v0 = v; else if ((s & 3) == 1) v1 = v; else if ((s & 3) == 2) v2 = v; else v3 = v;
#pragma unroll
            for (int r = 0; r < RATIO; ++r) {
                switch (r & 7) {
                    case 0: x0 = fmaf(x0, a, b); break; case 1: x1 = fmaf(x1, a, b); break;
                    case 2: x2 = fmaf(x2, a, b); break; case 3: x3 = fmaf(x3, a, b); break;
                    case 4: x4 = fmaf(x4, a, b); break; case 5: x5 = fmaf(x5, a, b); break;
                    case 6: x6 = fmaf(x6, a, b); break; default: x7 = fmaf(x7, a, b); break;
                }
            }
        }
    }
    long long t1 = clock64();
    if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
    out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + acc;
}
"""


def run(iters: int = 400, log=print) -> dict:
    rows = []
    for g in GROUPS:
        for ratio in RATIOS:
            rows += loop_rows(SRC, (f"-DRATIO={ratio}", f"-DGROUP={g}", f"-DSTEPS={STEPS}"), iters,
                              {"ffma_per_load": ratio, "lanes_per_word": g}, f"g={g:2d} R={ratio:2d}", log)
    return result("gemmscope.overlap", rows)


def loop_rows(src: str, opts: tuple, iters: int, fields: dict, tag: str, log=print, warps=WARPS) -> list[dict]:
    """One row per block size in ``warps`` (one block per SM) of the loop kernel ``overlap`` compiled from ``src``
    with ``opts``: the median over the blocks of clock64 cycles per iteration, the raw cycles, and ``fields``."""
    import cupy as cp
    sms = device_sms()
    k = cp.RawModule(code=src, options=opts).get_function("overlap")
    rows = []
    for w in warps:
        raw = block_cycles(k, sms, 32 * w, iters, shared_mem=16 * 1024)
        per_it = statistics.median(raw) / iters
        rows.append({**fields, "warps_per_block": w, "warps_per_scheduler": w // 4, "steps": STEPS,
                     "iterations": iters, "cycles_per_iteration": per_it, "cycles_raw": raw})
        log(f"  {tag} {w:2d} warps: {per_it:8.1f} cycles per iteration")
    return rows


def main(argv: list[str] | None = None) -> int:
    return kernelbench.main("overlap", __doc__, run, 400, argv)


if __name__ == "__main__":
    raise SystemExit(main())
