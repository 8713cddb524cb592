"""Code fetch under the timing protocol: what a kernel's first pass over its code costs when the launch before it was
the same kernel (a relaunch), another kernel (a small one, the L2 left alone), or the L2 flush every timed row of our
sweeps runs first (:func:`gpu.timing.time_launches`: a 2 x L2 fill), against how many SMs run the kernel.

    python -m experiments.icache_flush [--out FILE.json] [--iters 4]

The kernel of :mod:`experiments.icache_cold` (a loop of ``N`` independent FFMAs, 16 B of SASS each; thread 0 of every
block stamps ``clock64`` after each iteration) at 96 KB (fits the SM's 128 KB instruction cache) and 192 KB (does not),
on ``B`` blocks of 4 warps, one an SM (enough shared memory), ``B`` from 1 to the SM count. Per (size, B, protocol):
two warm-up launches, then five launches each preceded by the protocol's action; the first iteration minus a later
one (medians over the SMs and launches) is the cold cost of the first pass. :mod:`experiments.icache_share` found the
L2's code rate independent of ``B`` with relaunches; the sweeps' rung 11 rows (fetch14) paid 15-45 % more fetch at
1-8 blocks than at 16 and more. Writes JSON (schema ``gemmscope.icache_flush``, version 1) with every stamp. Needs a
GPU and CuPy.
"""
from __future__ import annotations

from . import kernelbench
from .icache_cold import SHARED_BYTES, SRC, first_and_steady, launches_after, protocol_action
from .icache_share import block_counts
from .kernelbench import device_sms, result

SIZES = (6144, 12288)               # FFMAs a loop: 96 KB and 192 KB of SASS
WARPS = 4
PROTOCOLS = ("relaunch", "other_kernel", "l2_flush")
LAUNCHES = 5
OTHER_SRC = r"""
extern "C" __global__ void other(float* out) { out[threadIdx.x] += 1.f; }
"""


def run(iters: int = 4, log=print) -> dict:
    import cupy as cp
    sms = device_sms()
    other = cp.RawModule(code=OTHER_SRC).get_function("other")
    scratch = cp.zeros(32, dtype=cp.float32)
    iters = max(iters, 3)
    rows = []
    for n in SIZES:
        k = cp.RawModule(code=SRC, options=(f"-DNBODY={n}",)).get_function("icache_cold")
        k.max_dynamic_shared_size_bytes = SHARED_BYTES
        for b in block_counts(sms):
            out = cp.zeros(b * 32 * WARPS, dtype=cp.float32)

            def launch(st):
                k((b,), (32 * WARPS,), (out, st, cp.float32(0.999), cp.float32(0.001), cp.int32(iters)),
                  shared_mem=SHARED_BYTES)
            for proto in PROTOCOLS:
                before = (lambda: other((1,), (32,), (scratch,))) if proto == "other_kernel" else protocol_action(proto)
                stamps = launches_after(launch, b, iters + 3, before, LAUNCHES)
                c = first_and_steady([s for raw in stamps for s in raw], iters, 2)
                rows.append({"ffma_per_iteration": n, "code_bytes": 16 * n, "warps_per_block": WARPS, "blocks": b,
                             "protocol": proto, "launches": LAUNCHES, "iterations": iters, **c, "stamps": stamps})
                log(f"  {16 * n / 1024:6.1f} KB  {b:4d} SMs  {proto:12s}: first {c['first_iteration_cycles']:8.0f}  "
                    f"steady {c['steady_iteration_cycles']:8.0f}  cold {c['cold_cycles']:8.0f} cycles")
    return result("gemmscope.icache_flush", rows)


def main(argv: list[str] | None = None) -> int:
    return kernelbench.main("icache_flush", __doc__, run, 4, argv)


if __name__ == "__main__":
    raise SystemExit(main())
