"""Code fetch shared between SMs: how fast an SM streams code that is beyond its instruction cache from L2, against
how many SMs stream code at the same time.

    python -m experiments.icache_share [--out FILE.json] [--iters 6]

The kernel of :mod:`experiments.icache_cold` (a loop of ``N`` independent FFMAs, 16 B of SASS each, thread 0 of
every block stamping ``clock64`` after each iteration), at loop sizes of 64 KB (fits the SM's 128 KB instruction
cache: the control), 192 KB and 256 KB (beyond it: every iteration streams the loop from L2), launched on ``B``
blocks of 4 warps (one a scheduler) with enough shared memory that one block fits per SM, for ``B`` from 1 to the
SM count (then every SM runs one block; ``B`` SMs fetch together). Each launch runs twice; the second is kept
(the first also stored). A later iteration's cycles give the rate: code bytes / steady-iteration cycles, per
scheduler. :data:`model.facts.CODE_CACHE`'s rate was measured with every SM fetching; a rate that grows as fewer
SMs fetch says the fetch is shared (by the L2, the crossbar or a cache of the GPC). Writes JSON (schema
``gemmscope.icache_share``, version 1) with every stamp (SM id, global timer, clocks). Needs a GPU and CuPy.
"""
from __future__ import annotations

from . import kernelbench
from .icache_cold import SHARED_BYTES, SRC, summarise
from .kernelbench import device_sms, result

SIZES = (4096, 12288, 16384)          # FFMAs a loop: 64, 192 and 256 KB of SASS
WARPS = 4


def block_counts(sms: int) -> list[int]:
    """1, 2, 4, ... and the fractions 1/4, 1/2, 3/4 and all of the SMs, sorted, each once."""
    out = {b for b in (1, 2, 4, 8, 16, 32) if b <= sms} | {max(1, sms * q // 4) for q in (1, 2, 3, 4)}
    return sorted(out)


def run(iters: int = 6, log=print) -> dict:
    import cupy as cp
    sms = device_sms()
    rows = []
    for n in SIZES:
        k = cp.RawModule(code=SRC, options=(f"-DNBODY={n}",)).get_function("icache_cold")
        k.max_dynamic_shared_size_bytes = SHARED_BYTES
        for b in block_counts(sms):
            out = cp.zeros(b * 32 * WARPS, dtype=cp.float32)
            for launch in (1, 2):
                st = cp.zeros(b * (iters + 3), dtype=cp.int64)
                k((b,), (32 * WARPS,), (out, st, cp.float32(0.999), cp.float32(0.001), cp.int32(iters)),
                  shared_mem=SHARED_BYTES)
                cp.cuda.runtime.deviceSynchronize()
                raw = st.get().reshape(b, iters + 3).tolist()
                summ = summarise(raw, iters)["block0"]
                rate = 16 * n / summ["steady_iteration_cycles"]
                rows.append({"ffma_per_iteration": n, "code_bytes": 16 * n, "warps_per_block": WARPS, "blocks": b,
                             "launch": launch, "iterations": iters, "block0": summ,
                             "bytes_per_cycle_per_scheduler": rate, "stamps": raw})
                log(f"  {16 * n / 1024:6.1f} KB  {b:4d} SMs  launch {launch}: steady {summ['steady_iteration_cycles']:8.0f}"
                    f" cycles, {rate:5.2f} B a cycle a scheduler; first-pass cold {summ['cold_cycles']:8.0f}")
    return result("gemmscope.icache_share", rows)


def main(argv: list[str] | None = None) -> int:
    return kernelbench.main("icache_share", __doc__, run, 6, argv)


if __name__ == "__main__":
    raise SystemExit(main())
