"""Which code a launch finds still in the SM's instruction cache, by where the code lies in the kernel: a finer scan
than :mod:`experiments.icache_loops` over the bytes jumped over before the loops, the loops' size and number, and code
jumped over after them.

    python -m experiments.icache_layout [--out FILE.json] [--iters 4]

One kernel per case ``(L, X, n, Y)``: a never-taken branch over ``X`` bytes of straight-line FFMAs, then ``n`` loops
(1 or 2) of ``L`` bytes of independent FFMAs, ``iters`` iterations each, thread 0 stamping ``clock64`` after every
iteration, then a never-taken branch over ``Y`` more bytes, then the store. One block of 4 warps (one a scheduler) an
SM on every SM; per case and protocol (relaunch, the sweeps' L2 flush): two warm-up launches, then five timed ones.
Per loop: the first iteration less a later one (medians over the SMs and launches) is its cold first pass - about
the L0's refill (1-3k cycles) when the code was still in the SM's instruction cache, the loop's bytes at L2's or
DRAM's code rate (5-20k) when it was not. ``icache_loops`` found two 30-35 KB loops refetched on every launch from
64 KB jumped over on, 24 KB loops only at 80-96 KB, with no size rule; rung 11's classic config (two 35 KB loops
behind its element path's 80 KB) pays a fetch on every timed launch and its element path (the same loops' copies
from 10 KB on) does not. The SASS layout of every case (where each loop starts, the whole kernel's bytes) comes from
:func:`layout` (NVRTC and nvdisasm on a CPU, as :mod:`tools.compiler_facts`). Writes JSON (schema
``gemmscope.icache_layout``, version 1), medians only. Needs a GPU and CuPy.
"""
from __future__ import annotations

from . import kernelbench
from .icache_cold import first_and_steady, flag_kernel_stamps
from .icache_loops import _BODY, per_loop
from .kernelbench import device_sms, result

KB_FFMA = 64                                      # FFMAs of 16 bytes in a KB
_GRID = tuple(range(0, 129, 8))                   # KB jumped over before the loops
CASES = (tuple((L, X, 2, 0) for L in (24, 30, 35) for X in _GRID)      # (loop KB, KB before, loops, KB after)
         + tuple((35, X, 1, 0) for X in range(0, 129, 16))
         + tuple((35, 0, 2, Y) for Y in (32, 64, 96, 128)))
WARPS = 4
LAUNCHES = 5
PROTOCOLS = ("relaunch", "l2_flush")
_SKIP = r"""
    if (flag == FLAGV) {
#pragma unroll
        for (int j = 0; j < NS / 8; ++j) {
            x0 = fmaf(x0, b, a); x1 = fmaf(x1, b, a); x2 = fmaf(x2, b, a); x3 = fmaf(x3, b, a);
            x4 = fmaf(x4, b, a); x5 = fmaf(x5, b, a); x6 = fmaf(x6, b, a); x7 = fmaf(x7, b, a);
        }
    }
"""
SRC = r"""
extern "C" __global__ void icache_layout(float* out, long long* stamps, float a, float b, int iters, int flag) {
    extern __shared__ float pad[];
    float x0 = threadIdx.x, x1 = x0 + 1.f, x2 = x0 + 2.f, x3 = x0 + 3.f,
          x4 = x0 + 4.f, x5 = x0 + 5.f, x6 = x0 + 6.f, x7 = x0 + 7.f;
    long long* s = stamps + (long long)blockIdx.x * (2 * iters + 2);
    if (threadIdx.x == 0) { unsigned smid; asm volatile("mov.u32 %0, %%smid;" : "=r"(smid)); s[0] = smid; }
#if NSKIP > 0
""" + _SKIP.replace("NS", "NSKIP").replace("FLAGV", "1") + r"""
#endif
    if (threadIdx.x == 0) s[1] = clock64();
    for (int it = 0; it < iters; ++it) {
""" + _BODY.replace("A_", "a").replace("B_", "b") + r"""
        __syncwarp();
        if (threadIdx.x == 0) s[2 + it] = clock64();
    }
#if NLOOPS > 1
    for (int it = 0; it < iters; ++it) {
""" + _BODY.replace("A_", "b").replace("B_", "a") + r"""
        __syncwarp();
        if (threadIdx.x == 0) s[2 + iters + it] = clock64();
    }
#endif
#if NSKIP2 > 0
""" + _SKIP.replace("NS", "NSKIP2").replace("FLAGV", "2") + r"""
#endif
    if (pad[0] == 12345.f) x0 += 1.f;
    out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}
"""


