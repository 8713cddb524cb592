"""Code the blocks jump over: does a kernel keep the code it runs in the SM's instruction cache across launches when
its whole SASS does not fit, because of code no block runs?

    python -m experiments.icache_jump [--out FILE.json] [--iters 6]

One kernel per size ``X`` of a never-taken branch (``if (flag)``, flag = 0 at run time): ``X`` KB of straight-line
FFMAs the blocks jump over, laid out before a loop of 24 KB of independent FFMAs (it fits the 32 KB L0) that every
block runs ``iters`` times, thread 0 stamping ``clock64`` after each iteration. ``X`` = 0, 48, 96, 112, 144, 192 KB: the whole
SASS from 25 KB (fits the SM's 128 KB cache) to 217 KB (does not). One block of 4 warps an SM on every SM; per
(X, protocol): two warm-up launches, then five launches each after a relaunch or after the sweeps' L2 flush; the
first iteration minus a later one (medians over the SMs and launches) is the loop's cold first pass. Rung 11's
classic config (194 KB of SASS, its blocks run 84 KB) pays a fetch on every timed launch, a kernel whose SASS fits
the cache does not (`experiments/icache_flush.py`): this asks whether the code jumped over is why. Writes JSON
(schema ``gemmscope.icache_jump``, version 1) with every stamp. Needs a GPU and CuPy.
"""
from __future__ import annotations

from . import kernelbench
from .icache_cold import first_and_steady, flag_kernel_stamps
from .kernelbench import device_sms, result

SKIPS = (0, 3072, 6144, 7168, 9216, 12288)   # FFMAs jumped over: 0, 48, 96, 112, 144 and 192 KB of SASS
BODY = 1536                         # FFMAs in the loop: 24 KB
WARPS = 4
LAUNCHES = 5
PROTOCOLS = ("relaunch", "l2_flush")
SRC = r"""
extern "C" __global__ void icache_jump(float* out, long long* stamps, float a, float b, int iters, int flag) {
    extern __shared__ float pad[];
    float x0 = threadIdx.x, x1 = x0 + 1.f, x2 = x0 + 2.f, x3 = x0 + 3.f,
          x4 = x0 + 4.f, x5 = x0 + 5.f, x6 = x0 + 6.f, x7 = x0 + 7.f;
    long long* s = stamps + (long long)blockIdx.x * (iters + 3);
    if (threadIdx.x == 0) {
        unsigned smid; unsigned long long g;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g));
        s[0] = smid; s[1] = (long long)g;
    }
#if NSKIP > 0
    if (flag) {
#pragma unroll
        for (int j = 0; j < NSKIP / 8; ++j) {
            x0 = fmaf(x0, b, a); x1 = fmaf(x1, b, a); x2 = fmaf(x2, b, a); x3 = fmaf(x3, b, a);
            x4 = fmaf(x4, b, a); x5 = fmaf(x5, b, a); x6 = fmaf(x6, b, a); x7 = fmaf(x7, b, a);
        }
    }
#endif
    long long t = clock64();
    if (threadIdx.x == 0) s[2] = t;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int j = 0; j < NBODY / 8; ++j) {
            x0 = fmaf(x0, a, b); x1 = fmaf(x1, a, b); x2 = fmaf(x2, a, b); x3 = fmaf(x3, a, b);
            x4 = fmaf(x4, a, b); x5 = fmaf(x5, a, b); x6 = fmaf(x6, a, b); x7 = fmaf(x7, a, b);
        }
        __syncwarp();
        if (threadIdx.x == 0) s[3 + it] = clock64();
    }
    if (pad[0] == 12345.f) x0 += 1.f;
    out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}
"""


def run(iters: int = 6, log=print) -> dict:
    import cupy as cp
    sms = device_sms()
    iters = max(iters, 3)
    rows = []
    for nskip in SKIPS:
        k = cp.RawModule(code=SRC, options=(f"-DNBODY={BODY}", f"-DNSKIP={nskip}")).get_function("icache_jump")
        for proto in PROTOCOLS:
            stamps = flag_kernel_stamps(k, sms, WARPS, iters, iters + 3, proto, LAUNCHES)
            c = first_and_steady([s for raw in stamps for s in raw], iters, 2)
            rows.append({"skipped_ffma": nskip, "skipped_bytes": 16 * nskip, "loop_bytes": 16 * BODY,
                         "warps_per_block": WARPS, "blocks": sms, "protocol": proto, "launches": LAUNCHES,
                         "iterations": iters, **c, "stamps": stamps})
            log(f"  jump over {16 * nskip / 1024:6.1f} KB  {proto:9s}: first {c['first_iteration_cycles']:8.0f}  "
                f"steady {c['steady_iteration_cycles']:8.0f}  cold {c['cold_cycles']:8.0f}")
    return result("gemmscope.icache_jump", rows)


def main(argv: list[str] | None = None) -> int:
    return kernelbench.main("icache_jump", __doc__, run, 6, argv)


if __name__ == "__main__":
    raise SystemExit(main())
