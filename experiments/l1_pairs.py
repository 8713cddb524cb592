"""L1 microbenchmark: which lines a warp's load can look up together - the cost of a load of 2 or 4 lines ``D`` lines
apart, every load a hit.

    python -m experiments.l1_pairs [--out FILE.json] [--iters 200]

The kernel of :mod:`experiments.l1_lines` in its hit mode: ``32 / G`` rows a load (``G`` = 16: 2 rows; 8: 4 rows; 4: 8 rows),
one word a row, rows ``ROW = 32 D + 1`` words apart (``D`` lines and a word: each row's word in a bank of its own); the loop's
16 loads start one line apart (load ``s`` reads lines ``s + r D``), the same lines every iteration. One block per SM
of 8, 16 or 32 warps, ``clock64`` around the loop, the median over the blocks per warp-load.

Why (``experiments/results/h200/l1_stride-2026-12-02.json``, ``logs/kscan32-2026-12-02/``): an uncoalesced load of
8-32 lines that all hit costs the L1 3.0-4.3 cycles (8 lines) and 9.2-13.4 (32 lines) depending only on how far apart
its lines lie; no bank rule on the line address tried explains it. A load of two lines whose cost rises at some ``D``
names the address differences the tag stage cannot look up together. (A first run with the rows 32 D words apart,
every row's word in one bank, measured the data stage instead: one cycle a line at every D,
``experiments/results/h200/l1_pairs-2026-12-02.json``.) JSON, schema ``gemmscope.l1_pairs``, version 1,
raw cycles kept, with the buffer's device address (``base_address``). ``BITS=1`` in the environment measures
2-line loads ``D`` = one or two powers of two (up to 2^17) lines apart instead. Needs a GPU and CuPy.
"""
from __future__ import annotations

import os

from . import kernelbench
from .kernelbench import device_sms, result
from .l1_lines import SRC, STEPS, _row, _span

PAIRS = tuple(range(1, 129))          # D for 2 lines a load
QUADS = tuple(range(1, 65))           # D for 4 lines a load
OCTETS = tuple(range(1, 65))          # D for 8 lines a load
# With BITS=1 in the environment: 2 lines a load, D one or two powers of two up to 2^17 lines (the hash's higher bits)
BIT_PAIRS = tuple(sorted({1 << k for k in range(18)} | {(1 << j) + (1 << k) for j in range(18) for k in range(j + 1, 18)}))


def run(iters: int = 200, log=print) -> dict:
    import cupy as cp
    sms = device_sms()
    sets = ((16, BIT_PAIRS),) if os.environ.get("BITS") == "1" else ((16, PAIRS), (8, QUADS), (4, OCTETS))
    n = 32 * (STEPS + max((32 // g) * max(ds) for g, ds in sets) + 8) + 64
    src = cp.arange(n, dtype=cp.float32)
    out = cp.zeros(sms * 1024, dtype=cp.float32)
    cyc = cp.zeros(sms, dtype=cp.int64)
    rows = []
    base = int(src.data.ptr)
    for g, ds in sets:
        for dl in ds:
            row = 32 * dl + 1
            opts = (f"-DG={g}", "-DC=0", f"-DROW={row}", "-DWSTRIDE=0", "-DADV=0", "-DSTEP=32", f"-DSTEPS={STEPS}")
            lines, sectors = _span(g, 0, row)
            fn = cp.RawModule(code=SRC, options=opts).get_function("l1_lines")
            rows += _row(fn, cp, src, out, cyc, sms, iters,
                         {"mode": "hit", "pattern": f"rows{32 // g}_d{dl}", "lanes_per_row": g, "consecutive": 0,
                          "row_words": row, "lines_apart": dl, "lines": lines, "sectors": sectors,
                          "base_address": base}, log)
    return result("gemmscope.l1_pairs", rows)


def main(argv: list[str] | None = None) -> int:
    return kernelbench.main("l1_pairs", __doc__, run, 200, argv)


if __name__ == "__main__":
    raise SystemExit(main())
