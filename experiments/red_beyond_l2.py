"""Float reductions into buffers larger than the L2: what split-K pays when its C does not fit.

    python -m experiments.red_beyond_l2 [--out FILE.json] [--iters 20]

Split-K (rungs 07-12, ``SPLITK`` = S) zeroes C, then every K slice adds its partial tile into C with reductions
(``atomicAdd`` with the result unused: ``RED.E.ADD.F32``, or ``.v4`` on sm_90). A reduction is performed in the L2:
when C fits in the L2 the slices add into lines that stay there, when it does not each slice finds its lines evicted
by the ones it reduced after them (the slices walk C in the same order) and the L2 reads every sector from DRAM
before adding into it, and later writes it back.

For each buffer size (8 MiB ... 4 x L2, 1 MiB apart around the L2's size) the script times, after the L2 was flushed (a 2 x L2 buffer read through):

* ``memset``: ``cudaMemsetAsync`` of the buffer (what the launcher does before a split-K kernel);
* ``memset + P passes``, P = 1 and 4: the memset, then P launches that each add a float4 into every 16 bytes of the
  buffer (``atomicAdd(float4*)``, one per thread, threads in address order, a grid of 8 x 256-thread blocks per SM
  walking the buffer: the blocks in flight cover a window of a few MB that moves through it, as the tiles of one
  split-K slice do through C);
* the same with 4-byte reductions (``atomicAdd(float*)``, four a thread);
* ``tile`` rows: the split-K epilogue's order instead of address order - 128 x 128 tiles of a row-major C with
  ``TILE_COLS`` columns (the widths of the edge shapes where the model missed), one 256-thread block a tile, tiles
  in row-major launch order, rows added so that C spans 48-72 MiB.

Per pass, the steady time is ``(t(4) - t(1)) / 3``; 16 bytes x the buffer's float4 count over it is the reduction
rate. CUDA-event medians of ``--iters`` timings after a warm-up; every timing is kept. JSON, schema
``gemmscope.red_beyond_l2`` v1. Needs a GPU (sm_90 for the float4 reductions) and CuPy. Nothing here is fitted to
the SGEMM rows the model is scored on.
"""
from __future__ import annotations

import statistics

from . import kernelbench
from .dram_fetch import FLUSH_SRC
from .kernelbench import result

MIB = 1 << 20
SIZES_MIB = (8, 16, 24, 32, 40, 48, 52, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 66, 68, 72, 80, 96, 128, 192, 256)
PASSES = (1, 4)
TILE_COLS = (3328, 4352, 5632)
TILE_MIB = tuple(range(48, 73))
SRC = r"""
extern "C" __global__ void red_v4(float4* buf, long long n4) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x)
        atomicAdd(buf + i, make_float4(1.f, 1.f, 1.f, 1.f));
}
extern "C" __global__ void red_f32(float* buf, long long n4) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
        float* p = buf + 4 * i;
        atomicAdd(p, 1.f); atomicAdd(p + 1, 1.f); atomicAdd(p + 2, 1.f); atomicAdd(p + 3, 1.f);
    }
}
// The split-K epilogue's order: block b adds a float4 into every 16 bytes of its 128 x 128 tile of a row-major
// rows x cols buffer (tiles in row-major launch order; thread t: rows t / 32 + 8 i, columns 4 (t % 32) .. + 3).
extern "C" __global__ void red_tile(float* buf, int rows, int cols) {
    int tiles_n = cols / 128;
    int r0 = (blockIdx.x / tiles_n) * 128, c0 = (blockIdx.x % tiles_n) * 128 + 4 * (threadIdx.x % 32);
    for (int i = 0; i < 16; ++i) {
        int r = r0 + threadIdx.x / 32 + 8 * i;
        if (r < rows) atomicAdd(reinterpret_cast<float4*>(buf + (long long)r * cols + c0), make_float4(1.f, 1.f, 1.f, 1.f));
    }
}
"""


def per_pass(t1: float, t4: float) -> float:
    """Steady time of one pass (s) from the medians with one and with four passes."""
    return (t4 - t1) / 3.0


