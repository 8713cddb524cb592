"""Latency microbenchmark: how long one warp waits for a batch of ``n`` independent global loads in flight together,
each in a row of its own, when every line comes from DRAM (cold) or from the L2 (warm).

    python -m experiments.batch_latency [--out FILE.json] [--iters 24]

In each of ``iters`` batches a warp issues ``n`` independent loads, one row each (rows ``PITCH`` words apart, at
immediate offsets from one address: the SASS has the ``n`` LDGs back to back), sums them and stamps ``clock64``
before the first load and after the sum (the next batch's address depends on the sum, so no load moves across a
stamp). Loads: a broadcast word (every lane the same), one 128-byte line (4 bytes a lane) or four lines (LDG.128);
``ld.global.nc`` (``LDG.E.CONSTANT``, the naive kernel's load) or ``ld.global.cg`` (the L2 only). Patterns:
``shared_rows``, warp ``s`` of the launch reads line ``s`` of each row, rows one matrix row apart (the naive kernel's
B at a skinny M: every block reads the same row of B at once); ``own_rows``, each warp its own rows 16 KiB apart.
Cold: the L2 flushed first (a 2 x L2 buffer read through) and no line read twice; warm: the same launch again over a
4 MiB window of rows (L2 hits; ``cg`` loads, which the L1 does not keep). One warp an SM on every SM, on one SM, and
4-32 warps an SM (:func:`cases`). Every batch's cycles are kept (the first two of each warp dropped from the
statistics). JSON, schema ``gemmscope.batch_latency``, version 1. Needs a GPU and CuPy.

Why (issue 8, ``logs/batchlat-2026-12-02/``): the timing model's warp trace gives each load the same latency, so a
warp waiting for ``n`` loads waits one latency plus their issue. The naive kernel at a skinny M, a warp alone on its
SM waiting three times per 16 k steps for 10-13 loads, runs 20-35 % slower than that predicts on every such row
shipped. The first run of this file (``batch_latency-2026-12-02.json``, ``.ld.global.nc`` at 4 bytes a lane, address
arithmetic between the loads) had the wait grow by about 21 cycles a load from the L2 and 33 from DRAM, on one SM
as on all 132.
"""
from __future__ import annotations

import os
import statistics

from . import kernelbench
from .kernelbench import device_sms, result

