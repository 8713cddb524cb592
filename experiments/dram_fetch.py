"""DRAM fetch-granularity microbenchmark: when one 32-byte sector of a 128-byte line is read from DRAM into the L2,
does the L2 bring its neighbours along?

    python -m experiments.dram_fetch [--out FILE.json] [--iters 1024]

One thread chases pointers (``ld.global.cg``: L2, not L1) through ``iters`` lines in random order, one line per
4 KB page of a 1 GiB window, after the L2 was flushed (a 2 x L2 buffer read through): in each line it reads sector
0, then 1, 2, 3, each read's address taken from the one before, and stamps ``clock64`` around each read (the stamp
after a read waits for its value). The median cycles by the sector's place in its line: sector 0 always comes from
DRAM; sector 1 costs an L2 hit if the L2 fetched 64 bytes or more with sector 0, DRAM's latency if it fetched 32;
sector 2 the L2 hit only with a 128-byte fetch. Every stamp is kept. JSON, schema ``gemmscope.dram_fetch``, version
1. Needs a GPU and CuPy.

Why: a GEMM block reads BK x 4 bytes of each row of A per K tile (32 bytes at BK = 8): with a 64-byte fetch, half of
those tiles are already in L2 when the block asks for them, which sets the share of a wave's tile loads that wait
for DRAM (:func:`model.timing._wave_walks`).
"""
from __future__ import annotations

import statistics

from . import kernelbench
from .kernelbench import result

SECTORS = 4                # 32-byte sectors of a 128-byte line
SPACING = 4096             # bytes between the lines (one a page: no two lines share a DRAM page)
WINDOW = 1 << 30           # bytes the lines are spread over
SRC = r"""
extern "C" __global__ void sector_chase(const unsigned* next, unsigned start, int steps, unsigned* out,
                                        long long* lat) {
    unsigned j = start;
    for (int s = 0; s < steps; ++s) {
        long long t0 = clock64();
        j = __ldcg(next + j);
        unsigned used;
        asm volatile("add.u32 %0, %1, 1;" : "=r"(used) : "r"(j));     // waits for the load's value
        long long t1 = clock64();
        lat[s] = t1 - t0 + (used == 0u ? 1 : 0);
    }
    out[0] = j;
}
"""
FLUSH_SRC = r"""
// Reads a buffer through the L2 (ld.global.cg): with a buffer of 2 x L2, whatever the L2 held before is gone.
extern "C" __global__ void flush(const float4* buf, long long n, float* out) {
    float acc = 0.f;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        float4 v = __ldcg(buf + i);
        acc += v.x + v.y + v.z + v.w;
    }
    if (acc == 12345.f) out[0] = acc;
}
"""


def chain(n_lines: int, seed: int = 5):
    """(next array on the host, first element): ``n_lines`` lines one per page of the window in random order, each
    visited sector 0, 1, 2, 3 (uint32 offsets 0, 8, 16, 24 in the line) before the next line."""
    import numpy as np
    rng = np.random.default_rng(seed)
    pages = rng.choice(WINDOW // SPACING, size=n_lines, replace=False).astype(np.int64)
    slots = (pages[:, None] * (SPACING // 4) + np.arange(SECTORS)[None, :] * 8).ravel()
    nxt = np.zeros(WINDOW // 4, dtype=np.uint32)
    nxt[slots] = np.roll(slots, -1).astype(np.uint32)
    return nxt, int(slots[0])


def summarise(lat: list[int]) -> dict:
    """Median cycles by the sector's place in its line (the first line dropped: the chase starting)."""
    by = {p: [c for i, c in enumerate(lat) if i % SECTORS == p and i >= SECTORS] for p in range(SECTORS)}
    return {f"sector{p}_median_cycles": statistics.median(v) for p, v in by.items()}


def run(iters: int = 1024, log=print) -> dict:
    import cupy as cp
    mod = cp.RawModule(code=SRC + FLUSH_SRC)
    chase, fl = mod.get_function("sector_chase"), mod.get_function("flush")
    nxt_h, start = chain(iters)
    nxt = cp.asarray(nxt_h)
    l2 = int(cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["l2CacheSize"])
    buf = cp.ones(2 * l2 // 4, dtype=cp.float32)
    sink = cp.zeros(1, dtype=cp.float32)
    out = cp.zeros(1, dtype=cp.uint32)
    steps = iters * SECTORS
    lat = cp.zeros(steps, dtype=cp.int64)
    rows = []
    for rep in range(3):
        fl((1024,), (256,), (buf, cp.int64(buf.size // 4), sink))
        chase((1,), (1,), (nxt, cp.uint32(start), cp.int32(steps), out, lat))
        cp.cuda.runtime.deviceSynchronize()
        raw = [int(x) for x in lat.get()]
        s = summarise(raw)
        rows.append({"repeat": rep, "lines": iters, "spacing_bytes": SPACING, "window_bytes": WINDOW, **s,
                     "cycles_raw": raw})
        log(f"  repeat {rep}: " + ", ".join(f"sector {p} {s[f'sector{p}_median_cycles']:.0f}" for p in range(SECTORS))
            + " cycles (median)")
    return result("gemmscope.dram_fetch", rows)


def main(argv: list[str] | None = None) -> int:
    return kernelbench.main("dram_fetch", __doc__, run, 1024, argv)


if __name__ == "__main__":
    raise SystemExit(main())
