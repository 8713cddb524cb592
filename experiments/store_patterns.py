"""Global-store microbenchmark: what one warp's store instruction costs the SM, by how many 128-byte lines and 32-byte
sectors its 32 lanes write, and whether it writes 4 or 16 bytes a lane - the C epilogue of the tiled kernels, whose
rows are written with 16-byte stores when C's rows are 16-byte aligned (N a multiple of 4) and element by element
otherwise (rungs 05-12: ``cVec``).

    python -m experiments.store_patterns [--out FILE.json] [--iters 64]

One kernel per pattern, run by one block of 8 warps on every SM and on four SMs (enough dynamic shared memory that no second block
fits): each thread writes ``TM`` rows of ``TN`` floats of a C-like buffer (rows ``ROW`` words apart), as 16-byte
stores (``TN / 4`` a row) or 4-byte ones (``TN`` a row), ``iters`` times over the same addresses (they stay in L2);
a warp's lanes sit ``G`` to a row, ``CS`` words apart. Thread 0 reads ``clock64`` before the loop and after a
``__syncthreads`` behind it; the median over the blocks divided by (iterations x stores a thread x warps) is the
SM's cycles per warp-level store (stores are posted: the SM's store path back-pressures the issue). JSON, schema
``gemmscope.store_patterns``, version 1, raw cycles kept. Needs a GPU and CuPy.

Why: at 123x397x65 (four blocks, K and N off a multiple of 4) rungs 05-10 ran 41-55 % slower than predicted
(``edge_val21``); Nsight Compute put the difference in the element-wise C stores of N's misalignment
(``experiments/results/h200/logs/misaligned-2026-12-01/``), which the timing model charges as the 16-byte ones.
"""
from __future__ import annotations

import statistics

from . import kernelbench
from .kernelbench import device_sms, result

WARPS = 8
SHARED_BYTES = 160 * 1024
# (name, VEC, G, CS, TM, TN, ROW): 16-byte (1) or 4-byte (0) stores, lanes a row, words between a row's lanes, rows and
# columns a thread writes, words between rows. rung 06's classic epilogue: 16 x 16 threads of 8 x 8, a warp two rows
# of 16 threads 8 words apart; rung 07-12's warp tiles: lanes interleaved by two (a row of 8 lanes 4 words apart).
PATTERNS = (("tile16_vec", 1, 16, 8, 8, 8, 1028), ("tile16_elem", 0, 16, 8, 8, 8, 1027),
            ("tile8_vec", 1, 8, 4, 4, 4, 1028), ("tile8_elem", 0, 8, 4, 4, 4, 1027),
            ("line_elem", 0, 32, 1, 8, 1, 1027), ("line4_vec", 1, 32, 4, 8, 4, 1028),
            ("rows32_elem", 0, 1, 0, 8, 1, 1027), ("sector_elem", 0, 8, 1, 8, 1, 1027))
SRC = r"""
extern "C" __global__ void store_patterns(float* buf, long long* cyc, int iters, int zero) {
    extern __shared__ float pad[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    // each warp its own 32 / G row groups of TM rows; each block its own rows
    float* p = buf + ((long long)blockIdx.x * (32 / G) * TM * WARPS_ + (long long)warp * (32 / G) * TM
                      + (lane / G) * TM) * ROW + (lane % G) * CS;
    float v = threadIdx.x * 0.5f;
    __syncthreads();
    long long t0 = clock64();
    for (int it = 0; it < iters; ++it) {
        float* q = p + (it & zero);
#pragma unroll
        for (int i = 0; i < TM; ++i) {
#if VEC
#pragma unroll
            for (int j = 0; j < TN; j += 4)
                *reinterpret_cast<float4*>(q + i * ROW + j) = make_float4(v, v + 1.f, v + 2.f, v + 3.f);
#else
#pragma unroll
            for (int j = 0; j < TN; ++j)
                q[i * ROW + j] = v + j;
#endif
        }
        v += 1.f;
    }
    __syncthreads();
    if (threadIdx.x == 0) cyc[blockIdx.x] = clock64() - t0;
    if (pad[0] == 12345.f) buf[0] = 1.f;
}
"""


def lanes(pattern: tuple) -> list[int]:
    """The word offsets (from the warp's first) the 32 lanes of one store instruction (i = 0, j = 0) write."""
    _, vec, g, cs, tm, tn, row = pattern
    return [(lane // g) * tm * row + (lane % g) * cs for lane in range(32)]


def span(pattern: tuple) -> tuple[int, int]:
    """(128-byte lines, 32-byte sectors) one warp-level store of ``pattern`` writes (its first, i = j = 0), assuming
    a 16-byte-aligned warp base (lines and sectors of every lane's 4 or 16 bytes)."""
    vec = pattern[1]
    nbytes = 16 if vec else 4
    lines, sectors = set(), set()
    for w in lanes(pattern):
        for b in range(4 * w, 4 * w + nbytes, 4):
            lines.add(b // 128)
            sectors.add(b // 32)
    return len(lines), len(sectors)


BLOCKS = (None, 4)
"""Blocks a launch (None: one on every SM; 4: four SMs, as a four-block GEMM launch's epilogue)."""


def run(iters: int = 64, log=print) -> dict:
    import cupy as cp
    sms = device_sms()
    rows = []
    for pat in PATTERNS:
        name, vec, g, cs, tm, tn, row = pat
        words = sms * WARPS * (32 // g) * tm * row + 64
        buf = cp.zeros(words, dtype=cp.float32)
        cyc = cp.zeros(sms, dtype=cp.int64)
        opts = (f"-DVEC={vec}", f"-DG={g}", f"-DCS={cs}", f"-DTM={tm}", f"-DTN={tn}", f"-DROW={row}",
                f"-DWARPS_={WARPS}")
        k = cp.RawModule(code=SRC, options=opts).get_function("store_patterns")
        k.max_dynamic_shared_size_bytes = SHARED_BYTES
        for nb in BLOCKS:
            blocks = nb or sms
            for _ in range(2):
                k((blocks,), (32 * WARPS,), (buf, cyc, cp.int32(iters), cp.int32(0)), shared_mem=SHARED_BYTES)
                cp.cuda.runtime.deviceSynchronize()
            raw = [int(c) for c in cyc.get()[:blocks]]
            stores = tm * (tn // 4 if vec else tn)
            per = statistics.median(raw) / (iters * stores * WARPS)
            lines, sectors = span(pat)
            rows.append({"pattern": name, "bytes_per_lane": 16 if vec else 4, "lanes_per_row": g,
                         "lane_stride_words": cs, "rows_per_thread": tm, "cols_per_thread": tn, "row_words": row,
                         "lines": lines, "sectors": sectors, "stores_per_thread": stores, "warps": WARPS,
                         "blocks": blocks, "iterations": iters, "cycles_per_warp_store": per, "cycles_raw": raw})
            log(f"  {name:12s} {16 if vec else 4:2d} B a lane, {lines:2d} lines, {sectors:3d} sectors, {blocks:3d} "
                f"blocks: {per:6.2f} cycles a warp-level store")
    return result("gemmscope.store_patterns", rows)


def main(argv: list[str] | None = None) -> int:
    return kernelbench.main("store_patterns", __doc__, run, 64, argv)


if __name__ == "__main__":
    raise SystemExit(main())