SIZES = (1, 2, 3, 4, 5, 6, 8, 10, 12, 14)
DROP = 2                     # batches dropped from each block's statistics (instruction cache, TLB warm-up)
OWN_PITCH = 4096             # words between the rows of the own_rows pattern (16 KiB)
PITCHES = (32, 64, 128, 256, 512, 1024, 2048, 4096)   # own_rows_P: words between a warp's rows (BATCH_SET=pitches)
WARM_WINDOW = 4 << 20        # bytes of rows the warm runs cycle through (stays in the L2)
OPTIONS = ("-Xptxas=-O1",)   # ptxas at -O3 moves adds that wait for the first loads between the later loads of a batch
IMMEDIATE_LIMIT = 1 << 23    # bytes: a load's immediate offset (24-bit signed) reaches the batch's last row
SRC = r"""
#ifndef WIDTH
#define WIDTH 1                              // words a lane loads: 1 (LDG.32) or 4 (LDG.128); 0: every lane one word
#endif
#ifndef CACHE
#define CACHE nc                             // nc: LDG.E.CONSTANT (the naive kernel's load); cg: the L2 only
#endif
#define STR2(x) #x
#define STR(x) STR2(x)
// load rows 0 .. J-1 of a batch, in order, row j at the immediate offset j x PITCH words from q
template <int J> struct Rows {
    static __device__ __forceinline__ void load(const float* q, float (*v)[4]) {
        Rows<J - 1>::load(q, v);
#if WIDTH == 4
        asm volatile("ld.global." STR(CACHE) ".v4.f32 {%0, %1, %2, %3}, [%4+%5];"
                     : "=f"(v[J - 1][0]), "=f"(v[J - 1][1]), "=f"(v[J - 1][2]), "=f"(v[J - 1][3])
                     : "l"(q), "n"((J - 1) * PITCH * 4));
#else
        asm volatile("ld.global." STR(CACHE) ".f32 %0, [%1+%2];" : "=f"(v[J - 1][0]) : "l"(q), "n"((J - 1) * PITCH * 4));
#endif
    }
};
template <> struct Rows<0> {
    static __device__ __forceinline__ void load(const float*, float (*)[4]) {}
};
extern "C" __global__ void batch_wait(const float* __restrict__ src, long long block_step, long long rows_mod,
                                      int iters, float* out, long long* lat) {
    // the n rows of a batch are PITCH words apart: one base address a batch, the rows at immediate offsets, so no
    // address arithmetic sits between the loads
    const int lane = threadIdx.x & 31;
    const long long slot = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);   // the warp's place
    const float* p = src + slot * block_step + (WIDTH == 0 ? 0 : lane * WIDTH);
    float acc = 0.f;
    int dep = 0;
    for (int it = 0; it < iters; ++it) {
        const float* q = p + dep + ((long long)it * N) % rows_mod * PITCH;
        long long t0 = clock64();
        float v[N][4];
        Rows<N>::load(q, v);
        float s = 0.f;
#pragma unroll
        for (int j = 0; j < N; ++j) s += WIDTH == 4 ? (v[j][0] + v[j][1]) + (v[j][2] + v[j][3]) : v[j][0];
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
MODES = (("cold", "nc"), ("cold", "cg"), ("warm", "cg"))
"""(rows, load) of every case: cold rows (the L2 flushed, no line read twice) through the naive kernel's load and
through ``ld.global.cg``; warm rows (in the L2) through ``ld.global.cg`` (an ``nc`` load would hit the L1 once the
window wraps)."""


def _stats(cycles: list[int], iters: int) -> dict:
    kept = [c for i, c in enumerate(cycles) if i % iters >= DROP]
    kept.sort()
    return {"median_cycles": statistics.median(kept), "mean_cycles": statistics.fmean(kept),
            "p10_cycles": kept[len(kept) // 10], "p90_cycles": kept[(9 * len(kept)) // 10], "samples": len(kept)}


def cases(sms: int) -> list[tuple[str, int, int, int]]:
    """(pattern, blocks, warps a block, width in words a lane: 0 a broadcast word) of every measured case: one warp an
    SM at the three widths, on one SM, in the own-rows pattern; 4-32 warps an SM (whether the wait grows with the
    warp's loads or the SM's). With ``BATCH_SET=pitches`` in the environment instead: one warp an SM on every SM, its
    own rows ``P`` words apart (pattern ``own_rows_P``, P = 32 ... 4096: consecutive lines up to 16 KiB apart),
    whether the spread of DRAM's latency depends on how far apart the lines of a batch lie."""
    if os.environ.get("BATCH_SET") == "pitches":
        return [(f"own_rows_{p}", sms, 1, 1) for p in PITCHES]
    return ([("shared_rows", sms, 1, w) for w in (0, 1, 4)] + [("shared_rows", 1, 1, 1), ("own_rows", sms, 1, 1)]
            + [("shared_rows", sms, w, 1) for w in (4, 16, 32)] + [("shared_rows", sms, 4, 4)])


def geometry(pattern: str, blocks: int, warps: int, width: int, sms: int, iters: int) -> tuple[int, int, int]:
    """(pitch in words, words from one warp's first line to the next warp's, rows a warm window holds)."""
    line_words = 128 if width == 4 else 32      # a warp's load: four lines or one
    if pattern == "shared_rows":                 # every warp of every SM its line(s) of each row
        pitch = max(blocks, sms) * warps * line_words
        return pitch, line_words, WARM_WINDOW // (4 * pitch)
    pitch = int(pattern.rsplit("_", 1)[1]) if pattern.startswith("own_rows_") else OWN_PITCH
    return pitch, iters * max(SIZES) * max(pitch, line_words), WARM_WINDOW // (4 * line_words * blocks * warps)


ISSUE_CYCLES = 4.0           # cycles between the batch's loads: their control codes' stall count (the SASS test checks it)


def _kept(row: dict):
    """A row's batch cycles less the first ``dropped_per_block`` batches of each warp (numpy, flat)."""
    import numpy as np
    return np.asarray(row["cycles"], dtype=np.float64).reshape(-1, row["iters"])[:, row["dropped_per_block"]:].ravel()


