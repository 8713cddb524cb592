"""The edge of the L0 instruction cache: cycles per instruction of loops of 30-48 KB, 1 KB apart, with one warp per
scheduler and two (the kernel and the method of :mod:`experiments.icache`, whose sizes jump from 32 to 40 KB).

    python -m experiments.icache_ramp [--out FILE.json] [--iters 200]

:data:`model.facts.INSTRUCTION_FETCH` charged every loop past 32 KB the full L0-miss rate; rung 11's classic config
(a 35.3 KB loop) runs its K tiles about 0.9 us faster than that at one block an SM (``fetch19``). Writes JSON (schema
``gemmscope.icache``, version 1, as ``experiments.icache``). Needs a GPU and CuPy.
"""
from __future__ import annotations

from . import icache, kernelbench

SIZES = tuple(range(1920, 3073, 64))      # FFMAs a loop: 30-48 KB of SASS, 1 KB apart


def run(iters: int = 200, log=print) -> dict:
    return icache.run(iters, log, SIZES)


def main(argv: list[str] | None = None) -> int:
    return kernelbench.main("icache_ramp", __doc__, run, 200, argv)


if __name__ == "__main__":
    raise SystemExit(main())
