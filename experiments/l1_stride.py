"""L1 microbenchmark: does an uncoalesced load's cost depend on how many 128-byte lines its rows lie apart?

    python -m experiments.l1_stride [--out FILE.json] [--iters 200]

The kernel of :mod:`experiments.l1_lines` (one block per SM of 8, 16 or 32 warps, ``STEPS`` loads a loop iteration,
``clock64`` around the loop, the median over the blocks per warp-load), with its uncoalesced A patterns - ``32 / G``
rows a load, one word a row, ``G`` = 1, 2, 4 lanes a row - at row strides ``ROW`` of 447 to 479 words (13.97 to 14.97
lines; the naive kernel's A at K = ROW) and 1031 (the stride ``model.facts.L1_TAG`` was measured at), in two modes:

* ``hit``: the same lines every iteration (16 shifted copies of the pattern), so every load hits L1 - the tag and
  data stages alone;
* ``stream``: the loads walk K as the naive kernel's do (each row's line read for 32 steps, then the next), every
  block reading the same addresses after a warm-up launch, so each SM's L1 misses each line once and fetches it
  from L2.

Why (``experiments/results/h200/logs/kscan32-2026-12-02/``): the uncoalesced naive kernel's cycles per k step at
1536x1536 vary by up to 27 % with K between 449 and 479 at the same lines, sectors and banks per load; if the ``hit``
mode shows it, the cost is in the tag stage's handling of the lines' addresses; if only ``stream`` does, in the misses.
JSON, schema ``gemmscope.l1_stride``, version 1, raw cycles kept. Needs a GPU and CuPy. For a profiler run the
environment variables ``L1_STRIDE_ROWS`` (strides, comma-separated), ``L1_STRIDE_MODES`` and ``L1_STRIDE_G`` restrict
what runs; ``L1_STRIDE_STEP`` sets the words between the hit mode's 16 loads (default: the pattern's span, 15,360).
Every row records the buffer's device address (``base_address``).
"""
from __future__ import annotations

import os

from . import kernelbench
from .kernelbench import device_sms, result
from .l1_lines import SRC, STEPS, _row, _span

ROWS = (447, 449, 450, 452, 455, 459, 463, 468, 471, 479, 1031)
LANES_PER_ROW = (1, 2, 4)        # 32, 16, 8 rows a load


def run(iters: int = 200, log=print) -> dict:
    import cupy as cp
    sms = device_sms()
    rows_run = tuple(map(int, [x for x in os.environ.get("L1_STRIDE_ROWS", "").split(",") if x])) or ROWS
    span = int(os.environ.get("L1_STRIDE_STEP", 0)) or 32 * max(ROWS) + 32
    n = 16 * span + 32 * max(rows_run) + iters * STEPS + 64
    src = cp.arange(n, dtype=cp.float32)
    out = cp.zeros(sms * 1024, dtype=cp.float32)
    cyc = cp.zeros(sms, dtype=cp.int64)
    rows = []
    only = {k: tuple(x for x in os.environ.get(f"L1_STRIDE_{k}", "").split(",") if x) for k in ("ROWS", "MODES", "G")}
    for mode in only["MODES"] or ("hit", "stream"):
        for g in tuple(map(int, only["G"])) or LANES_PER_ROW:
            for row in rows_run:
                adv, step = (0, span) if mode == "hit" else (1, 1)
                opts = (f"-DG={g}", "-DC=0", f"-DROW={row}", "-DWSTRIDE=0", f"-DADV={adv}", f"-DSTEP={step}",
                        f"-DSTEPS={STEPS}")
                lines, sectors = _span(g, 0, row)
                fn = cp.RawModule(code=SRC, options=opts).get_function("l1_lines")
                rows += _row(fn, cp, src, out, cyc, sms, iters,
                             {"mode": mode, "pattern": f"unc{32 // g}_row{row}", "lanes_per_row": g, "consecutive": 0,
                              "row_words": row, "advance_words": adv, "step_words": step, "lines": lines,
                              "sectors": sectors, "base_address": int(src.data.ptr)}, log)
    return result("gemmscope.l1_stride", rows)


def main(argv: list[str] | None = None) -> int:
    return kernelbench.main("l1_stride", __doc__, run, 200, argv)


if __name__ == "__main__":
    raise SystemExit(main())