def _one_warp_rows(res: dict, mode: str, load: str) -> list[dict]:
    """The rows of one warp an SM on every SM with 4-byte loads in the two main patterns, of this mode and load."""
    sms = max(r["blocks"] for r in res["rows"])
    return [r for r in res["rows"] if r["blocks"] == sms and r["warps_per_block"] == 1 and r["width_words"] == 1
            and r["pattern"] in ("shared_rows", "own_rows") and r["mode"] == mode and r["load"] == load]


def timing_fields(res: dict) -> dict[str, float]:
    """The ``[timing]`` fields this run measures (the spec's ``l2_latency_spread_cycles``,
    ``dram_latency_spread_cycles``, ``batch_wait_per_load_cycles``), from its one-warp-an-SM rows on every SM with
    4-byte loads: the standard deviation of one load's latency (batches of one; L2: warm ``cg`` rows, DRAM: cold
    ``nc`` rows, both patterns pooled), and the cycles each further load adds beyond its issue and the slowest of the
    loads' latencies (:func:`model.timing.slowest_load_wait` with the L2 spread), fitted by least squares on the
    warm rows (the cold rows are the check: ``check_fields``)."""
    import numpy as np
    from model.timing import slowest_load_wait
    warm, cold = _one_warp_rows(res, "warm", "cg"), _one_warp_rows(res, "cold", "nc")
    sd2 = float(np.mean([_kept(r).std() for r in warm if r["n"] == 1]))
    sdd = float(np.mean([_kept(r).std() for r in cold if r["n"] == 1]))
    mu2 = float(np.mean([_kept(r).mean() for r in warm if r["n"] == 1]))
    x, y = [], []
    for r in warm:
        n = r["n"]
        x.append(n - 1.0)
        y.append(_kept(r).mean() - ISSUE_CYCLES * (n - 1) - float(slowest_load_wait(mu2, mu2, sd2, sd2, n, 0.0)))
    x, y = np.asarray(x), np.asarray(y)
    out = {"l2_latency_spread_cycles": sd2, "dram_latency_spread_cycles": sdd,
           "batch_wait_per_load_cycles": float(x @ y / (x @ x))}
    page = page_fit(res, out)
    if page is not None:
        out["dram_page_bytes"] = float(page[0])
    return out


PAGE_CANDIDATES = (256, 512, 1024, 2048, 4096)   # bytes


