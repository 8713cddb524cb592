"""Latency microbenchmark: how long one warp waits for a batch of ``n`` independent global loads, each a full
128-byte line in a row of its own, when every line comes from DRAM (cold) or from the L2 (warm).

    python -m experiments.batch_latency [--out FILE.json] [--iters 24]

One warp a block. In each of ``iters`` batches it issues ``n`` independent ``LDG.E.CONSTANT`` loads (``__ldg``: the
naive kernel's load), a 128-byte line each, in ``n`` different rows of a row-major matrix, sums them and stamps
``clock64`` before the first load and after the sum (the next batch's addresses depend on the sum, so no load moves
across a stamp). Two patterns: ``shared_rows``, block ``b`` reads line ``b`` of each row and the rows are one
matrix row apart (``blocks x 128`` bytes: the naive kernel's B at a skinny M, where every block reads the same row of
B at once); ``own_rows``, each block reads its own rows 16 KiB apart. Cold: the L2 flushed first (a 2 x L2 buffer
read through) and no line read twice; warm: the same launch again over rows that stay in the L2 (a 4 MiB window).
On every SM (one warp each) and on one SM alone. Every batch's cycles are kept (the first two batches of a block
dropped from the statistics). ``BATCH_SET=widths`` in the environment runs the second set instead: every SM, shared
rows, 1-32 warps an SM, and loads of one broadcast word, one line or four lines (LDG.128) a warp (:func:`_cases`).
The first run (``batch_latency-2026-12-02.json``) was compiled by ptxas at -O3, whose SASS had every load of a batch
between the stamps at the 4-byte width; since, -O1 (``OPTIONS``), which keeps them there at every width and warp
count. JSON, schema ``gemmscope.batch_latency``, version 1. Needs a GPU and CuPy.

Why (issue 8, ``logs/batchlat-2026-12-02/``): the timing model takes the wait for a batch of loads as one unloaded
latency (the pointer chase of :mod:`experiments.microbench`: a single load). The naive kernel at a skinny M, a warp
alone on its SM waiting three times per 16 k steps for about five lines of B from DRAM, runs 20-35 % slower than
that predicts on every such row shipped; the slowest of ``n`` loads, each with its own DRAM latency, is what the
warp waits for.
"""
from __future__ import annotations

import os
import statistics

from . import kernelbench
from .kernelbench import device_sms, result

SIZES = (1, 2, 3, 4, 5, 6, 8, 10, 12, 14)   # at 16 ptxas issues two of the loads after the first add
DROP = 2                     # batches dropped from each block's statistics (instruction cache, TLB warm-up)
OWN_PITCH = 4096             # words between the rows of the own_rows pattern (16 KiB)
WARM_WINDOW = 4 << 20        # bytes of rows the warm runs cycle through (stays in the L2)
OPTIONS = ("-Xptxas=-O1",)   # ptxas at -O3 moves adds that wait for the first loads between the later loads of a batch
SRC = r"""
#ifndef WIDTH
#define WIDTH 1                              // words a lane loads: 1 (LDG.32) or 4 (LDG.128); 0: every lane one word
#endif
extern "C" __global__ void batch_wait(const float* __restrict__ src, long long pitch, long long block_step,
                                      long long rows_mod, int iters, float* out, long long* lat) {
    const int lane = threadIdx.x & 31;
    const long long slot = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);   // the warp's place
    const float* p = src + slot * block_step + (WIDTH == 0 ? 0 : lane * WIDTH);
    float acc = 0.f;
    int dep = 0;
    for (int it = 0; it < iters; ++it) {
        const float* a[N];
#pragma unroll
        for (int j = 0; j < N; ++j) a[j] = p + dep + ((long long)it * N + j) % rows_mod * pitch;
        long long t0 = clock64();
#if WIDTH == 4
        float v[N][4];
#pragma unroll
        for (int j = 0; j < N; ++j)
            asm volatile("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];"
                         : "=f"(v[j][0]), "=f"(v[j][1]), "=f"(v[j][2]), "=f"(v[j][3]) : "l"(a[j]));
        float s = 0.f;
#pragma unroll
        for (int j = 0; j < N; ++j) s += (v[j][0] + v[j][1]) + (v[j][2] + v[j][3]);
#else
        float v[N];
#pragma unroll
        for (int j = 0; j < N; ++j) asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v[j]) : "l"(a[j]));
        float s = 0.f;
#pragma unroll
        for (int j = 0; j < N; ++j) s += v[j];
#endif
        float used;
        asm volatile("add.f32 %0, %1, 0f00000000;" : "=f"(used) : "f"(s));
        long long t1 = clock64();
        dep = (used == -1.0f) ? 1 : 0;       // never 1 (the data are >= 0), unknown to the compiler
        acc += used;
        if (lane == 0) lat[slot * iters + it] = t1 - t0;
    }
    out[slot * 32 + lane] = acc;
}

extern "C" __global__ void flush(const float4* buf, long long n, float* out) {
    float s = 0.f;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        float4 v = __ldcg(buf + i);
        s += v.x + v.y + v.z + v.w;
    }
    if (s == -1.0f) out[0] = s;
}
"""


