"""Two loops past the L0: does a kernel that runs two loops each larger than the 32 KB L0 instruction cache (as rung
11's steady loop and drain loop, 35 KB each) keep them in the SM's instruction cache across launches?

    python -m experiments.icache_loops [--out FILE.json] [--iters 4]

One kernel per (loop size, bytes jumped over): a never-taken branch over ``X`` KB of straight-line FFMAs, then loop A
(``iters`` iterations) and loop B (``iters`` iterations) of ``L`` KB of independent FFMAs each, thread 0 stamping
``clock64`` after every iteration of both. ``L`` = 24 KB (each fits the L0) and 35 KB (each does not, both fit the
128 KB cache together); ``X`` = 0 and 80 KB (rung 11's classic config jumps over its element path's 80 KB). One block
of 4 warps an SM on every SM; per case and protocol (relaunch, the sweeps' L2 flush): two warm-up launches, then five
timed ones. Per loop: the first iteration less a later one (medians over the SMs and launches) is its cold first
pass. :mod:`experiments.icache_jump` found a 24 KB loop behind 48-192 KB of code jumped over kept across launches;
rung 11's classic config pays a fetch on every timed launch. Writes JSON (schema ``gemmscope.icache_loops``,
version 1) with every stamp. Needs a GPU and CuPy.
"""
from __future__ import annotations

from . import kernelbench
from .icache_cold import first_and_steady, flag_kernel_stamps
from .kernelbench import device_sms, result

CASES = ((1536, 0), (2240, 0), (2240, 5120))     # (FFMAs a loop: 24 or 35 KB, FFMAs jumped over: 0 or 80 KB)
WARPS = 4
LAUNCHES = 5
PROTOCOLS = ("relaunch", "l2_flush")
_BODY = r"""
#pragma unroll
        for (int j = 0; j < NBODY / 8; ++j) {
            x0 = fmaf(x0, A_, B_); x1 = fmaf(x1, A_, B_); x2 = fmaf(x2, A_, B_); x3 = fmaf(x3, A_, B_);
            x4 = fmaf(x4, A_, B_); x5 = fmaf(x5, A_, B_); x6 = fmaf(x6, A_, B_); x7 = fmaf(x7, A_, B_);
        }
"""
SRC = r"""
extern "C" __global__ void icache_loops(float* out, long long* stamps, float a, float b, int iters, int flag) {
    extern __shared__ float pad[];
    float x0 = threadIdx.x, x1 = x0 + 1.f, x2 = x0 + 2.f, x3 = x0 + 3.f,
          x4 = x0 + 4.f, x5 = x0 + 5.f, x6 = x0 + 6.f, x7 = x0 + 7.f;
    long long* s = stamps + (long long)blockIdx.x * (2 * iters + 2);
    if (threadIdx.x == 0) { unsigned smid; asm volatile("mov.u32 %0, %%smid;" : "=r"(smid)); s[0] = smid; }
#if NSKIP > 0
    if (flag) {
#pragma unroll
        for (int j = 0; j < NSKIP / 8; ++j) {
            x0 = fmaf(x0, b, a); x1 = fmaf(x1, b, a); x2 = fmaf(x2, b, a); x3 = fmaf(x3, b, a);
            x4 = fmaf(x4, b, a); x5 = fmaf(x5, b, a); x6 = fmaf(x6, b, a); x7 = fmaf(x7, b, a);
        }
    }
#endif
    if (threadIdx.x == 0) s[1] = clock64();
    for (int it = 0; it < iters; ++it) {
""" + _BODY.replace("A_", "a").replace("B_", "b") + r"""
        __syncwarp();
        if (threadIdx.x == 0) s[2 + it] = clock64();
    }
    for (int it = 0; it < iters; ++it) {
""" + _BODY.replace("A_", "b").replace("B_", "a") + r"""
        __syncwarp();
        if (threadIdx.x == 0) s[2 + iters + it] = clock64();
    }
    if (pad[0] == 12345.f) x0 += 1.f;
    out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}
"""


def per_loop(stamps: list[list[int]], iters: int) -> dict:
    """Each loop's first iteration and its iterations from the third on (medians over the blocks, cycles)."""
    return {name: first_and_steady(stamps, iters, start) for name, start in (("a", 1), ("b", 1 + iters))}


def run(iters: int = 4, log=print) -> dict:
    import cupy as cp
    sms = device_sms()
    iters = max(iters, 3)
    rows = []
    for nbody, nskip in CASES:
        k = cp.RawModule(code=SRC, options=(f"-DNBODY={nbody}", f"-DNSKIP={nskip}")).get_function("icache_loops")
        for proto in PROTOCOLS:
            all_stamps = flag_kernel_stamps(k, sms, WARPS, iters, 2 * iters + 2, proto, LAUNCHES)
            loops = per_loop([s for launch_st in all_stamps for s in launch_st], iters)
            rows.append({"loop_ffma": nbody, "loop_bytes": 16 * nbody, "skipped_bytes": 16 * nskip, "warps_per_block": WARPS,
                         "blocks": sms, "protocol": proto, "launches": LAUNCHES, "iterations": iters, **loops,
                         "stamps": all_stamps})
            log(f"  loops of {16 * nbody / 1024:5.1f} KB, {16 * nskip / 1024:5.1f} KB jumped over, {proto:9s}: "
                + "  ".join(f"{n}: first {v['first_iteration_cycles']:7.0f} steady {v['steady_iteration_cycles']:7.0f}"
                            for n, v in loops.items()))
    return result("gemmscope.icache_loops", rows)


def main(argv: list[str] | None = None) -> int:
    return kernelbench.main("icache_loops", __doc__, run, 4, argv)


if __name__ == "__main__":
    raise SystemExit(main())
