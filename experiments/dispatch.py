"""Block-dispatch microbenchmark: which SM each block of a launch of one wave runs on, and when it starts - does the
GPU deal a launch that fills part of its block slots evenly over the SMs (``ceil(blocks / SMs)`` on the busiest), and
how long does it take to start them all?

    python -m experiments.dispatch [--out FILE.json] [--iters 20000]

One kernel: every block spins ``iters`` cycles (``clock64``) and thread 0 records its SM (``%smid``) and the global
timer (``%globaltimer``, ns) when it starts and ends. Launches of 64-, 256- and 1024-thread blocks (32, 8 and 2 of
them fit an SM by threads), at block counts from one block per SM to a full wave, two warm-ups each. Per launch: the
blocks each SM ran (the busiest SM's count against ``ceil(blocks / SMs)``), the spread of the start times (the last
block's start after the first's) and the launch's span (first start to last end). JSON, schema
``gemmscope.dispatch``, version 1, every block's raw record kept. Needs a GPU and CuPy.

Why: launches of one partial wave (small sizes) are 6-20 % slower than the timing model predicts for the naive and
shared-memory kernels, against 0-4 % over many waves (every shipped H200 row, sixteenth session); the model deals
the blocks round-robin, ``ceil(blocks / SMs)`` to the busiest SM, all started at once.
"""
from __future__ import annotations

import statistics

from . import kernelbench
from .kernelbench import device_sms, result

SRC = r"""
extern "C" __global__ void dispatch_probe(unsigned long long* rec, long long iters) {
    unsigned long long t0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    unsigned int smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    long long c0 = clock64();
    while (clock64() - c0 < iters) { }
    __syncthreads();
    unsigned long long t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    if (threadIdx.x == 0) {
        rec[3 * blockIdx.x] = smid;
        rec[3 * blockIdx.x + 1] = t0;
        rec[3 * blockIdx.x + 2] = t1;
    }
}
"""

SHAPES = ((64, 32), (256, 8), (1024, 2))
"""(threads a block, blocks an SM holds by threads) of the launches."""
FILLS = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0)
"""Blocks a launch in SMs (1.0: one block per SM), up to a full wave of its shape."""


def summarise(rec: list[tuple[int, int, int]], sms: int) -> dict:
    """Per launch: blocks per SM (busiest, ceil(blocks / SMs), SMs used), start spread and span (ns)."""
    per: dict[int, int] = {}
    for sm, _, _ in rec:
        per[sm] = per.get(sm, 0) + 1
    t0 = min(r[1] for r in rec)
    return {"blocks": len(rec), "busiest_sm_blocks": max(per.values()), "even_blocks": -(-len(rec) // sms),
            "sms_used": len(per), "start_spread_ns": max(r[1] for r in rec) - t0,
            "span_ns": max(r[2] for r in rec) - t0,
            "block_ns_median": statistics.median(r[2] - r[1] for r in rec)}


def run(iters: int = 20000, log=print) -> dict:
    import cupy as cp
    sms = device_sms()
    k = cp.RawModule(code=SRC).get_function("dispatch_probe")
    rows = []
    for threads, fit in SHAPES:
        for fill in FILLS:
            if fill > fit:
                continue
            blocks = int(round(fill * sms))
            rec = cp.zeros(3 * blocks, dtype=cp.uint64)
            for _ in range(3):      # two warm-ups, the third kept
                k((blocks,), (threads,), (rec, cp.int64(iters)))
                cp.cuda.runtime.deviceSynchronize()
            raw = rec.get().reshape(-1, 3).tolist()
            s = summarise([(int(a), int(b), int(c)) for a, b, c in raw], sms)
            rows.append({"threads": threads, "blocks_per_sm_fit": fit, "fill_blocks_per_sm": fill, "iterations": iters,
                         **s, "raw": [[int(a), int(b), int(c)] for a, b, c in raw]})
            log(f"  {threads:4d} threads x {blocks:5d} blocks: busiest SM {s['busiest_sm_blocks']:2d} "
                f"(even {s['even_blocks']:2d}), {s['sms_used']:3d} SMs, start spread {s['start_spread_ns']:7.0f} ns, "
                f"span {s['span_ns']:7.0f} ns, a block {s['block_ns_median']:6.0f} ns")
    return result("gemmscope.dispatch", rows)


def main(argv: list[str] | None = None) -> int:
    return kernelbench.main("dispatch", __doc__, run, 20000, argv)


if __name__ == "__main__":
    raise SystemExit(main())