def _stats(cycles: list[int], iters: int) -> dict:
    kept = [c for i, c in enumerate(cycles) if i % iters >= DROP]
    kept.sort()
    return {"median_cycles": statistics.median(kept), "mean_cycles": statistics.fmean(kept),
            "p10_cycles": kept[len(kept) // 10], "p90_cycles": kept[(9 * len(kept)) // 10], "samples": len(kept)}


def _cases(sms: int) -> list[tuple[str, int, int, int]]:
    """(pattern, blocks, warps a block, width) of the set named by ``BATCH_SET`` in the environment: ``patterns`` (the
    first run: one warp a block, 4-byte loads, both patterns, every SM and one) or ``widths`` (every SM, shared rows,
    1, 4, 16 and 32 warps an SM, a broadcast word, a line or four lines a load: which of the warp, the SM, the
    line or the sector the wait grows with)."""
    if os.environ.get("BATCH_SET", "patterns") == "widths":
        return [("shared_rows", sms, w, width) for width in (0, 1, 4) for w in (1, 4, 16, 32)]
    return [(pattern, blocks, 1, 1) for pattern in ("shared_rows", "own_rows") for blocks in (sms, 1)]


def run(iters: int = 24, log=print) -> dict:
    import cupy as cp
    import numpy as np
    sms = device_sms()
    l2 = int(cp.cuda.Device().attributes["L2CacheSize"])
    flush_buf = cp.zeros(2 * l2 // 4, dtype=cp.float32)
    sink = cp.zeros(1, dtype=cp.float32)
    nmax = max(SIZES)
    cases = _cases(sms)
    slots = max(b * w for _, b, w, _ in cases)
    # one buffer for every case: iters x nmax rows of the widest pitch
    words = max(iters * nmax * slots * 128, slots * iters * nmax * OWN_PITCH) + 64
    src = cp.ones(words, dtype=cp.float32)
    out = cp.zeros(slots * 32, dtype=cp.float32)
    lat = cp.zeros(slots * iters, dtype=cp.int64)
    mods = {}
    rows = []
    for pattern, blocks, warps, width in cases:
        for mode in ("cold", "warm"):
            for n in SIZES:
                if (n, width) not in mods:
                    mods[n, width] = cp.RawModule(code=SRC, options=(f"-DN={n}", f"-DWIDTH={width}", *OPTIONS))
                fn, fl = mods[n, width].get_function("batch_wait"), mods[n, width].get_function("flush")
                line_words = 128 if width == 4 else 32      # a warp's load: four lines or one
                if pattern == "shared_rows":      # every warp of every SM its line(s) of each row
                    block_step, pitch_b = line_words, (sms if blocks == 1 else blocks) * warps * line_words
                    window_rows = WARM_WINDOW // (4 * pitch_b)
                else:                              # each warp its own rows, one line touched in each
                    block_step, pitch_b = iters * nmax * OWN_PITCH, OWN_PITCH
                    window_rows = WARM_WINDOW // (128 * blocks * warps)
                rows_mod = iters * n if mode == "cold" else max(n, window_rows)
                args = (src, np.int64(pitch_b), np.int64(block_step), np.int64(rows_mod), np.int32(iters),
                        out, lat)
                if mode == "warm":                 # the same launch once before: its lines are in the L2
                    fn((blocks,), (32 * warps,), args)
                else:                              # read 2 x L2 of other data: none of the rows is in the L2
                    fl((sms * 4,), (512,), (flush_buf, np.int64(flush_buf.size // 4), sink))
                cp.cuda.Device().synchronize()
                fn((blocks,), (32 * warps,), args)
                cp.cuda.Device().synchronize()
                raw = [int(c) for c in lat[: blocks * warps * iters].get()]
                row = {"pattern": pattern, "mode": mode, "blocks": blocks, "warps_per_block": warps,
                       "width_words": width, "n": n, "pitch_words": pitch_b, "rows_mod": rows_mod, "iters": iters,
                       "dropped_per_block": DROP, **_stats(raw, iters), "cycles": raw}
                rows.append(row)
                log(f"{pattern:11s} {mode} blocks {blocks:3d} warps {warps:2d} width {width} n {n:2d}: "
                    f"median {row['median_cycles']:.0f}, mean {row['mean_cycles']:.0f}, p10 {row['p10_cycles']}, "
                    f"p90 {row['p90_cycles']} cycles")
    return result("gemmscope.batch_latency", rows)


def main(argv: list[str] | None = None) -> int:
    return kernelbench.main("batch_latency", __doc__, run, 24, argv)


if __name__ == "__main__":
    raise SystemExit(main())