def run(iters: int = 20, log=print) -> dict:
    import cupy as cp
    mod = cp.RawModule(code=SRC + FLUSH_SRC)           # compiled for the device (sm_90 on the H200)
    kernels = {"v4": mod.get_function("red_v4"), "f32": mod.get_function("red_f32")}
    tile_kernel = mod.get_function("red_tile")
    fl = mod.get_function("flush")
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    sms, l2 = int(props["multiProcessorCount"]), int(props["l2CacheSize"])
    scratch = cp.ones(2 * l2 // 4, dtype=cp.float32)
    sink = cp.zeros(1, dtype=cp.float32)
    stream = cp.cuda.get_current_stream()
    sizes = [s for s in SIZES_MIB if s * MIB <= 4 * l2 + 64 * MIB]
    buf = cp.zeros(max(sizes) * MIB // 4, dtype=cp.float32)
    rows = []

    def timed(nbytes: int, kind: str | None, passes: int, shape: tuple[int, int] | None = None) -> list[float]:
        n4 = nbytes // 16
        out = []
        for it in range(iters + 2):
            fl((sms * 8,), (256,), (scratch, cp.int64(scratch.size // 4), sink))
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record(stream)
            cp.cuda.runtime.memsetAsync(buf.data.ptr, 0, nbytes, stream.ptr)
            for _ in range(passes if kind else 0):
                if shape:
                    tile_kernel((-(-shape[0] // 128) * (shape[1] // 128),), (256,),
                                (buf, cp.int32(shape[0]), cp.int32(shape[1])))
                else:
                    kernels[kind]((sms * 8,), (256,), (buf, cp.int64(n4)))
            e1.record(stream)
            e1.synchronize()
            if it >= 2:
                out.append(cp.cuda.get_elapsed_time(e0, e1) * 1e-3)
        return out

    for mib in sizes:
        nbytes = mib * MIB
        row = {"buffer_bytes": nbytes, "l2_bytes": l2, "memset_s": timed(nbytes, None, 0)}
        for kind in kernels:
            for p in PASSES:
                row[f"{kind}_passes{p}_s"] = timed(nbytes, kind, p)
        med = {k: statistics.median(v) for k, v in row.items() if k.endswith("_s")}
        for kind in kernels:
            t = per_pass(med[f"{kind}_passes1_s"], med[f"{kind}_passes4_s"])
            row[f"{kind}_pass_s"] = t
            row[f"{kind}_bytes_per_s"] = nbytes / t if t > 0 else float("nan")
            row[f"{kind}_first_pass_s"] = med[f"{kind}_passes1_s"] - med["memset_s"]
        rows.append(row)
        log(f"  {mib:4d} MiB: memset {med['memset_s'] * 1e6:7.1f} us; per pass v4 {row['v4_pass_s'] * 1e6:7.1f} us "
            f"({row['v4_bytes_per_s'] / 1e12:.2f} TB/s), f32 {row['f32_pass_s'] * 1e6:7.1f} us "
            f"({row['f32_bytes_per_s'] / 1e12:.2f} TB/s); first pass v4 {row['v4_first_pass_s'] * 1e6:7.1f} us")
    for cols in TILE_COLS:
        for mib in TILE_MIB:
            nrows = mib * MIB // (4 * cols)
            nbytes = 4 * nrows * cols
            row = {"pattern": "tile", "rows": nrows, "cols": cols, "buffer_bytes": nbytes, "l2_bytes": l2}
            for p in PASSES:
                row[f"v4_passes{p}_s"] = timed(nbytes, "v4", p, (nrows, cols))
            t = per_pass(statistics.median(row["v4_passes1_s"]), statistics.median(row["v4_passes4_s"]))
            row["v4_pass_s"], row["v4_bytes_per_s"] = t, (nbytes / t if t > 0 else float("nan"))
            rows.append(row)
            log(f"  tile order, {nrows} x {cols} ({nbytes / MIB:.1f} MiB): per pass {t * 1e6:7.1f} us "
                f"({row['v4_bytes_per_s'] / 1e12:.2f} TB/s)")
    return result("gemmscope.red_beyond_l2", rows)


def main(argv: list[str] | None = None) -> int:
    return kernelbench.main("red_beyond_l2", __doc__, run, 20, argv)


if __name__ == "__main__":
    raise SystemExit(main())
