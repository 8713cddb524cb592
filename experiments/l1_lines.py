"""L1 global-load microbenchmark: what one warp's global load costs the SM's L1 when it hits and when it streams, as a
function of how many 128-byte lines, 32-byte sectors and banks its 32 lanes touch.

    python -m experiments.l1_lines [--out FILE.json] [--iters 200]

One kernel per pattern: a loop whose body is ``STEPS`` loads (``LDG``, read-only, as the naive kernel's
``const __restrict__`` loads), each added into one of eight accumulators (one ``FADD`` a load, so the schedulers
issue half as often as the loads arrive). The word a lane reads is ``(lane / G) * ROW + (lane % G) * C``: ``32 / G``
rows of ``ROW`` words, ``G`` lanes a row, reading one word (``C = 0``, a broadcast) or ``G`` consecutive words
(``C = 1``). ``ROW = 33`` puts every row in its own bank (the naive kernel's A at an odd K), ``ROW = 32`` every row in
the same bank (at K a multiple of 32: the data stage serves one row a wavefront). The naive kernel's loads are of
these kinds: the coalesced 32-wide block's A is ``G = 32, C = 0`` (one sector) and its B ``G = 32, C = 1`` (one
line), the 16-wide block's A ``G = 16, C = 0`` (two lines), the uncoalesced kernel's A ``G = 1`` (32 lines). Every
load hits in L1: the loop reads the same 16 shifted copies of its pattern (70 KB) over and over, after a warm-up launch; the loop's
address is offset by ``it & zero`` (``zero = 0``, a kernel argument), so the compiler cannot hoist the loads.
A second set of kernels streams (``STREAMS``): the same loads walking K as the naive kernel's do (A: one word a
step, each row's line read for 32 steps; B: a new row of B, so a new line, every step), so that each SM's L1 misses
a line the first time its block walks into it and fetches it from L2. Run by one block per SM of 8, 16 or 32 warps; thread 0 reads ``clock64`` around the loop, the median over the
blocks divided by (iterations x steps x warps) is the SM's cycles per warp-load. JSON, schema
``gemmscope.l1_lines``, version 1, raw cycles kept. Needs a GPU and CuPy.
"""
from __future__ import annotations

import statistics

from . import kernelbench
from .kernelbench import device_sms, result

STEPS = 16
WARPS = (8, 16, 32)
# (name, G, C, ROW): lanes per row, words a row's lanes read apart (0: one word), row stride in words
PATTERNS = (("bcast", 32, 0, 33), ("line", 32, 1, 33), ("half", 16, 1, 0), ("sector", 8, 1, 0),
            ("rows2", 16, 0, 33), ("rows4", 8, 0, 33), ("rows8", 4, 0, 33), ("rows16", 2, 0, 33),
            ("rows32", 1, 0, 33),
            ("rows2_bank", 16, 0, 32), ("rows4_bank", 8, 0, 32), ("rows8_bank", 4, 0, 32),
            ("rows16_bank", 2, 0, 32), ("rows32_bank", 1, 0, 32))
# Streaming: the naive kernel's own loads, walking K (A: ADV = 1 word a step, each row's line read for 32 steps)
# or B's rows (ADV = N words: a new line every step), at K = N = 1031 (rows in distinct banks) or 1024 (one
# bank). (name, G, C, ROW, WSTRIDE, ADV): WSTRIDE is the words between the warps' addresses (0: every warp of the
# block reads what the others read). Every block reads the same addresses: after the warm-up launch they come
# from L2, and each SM's L1 misses every line the first time its block walks into it, as in the naive kernel. The B
# streams (a new line every step, read by every SM at once) wait on that line's latency rather than on the L1 (the same
# cycles per step at 16 and 32 warps); model.facts.L1_TAG uses the A streams.
STREAMS = (("A_coal32", 32, 0, 0, 1031, 1), ("B_coal32", 32, 1, 0, 0, 1031),
           ("A_coal16", 16, 0, 1031, 2 * 1031, 1), ("B_coal16", 16, 1, 0, 0, 1031),
           ("A_coal8", 8, 0, 1031, 4 * 1031, 1), ("B_coal8", 8, 1, 0, 0, 1031),
           ("A_unc32", 1, 0, 1031, 0, 1), ("B_unc32", 32, 0, 0, 1, 1031),
           ("A_unc16", 2, 0, 1031, 0, 1), ("A_unc8", 4, 0, 1031, 0, 1),
           ("A_coal32_k1024", 32, 0, 0, 1024, 1), ("A_coal16_k1024", 16, 0, 1024, 2 * 1024, 1),
           ("A_unc32_k1024", 1, 0, 1024, 0, 1), ("B_coal32_n1024", 32, 1, 0, 0, 1024))
