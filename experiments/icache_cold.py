"""Cold instruction-fetch microbenchmark: what the first pass over code the SM has not run yet costs, and whether a
block that follows another on the same SM (a later round of a multi-round kernel) pays it again.

    python -m experiments.icache_cold [--out FILE.json] [--iters 6]

One kernel per code size: a loop whose body is ``N`` independent FFMAs (8 chains; 16 B of SASS each), ``N`` from
256 to 16384 (4-256 KB), ``iters`` iterations. Thread 0 of every block stamps ``clock64`` before the loop and after
each iteration, and records its SM (``%smid``) and the global timer at its start. Each kernel is launched on
2 x SMs blocks of 4 or 8 warps with enough dynamic shared memory that one block fits per SM, so every SM runs two
blocks one after the other (two rounds); it is launched twice, and both launches are kept (the first reads its code
from DRAM or L2, the second from L2). The first iteration minus a later one is the cold cost of fetching the loop's
code; the same figure for the second block of an SM says whether the code stayed in the SM's instruction caches.
Writes JSON (schema ``gemmscope.icache_cold``, version 1) with every stamp. Needs a GPU and CuPy.
"""
from __future__ import annotations

import statistics

from . import kernelbench
from .kernelbench import device_sms, result

SIZES = (256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384)
WARPS = (4, 8)
SHARED_BYTES = 160 * 1024          # one block per SM on a 228 KB SM (H100/H200); more than half of any shipped GPU's
SRC = r"""
extern "C" __global__ void icache_cold(float* out, long long* stamps, float a, float b, int iters) {
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
    if (pad[0] == 12345.f) x0 += 1.f;   // keeps the shared allocation (never true: the pad is not written)
    out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}
"""


def summarise(stamps: list[list[int]], iters: int) -> dict:
    """Per-iteration cycles of the first and second block of every SM (blocks ordered by their start on the SM):
    medians over the SMs of the first iteration, of the third on (the steady rate; the last with fewer than three
    iterations), and their difference."""
    by_sm: dict[int, list[list[int]]] = {}
    for s in stamps:
        by_sm.setdefault(int(s[0]), []).append(s)
    out = {}
    for rank in (0, 1):
        firsts, steadies = [], []
        for rows in by_sm.values():
            rows = sorted(rows, key=lambda r: r[1])
            if len(rows) <= rank:
                continue
            t = rows[rank][2:3 + iters]
            per = [t[i + 1] - t[i] for i in range(iters)]
            firsts.append(per[0])
            steadies.append(statistics.median(per[2:]) if len(per) > 2 else per[-1])
        if firsts:
            f, st = statistics.median(firsts), statistics.median(steadies)
            out[f"block{rank}"] = {"first_iteration_cycles": f, "steady_iteration_cycles": st, "cold_cycles": f - st,
                                   "sms": len(firsts)}
    return out


def first_and_steady(stamps: list[list[int]], iters: int, start: int) -> dict:
    """Medians over the blocks (rows of ``stamps``) of a loop's first iteration and of its iterations from the third on,
    with ``clock64`` before the loop at ``start`` and after each of its ``iters`` iterations behind it (cycles)."""
    firsts, steadies = [], []
    for s in stamps:
        per = [s[start + 1 + i] - s[start + i] for i in range(iters)]
        firsts.append(per[0])
        steadies.append(statistics.median(per[2:]))
    f, st = statistics.median(firsts), statistics.median(steadies)
    return {"first_iteration_cycles": f, "steady_iteration_cycles": st, "cold_cycles": f - st}


def protocol_action(protocol: str):
    """What runs before each timed launch of the microbenchmarks that compare protocols: nothing (``relaunch``) or the
    sweeps' L2 flush (``l2_flush``, :func:`gpu.timing.flusher`: a 2 x L2 fill)."""
    if protocol == "relaunch":
        return lambda: None
    if protocol == "l2_flush":
        import cupy as cp
        from gpu.timing import flusher
        return flusher(int(cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["l2CacheSize"])).flush
    raise ValueError(f"unknown protocol {protocol!r}")


def launches_after(launch, blocks: int, n_stamps: int, before, launches: int) -> list[list[list[int]]]:
    """Two warm-up launches of ``launch(stamps)`` on ``blocks`` blocks, then ``launches`` more, each after ``before()``
    (a relaunch, another kernel, the L2 flush): the ``n_stamps`` stamps of every block of each of those."""
    import cupy as cp
    for _ in range(2):
        launch(cp.zeros(blocks * n_stamps, dtype=cp.int64))
    out = []
    for _ in range(launches):
        before()
        st = cp.zeros(blocks * n_stamps, dtype=cp.int64)
        launch(st)
        cp.cuda.runtime.deviceSynchronize()
        out.append(st.get().reshape(blocks, n_stamps).tolist())
    return out


def flag_kernel_stamps(k, blocks: int, warps: int, iters: int, n_stamps: int, protocol: str,
                       launches: int) -> list[list[list[int]]]:
    """:func:`launches_after` for the kernels of ``icache_jump``, ``icache_loops`` and ``icache_layout``, which take
    ``(out, stamps, a, b, iters, flag)`` (``flag`` 0: the code they jump over never runs): ``launches`` launches of
    ``k`` on ``blocks`` blocks of ``warps`` warps, one an SM (:data:`SHARED_BYTES` of dynamic shared memory), each
    after ``protocol``'s action (:func:`protocol_action`), behind two warm-ups; every block's stamps per launch."""
    import cupy as cp
    k.max_dynamic_shared_size_bytes = SHARED_BYTES
    out = cp.zeros(blocks * 32 * warps, dtype=cp.float32)

    def launch(st):
        k((blocks,), (32 * warps,), (out, st, cp.float32(0.999), cp.float32(0.001), cp.int32(iters), cp.int32(0)),
          shared_mem=SHARED_BYTES)
    return launches_after(launch, blocks, n_stamps, protocol_action(protocol), launches)


def run(iters: int = 6, log=print) -> dict:
    import cupy as cp
    sms = device_sms()
    rows = []
    for n in SIZES:
        k = cp.RawModule(code=SRC, options=(f"-DNBODY={n}",)).get_function("icache_cold")
        k.max_dynamic_shared_size_bytes = SHARED_BYTES
        for w in WARPS:
            out = cp.zeros(2 * sms * 32 * w, dtype=cp.float32)
            for launch in (1, 2):
                st = cp.zeros(2 * sms * (iters + 3), dtype=cp.int64)
                k((2 * sms,), (32 * w,), (out, st, cp.float32(0.999), cp.float32(0.001), cp.int32(iters)),
                  shared_mem=SHARED_BYTES)
                cp.cuda.runtime.deviceSynchronize()
                raw = st.get().reshape(2 * sms, iters + 3).tolist()
                summ = summarise(raw, iters)
                rows.append({"ffma_per_iteration": n, "code_bytes": 16 * n, "warps_per_block": w, "launch": launch,
                             "iterations": iters, **summ, "stamps": raw})
                b0, b1 = summ.get("block0", {}), summ.get("block1", {})
                log(f"  {16 * n / 1024:6.1f} KB  {w} warps  launch {launch}: cold {b0.get('cold_cycles', 0):8.0f} "
                    f"cycles (first block of an SM), {b1.get('cold_cycles', 0):8.0f} (second); steady "
                    f"{b0.get('steady_iteration_cycles', 0):8.0f}")
    return result("gemmscope.icache_cold", rows)


def main(argv: list[str] | None = None) -> int:
    return kernelbench.main("icache_cold", __doc__, run, 6, argv)


if __name__ == "__main__":
    raise SystemExit(main())