def page_fit(res: dict, fields: dict[str, float]) -> tuple[int, dict[int, float]] | None:
    """The DRAM segment (of :data:`PAGE_CANDIDATES`) whose lines a warp gets together: the one whose model - the
    slowest of as many independent DRAM latencies (``fields``' spread) as the segments a batch's lines fall in, plus
    the further loads' issue and per-load cycles - is closest (MAPE) to the cold ``own_rows_P`` batches (every SM, one
    warp each; rows ``P`` words apart from an aligned start); with the MAPE of each candidate. None without them."""
    import numpy as np
    from model.timing import slowest_load_wait
    cold = [r for r in res["rows"] if r["pattern"].startswith("own_rows_") and r["mode"] == "cold"
            and r["warps_per_block"] == 1 and r["width_words"] == 1]
    if not cold:
        return None
    mean = {}
    for r in cold:
        mean.setdefault((r["pitch_words"], r["n"]), []).append(_kept(r).mean())
    mu = float(np.mean([np.mean(v) for (p, n), v in mean.items() if n == 1]))
    sd, c = fields["dram_latency_spread_cycles"], fields["batch_wait_per_load_cycles"]
    score = {}
    for S in PAGE_CANDIDATES:
        err = []
        for (p, n), v in mean.items():
            segs = len({(j * p * 4) // S for j in range(n)})
            model = float(slowest_load_wait(mu, mu, sd, sd, segs, 0.0)) + (ISSUE_CYCLES + c) * (n - 1)
            err.append(abs(model / float(np.mean(v)) - 1))
        score[S] = float(np.mean(err))
    return min(score, key=score.get), score


def check_fields(res: dict, fields: dict[str, float]) -> list[tuple[int, float, float]]:
    """(n, measured mean wait, model) of the cold one-warp rows (DRAM; not fitted): the model's wait for ``n`` loads
    from DRAM, the single-load mean plus the issue of the further loads, the spread's slowest and the per-load
    cycles."""
    import numpy as np
    from model.timing import slowest_load_wait
    cold = _one_warp_rows(res, "cold", "nc")

    def mean(n):
        return float(np.mean([_kept(r).mean() for r in cold if r["n"] == n]))
    mu = mean(1)
    sd = fields["dram_latency_spread_cycles"]
    return [(n, mean(n), float(slowest_load_wait(mu, mu, sd, sd, n, 0.0)) + (ISSUE_CYCLES
             + fields["batch_wait_per_load_cycles"]) * (n - 1)) for n in sorted({r["n"] for r in cold})]


FIELD_CASES = (("shared_rows", 0, 1, 1), ("own_rows", 0, 1, 1)) + tuple((f"own_rows_{p}", 0, 1, 1) for p in PITCHES)
"""The cases :func:`timing_fields` reads (blocks 0: every SM): what ``experiments/microbench.py`` runs."""


def run(iters: int = 24, log=print, only: tuple | None = None) -> dict:
    import cupy as cp
    import numpy as np
    sms = device_sms()
    l2 = int(cp.cuda.Device().attributes["L2CacheSize"])
    flush_buf = cp.zeros(2 * l2 // 4, dtype=cp.float32)
    sink = cp.zeros(1, dtype=cp.float32)
    todo = cases(sms) if only is None else [(p, b or sms, w, wd) for p, b, w, wd in only]
    shapes = {c: geometry(*c, sms, iters) for c in todo}          # (pitch, block step, warm window rows)
    words = max(g[1] * c[1] * c[2] + iters * max(SIZES) * g[0] for c, g in shapes.items()) + 256
    src = cp.ones(words, dtype=cp.float32)
    slots = max(b * w for _, b, w, _ in todo)
    out = cp.zeros(slots * 32, dtype=cp.float32)
    lat = cp.zeros(slots * iters, dtype=cp.int64)
    rows = []
    for pattern, blocks, warps, width in todo:
        pitch, block_step, window_rows = shapes[pattern, blocks, warps, width]
        for mode, cache in MODES:
            for n in SIZES:
                if (n - 1) * pitch * 4 >= IMMEDIATE_LIMIT:
                    continue
                mod = cp.RawModule(code=SRC, options=(f"-DN={n}", f"-DWIDTH={width}", f"-DPITCH={pitch}",
                                                      f"-DCACHE={cache}", *OPTIONS))
                fn, fl = mod.get_function("batch_wait"), mod.get_function("flush")
                rows_mod = iters * n if mode == "cold" else max(n, window_rows // n * n)
                args = (src, np.int64(block_step), np.int64(rows_mod), np.int32(iters), out, lat)
                if mode == "warm":                 # the same launch once before: its lines are in the L2
                    fn((blocks,), (32 * warps,), args)
                else:                              # read 2 x L2 of other data: none of the rows is in the L2
                    fl((sms * 4,), (512,), (flush_buf, np.int64(flush_buf.size // 4), sink))
                cp.cuda.Device().synchronize()
                fn((blocks,), (32 * warps,), args)
                cp.cuda.Device().synchronize()
                raw = [int(c) for c in lat[: blocks * warps * iters].get()]
                row = {"pattern": pattern, "mode": mode, "load": cache, "blocks": blocks, "warps_per_block": warps,
                       "width_words": width, "n": n, "pitch_words": pitch, "rows_mod": rows_mod, "iters": iters,
                       "dropped_per_block": DROP, **_stats(raw, iters), "cycles": raw}
                rows.append(row)
                log(f"{pattern:11s} {mode} {cache} blocks {blocks:3d} warps {warps:2d} width {width} n {n:2d}: "
                    f"median {row['median_cycles']:.0f}, mean {row['mean_cycles']:.0f}, p10 {row['p10_cycles']}, "
                    f"p90 {row['p90_cycles']} cycles")
    res = result("gemmscope.batch_latency", rows)
    fields = timing_fields(res)
    log("[timing] fields: " + ", ".join(f"{k} = {v:.4g}" for k, v in fields.items()))
    log("DRAM check (n: measured / model cycles): " + ", ".join(f"{n}: {m:.0f} / {p:.0f}"
                                                               for n, m, p in check_fields(res, fields)))
    return res


def main(argv: list[str] | None = None) -> int:
    return kernelbench.main("batch_latency", __doc__, run, 24, argv)


if __name__ == "__main__":
    raise SystemExit(main())