SPAN = 32 * 33 + 32          # words one pattern covers at most
SRC = r"""
#define LD(acc, off) acc += q[off];
extern "C" __global__ void l1_lines(const float* __restrict__ src, float* out, long long* cycles, int iters, int zero) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const float* __restrict__ p = src + (lane / G) * ROW + (lane % G) * C + warp * WSTRIDE;
    float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f, a4 = 0.f, a5 = 0.f, a6 = 0.f, a7 = 0.f;
    __syncthreads();
    long long t0 = clock64();
    for (int it = 0; it < iters; ++it) {
        // zero = 0, unknown to the compiler: nothing is hoisted (ADV = 0: the same lines every iteration)
        const float* __restrict__ q = p + (it & zero) + (long long)it * (STEPS * ADV);
#pragma unroll
        for (int s = 0; s < STEPS; s += 8) {
            LD(a0, (s + 0) * STEP) LD(a1, (s + 1) * STEP) LD(a2, (s + 2) * STEP) LD(a3, (s + 3) * STEP)
            LD(a4, (s + 4) * STEP) LD(a5, (s + 5) * STEP) LD(a6, (s + 6) * STEP) LD(a7, (s + 7) * STEP)
        }
    }
    long long t1 = clock64();
    if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
    out[blockIdx.x * blockDim.x + threadIdx.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
"""


def _row(k, cp, src, out, cyc, sms, iters, fields, log) -> list[dict]:
    rows = []
    for w in WARPS:
        for _ in range(2):            # the first launch warms the caches up
            k((sms,), (32 * w,), (src, out, cyc, cp.int32(iters), cp.int32(0)))
            cp.cuda.runtime.deviceSynchronize()
        raw = [int(x) for x in cyc.get()]
        per = statistics.median(raw) / (iters * STEPS * w)
        rows.append({**fields, "warps_per_block": w, "steps": STEPS, "iterations": iters, "cycles_per_load": per,
                     "cycles_raw": raw})
        log(f"  {fields['pattern']:15s} {fields['lines']:2d} lines {fields['sectors']:2d} sectors {w:2d} warps: "
            f"{per:6.2f} cycles per warp-load")
    return rows


def _span(g: int, c: int, row: int) -> tuple[int, int]:
    words = [(lane // g) * row + (lane % g) * c for lane in range(32)]
    return len({x // 32 for x in words}), len({x // 8 for x in words})


def run(iters: int = 200, log=print) -> dict:
    import cupy as cp
    sms = device_sms()
    n = max(STEPS * SPAN, 32 * 1031 + 32 * 4 * 1031 + iters * STEPS * 1031) + 64
    src = cp.arange(n, dtype=cp.float32)
    out = cp.zeros(sms * 1024, dtype=cp.float32)
    cyc = cp.zeros(sms, dtype=cp.int64)
    rows = []
    for name, g, c, row in PATTERNS:
        opts = (f"-DG={g}", f"-DC={c}", f"-DROW={row}", "-DWSTRIDE=0", "-DADV=0", f"-DSTEP={SPAN}", f"-DSTEPS={STEPS}")
        lines, sectors = _span(g, c, row)
        rows += _row(cp.RawModule(code=SRC, options=opts).get_function("l1_lines"), cp, src, out, cyc, sms, iters,
                     {"mode": "hit", "pattern": name, "lanes_per_row": g, "consecutive": c, "row_words": row,
                      "lines": lines, "sectors": sectors}, log)
    for name, g, c, row, ws, adv in STREAMS:
        opts = (f"-DG={g}", f"-DC={c}", f"-DROW={row}", f"-DWSTRIDE={ws}", f"-DADV={adv}", f"-DSTEP={adv}",
                f"-DSTEPS={STEPS}")
        lines, sectors = _span(g, c, row)
        rows += _row(cp.RawModule(code=SRC, options=opts).get_function("l1_lines"), cp, src, out, cyc, sms, iters,
                     {"mode": "stream", "pattern": name, "lanes_per_row": g, "consecutive": c, "row_words": row,
                      "warp_stride_words": ws, "advance_words": adv, "lines": lines, "sectors": sectors}, log)
    return result("gemmscope.l1_lines", rows)


def main(argv: list[str] | None = None) -> int:
    return kernelbench.main("l1_lines", __doc__, run, 200, argv)


if __name__ == "__main__":
    raise SystemExit(main())