def options(case: tuple[int, int, int, int]) -> tuple[str, ...]:
    """The compile options of one case ``(loop KB, KB jumped over before, loops, KB jumped over after)``."""
    loop_kb, before_kb, loops, after_kb = case
    if loop_kb < 1 or before_kb < 0 or after_kb < 0 or loops not in (1, 2):
        raise ValueError(f"bad case {case!r}: loops of >= 1 KB, 1 or 2 of them, >= 0 KB jumped over")
    return (f"-DNBODY={KB_FFMA * loop_kb}", f"-DNSKIP={KB_FFMA * before_kb}", f"-DNLOOPS={loops}",
            f"-DNSKIP2={KB_FFMA * after_kb}")


def layout(case: tuple[int, int, int, int], arch: str = "sm_90") -> dict:
    """Where the case's loops lie in its SASS (NVRTC for ``arch`` and nvdisasm on this machine, as
    :mod:`tools.compiler_facts` compiles): the kernel's bytes and each natural loop's (start, end) byte offsets, in
    address order. Needs ``requirements-facts.txt``, not a GPU."""
    import os
    import tempfile
    from tools.compiler_facts import _check, _nvrtc, basic_blocks, disassemble, natural_loops, nvrtc_options
    nv = _nvrtc()
    prog = _check(nv.nvrtcCreateProgram(SRC.encode(), b"icache_layout.cu", 0, [], []), "nvrtcCreateProgram")
    try:
        opts = [o.encode() for o in (*nvrtc_options(arch), *options(case))]
        (err,) = nv.nvrtcCompileProgram(prog, len(opts), opts)
        if int(err) != 0:
            raise RuntimeError(f"icache_layout case {case}: NVRTC failed")
        n = _check(nv.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
        cubin = b" " * n
        _check((nv.nvrtcGetCUBIN(prog, cubin)[0], None), "nvrtcGetCUBIN")
    finally:
        nv.nvrtcDestroyProgram(prog)
    with tempfile.TemporaryDirectory(prefix="gemmscope_icl_") as td:
        path = os.path.join(td, "k.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        (instrs, labels), = disassemble(path).values()
    blocks = basic_blocks(instrs, labels)
    loops = sorted((16 * min(blocks[i].start for i in body), 16 * max(blocks[i].end for i in body))
                   for body in natural_loops(blocks).values())
    return {"kernel_bytes": 16 * len(instrs), "loops": loops}


def run(iters: int = 4, log=print) -> dict:
    import cupy as cp
    sms = device_sms()
    iters = max(iters, 3)
    rows = []
    for case in CASES:
        loop_kb, before_kb, loops, after_kb = case
        k = cp.RawModule(code=SRC, options=options(case)).get_function("icache_layout")
        for proto in PROTOCOLS:
            stamps = flag_kernel_stamps(k, sms, WARPS, iters, 2 * iters + 2, proto, LAUNCHES)
            flat = [s for launch_st in stamps for s in launch_st]
            per = per_loop(flat, iters) if loops > 1 else {"a": first_and_steady(flat, iters, 1)}
            rows.append({"loop_bytes": 1024 * loop_kb, "skipped_before_bytes": 1024 * before_kb, "loops": loops,
                         "skipped_after_bytes": 1024 * after_kb, "warps_per_block": WARPS, "blocks": sms,
                         "protocol": proto, "launches": LAUNCHES, "iterations": iters, **per})
            log(f"  {loops} x {loop_kb:3d} KB, {before_kb:3d} KB before, {after_kb:3d} KB after, {proto:9s}: "
                + "  ".join(f"{n}: cold {v['cold_cycles']:7.0f} steady {v['steady_iteration_cycles']:6.0f}"
                            for n, v in per.items()))
    return result("gemmscope.icache_layout", rows)


def main(argv: list[str] | None = None) -> int:
    return kernelbench.main("icache_layout", __doc__, run, 4, argv)


if __name__ == "__main__":
    raise SystemExit(main())
