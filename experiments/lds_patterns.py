"""Shared-load pattern microbenchmark: does the way a warp's lanes share the 16-byte words of an ``LDS.128`` change
what the load costs when 1, 2 or 4 warps per scheduler issue it among FFMAs?

    python -m experiments.lds_patterns [--out FILE.json] [--iters 400]

The loop of :mod:`experiments.overlap` (32 steps, each one ``LDS.128`` and R independent FFMAs; a load's result
consumed four steps later), with the word a lane reads given by an expression of its lane index: ``lane / 32`` (one
word, a broadcast), ``lane / 8`` and ``lane % 8`` (4 and 8 words, consecutive or strided lanes sharing one), ``lane / 4``
and ``lane % 4`` (8 and 4 words), ``lane`` (32 words). A warp-tiled GEMM's fragment loads are of these kinds: with
four lanes along N a thread's A fragment is word ``lane / 4`` and its B fragment word ``lane % 4``; with eight,
``lane / 8`` and ``lane % 8``; the kernels interleave their lanes by two, so the patterns ``tr*`` and ``tc*`` below
are theirs. Run by one block per SM of 4, 8 or 16 warps; clock64 cycles per iteration, the median over the blocks.
JSON, schema ``gemmscope.lds_patterns``, version 1, raw cycles kept. Needs a GPU and CuPy.

What the H200 showed (``experiments/results/h200/lds_patterns-2026-12-01.json``, 2026-12-01; 16 warps, one FFMA per
load, where the pipe binds): a load whose lanes share words in runs of consecutive lanes (``lane / 32``, ``/ 8``,
``/ 4``, ``lane % 2``, the B fragments ``tc4``, ``tc8``) holds the pipe 2.26 cycles, ``lane / 2`` and ``tc16`` 2.30,
the A fragments ``tr4`` and ``tr8`` 2.61, and lanes sharing words at a stride (``lane % 4``, ``lane % 8``) 4.05 - as
long as 32 distinct words, though they read 64-128 bytes. That is the access simulator's quad rule
(:mod:`model.simulate`: 4 wavefronts for ``4*(t%4)``, 2 for ``4*(t//2)``), here timed. The kernels' fragment loads
are two wavefronts each by that rule (and by Nsight Compute), which the model charges two cycles; they take 2.26 (B)
and 2.61 (A): not used by the model yet.
"""
from __future__ import annotations

from . import kernelbench
from .kernelbench import result
from .overlap import SRC as _OVERLAP_SRC, STEPS, loop_rows

PATTERNS = {"lane/32": "lane / 32", "lane/8": "lane / 8", "lane%8": "lane % 8", "lane/4": "lane / 4",
            "lane%4": "lane % 4", "lane": "lane", "lane/2": "lane / 2", "lane%2": "lane % 2",
            # the warp-tiled kernels' fragment loads (rungs 07-12, lanes interleaved by 2): A word tr, B word tc
            # for LC = WSUBN / TN lane columns of 4, 8 and 16
            "tr4": "(lane / 8) * 2 + (lane & 1)", "tc4": "(lane / 2) % 4",
            "tr8": "(lane / 16) * 2 + (lane & 1)", "tc8": "(lane / 2) % 8",
            "tr16": "lane & 1", "tc16": "(lane / 2) % 16"}
RATIOS = (1, 4, 16)
WARPS = (4, 8, 16)
SRC = _OVERLAP_SRC.replace("const int word = lane / GROUP;", "const int word = WORD_EXPR;")


def run(iters: int = 400, log=print) -> dict:
    if "WORD_EXPR" not in SRC:
        raise RuntimeError("the overlap kernel changed: its word expression is not where this benchmark expects it")
    rows = []
    for name, expr in PATTERNS.items():
        for ratio in RATIOS:
            rows += loop_rows(SRC, (f"-DRATIO={ratio}", f"-DWORD_EXPR=({expr})", f"-DSTEPS={STEPS}", "-DGROUP=1"),
                              iters, {"pattern": name, "ffma_per_load": ratio}, f"{name:8s} R={ratio:2d}", log, WARPS)
    return result("gemmscope.lds_patterns", rows)


def main(argv: list[str] | None = None) -> int:
    return kernelbench.main("lds_patterns", __doc__, run, 400, argv)


if __name__ == "__main__":
    raise SystemExit(main())
