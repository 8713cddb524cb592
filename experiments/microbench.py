"""Microbenchmarks that measure a GPU's throughput and latency parameters once, for the timing model.

Run on the GPU (``python -m experiments.microbench --out FILE``): writes one JSON object with every
parameter in SI units, how it was measured and when, and the device's provenance. The numbers then go
into the ``[timing]`` table of the GPU's spec file (``gpus/<key>.toml``) with that provenance as source.
Nothing here is fitted to the SGEMM kernels the model is scored on.

Measured:
* ``dram_copy_bandwidth_bytes_per_s``  float4 copy of 2 GiB (read + write bytes counted);
* ``dram_read_bandwidth_bytes_per_s``  float4 read-and-reduce of 2 GiB;
* ``l2_read_bandwidth_bytes_per_s``    float4 reads of a buffer of 1/4 the L2, re-read many times;
* ``shared_bandwidth_bytes_per_s``     conflict-free 128-bit shared loads, all SMs;
* ``fp32_flop_per_s``                  independent FFMA chains, all SMs (the achievable FP32 peak);
* ``dram_latency_s``, ``l2_latency_s``, ``l1_latency_s``, ``shared_latency_s`` one-thread pointer chase
  (clock64 cycles / clock -> seconds; also stored in cycles);
* ``ffma_latency_cycles``              a dependent FFMA chain;
* ``launch_overhead_s``                median CUDA-event time of an empty kernel launch.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys

SRC = r"""
extern "C" __global__ void copy4(const float4* __restrict__ a, float4* __restrict__ b, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (; i < n; i += stride) b[i] = a[i];
}
extern "C" __global__ void read4(const float4* __restrict__ a, long long n, long long mask, int passes, float* out) {
    // passes over a[0..n) (n a power of two for the L2 case: index masked); sum kept live.
    long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    float s = 0.f;
    for (int p = 0; p < passes; ++p)
        for (long long i = tid; i < n; i += stride) { float4 v = a[(i + p * 4096) & mask]; s += v.x + v.y + v.z + v.w; }
    if (s == 1.2345f) out[0] = s;
}
extern "C" __global__ void smem_bw(int iters, float* out) {
    __shared__ float4 buf[1024];
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) buf[i] = make_float4(i, i, i, i);
    __syncthreads();
    float4 s = make_float4(0, 0, 0, 0);
    int idx = threadIdx.x & 1023;
    #pragma unroll 8
    for (int it = 0; it < iters; ++it) {
        float4 v = buf[(idx + it * 32) & 1023];
        s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
    }
    if (s.x + s.y + s.z + s.w == 1.2345f) out[0] = s.x;
}
extern "C" __global__ void ffma_tput(int iters, float* out) {
    float a0 = threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
    const float b = 0.999f, c = 0.001f;
    for (int it = 0; it < iters; ++it) {
        #pragma unroll
        for (int u = 0; u < 16; ++u) {
            a0 = fmaf(a0, b, c); a1 = fmaf(a1, b, c); a2 = fmaf(a2, b, c); a3 = fmaf(a3, b, c);
            a4 = fmaf(a4, b, c); a5 = fmaf(a5, b, c); a6 = fmaf(a6, b, c); a7 = fmaf(a7, b, c);
        }
    }
    float s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    if (s == 1.2345f) out[0] = s;
}
extern "C" __global__ void ffma_latency(int iters, float* out, long long* cycles) {
    float a = threadIdx.x; const float b = 0.999f, c = 0.001f;
    long long t0 = clock64();
    for (int it = 0; it < iters; ++it) {
        #pragma unroll
        for (int u = 0; u < 64; ++u) a = fmaf(a, b, c);
    }
    long long t1 = clock64();
    out[0] = a; cycles[0] = t1 - t0;
}
extern "C" __global__ void chase(const unsigned int* __restrict__ next, int steps, unsigned int* out, long long* cycles) {
    unsigned int j = 0;
    for (int s = 0; s < 64; ++s) j = next[j];            // warm the path's first lines / TLB
    long long t0 = clock64();
    for (int s = 0; s < steps; ++s) j = next[j];
    long long t1 = clock64();
    out[0] = j; cycles[0] = t1 - t0;
}
extern "C" __global__ void chase_cg(const unsigned int* __restrict__ next, int steps, unsigned int* out, long long* cycles) {
    // L2 latency: .cg loads bypass L1.
    unsigned int j = 0;
    for (int s = 0; s < 64; ++s) j = __ldcg(next + j);
    long long t0 = clock64();
    for (int s = 0; s < steps; ++s) j = __ldcg(next + j);
    long long t1 = clock64();
    out[0] = j; cycles[0] = t1 - t0;
}
extern "C" __global__ void chase_shared(int steps, unsigned int* out, long long* cycles) {
    __shared__ unsigned int nxt[1024];
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) nxt[i] = (i * 97 + 31) & 1023;
    __syncthreads();
    if (threadIdx.x != 0) return;
    unsigned int j = 0;
    long long t0 = clock64();
    for (int s = 0; s < steps; ++s) j = nxt[j];
    long long t1 = clock64();
    out[0] = j; cycles[0] = t1 - t0;
}
extern "C" __global__ void empty() {}
"""


def _median_event_time(cp, fn, reps: int = 20, warmup: int = 3) -> tuple[float, list[float]]:
    for _ in range(warmup):
        fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        times.append(cp.cuda.get_elapsed_time(e0, e1) / 1e3)
    import statistics
    return statistics.median(times), times


def _permutation_chain(np, n: int, stride: int, seed: int = 1):
    """A random cyclic chase over n slots spaced ``stride`` elements apart (one slot per cache line)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    nxt = np.zeros(n * stride, dtype=np.uint32)
    slots = order * stride
    nxt[slots] = np.roll(slots, -1)
    return nxt


def run() -> dict:
    import cupy as cp
    import numpy as np

    dev = cp.cuda.Device()
    attrs = dev.attributes
    sms = attrs["MultiProcessorCount"]
    clock_hz = attrs["ClockRate"] * 1e3
    l2 = attrs["L2CacheSize"]
    mod = cp.RawModule(code=SRC, options=("-std=c++17",))
    k = {name: mod.get_function(name) for name in
         ("copy4", "read4", "smem_bw", "ffma_tput", "ffma_latency", "chase", "chase_cg", "chase_shared", "empty")}
    out = cp.zeros(16, dtype=cp.float32)
    cyc = cp.zeros(1, dtype=cp.int64)
    res: dict = {}
    raw: dict = {}

    # DRAM copy and read: 2 GiB buffers.
    n_bytes = 2 << 30
    n4 = n_bytes // 16
    a = cp.random.random(n_bytes // 4, dtype=cp.float32)
    b = cp.empty_like(a)
    grid = sms * 8
    t, raw["copy"] = _median_event_time(cp, lambda: k["copy4"]((grid,), (512,), (a, b, np.int64(n4))))
    res["dram_copy_bandwidth_bytes_per_s"] = 2 * n_bytes / t
    t, raw["read"] = _median_event_time(
        cp, lambda: k["read4"]((grid,), (512,), (a, np.int64(n4), np.int64((1 << 62) - 1), np.int32(1), out)))
    res["dram_read_bandwidth_bytes_per_s"] = n_bytes / t
    b = None  # free the copy's destination before the latency chases allocate

    # L2 read: a power-of-two buffer of at most l2/4 bytes read `passes` times.
    l2_buf = 1 << int(np.floor(np.log2(l2 / 4)))
    n4_l2 = l2_buf // 16
    passes = 64
    k["read4"]((grid,), (512,), (a, np.int64(n4_l2), np.int64(n4_l2 - 1), np.int32(1), out))
    t, raw["l2_read"] = _median_event_time(
        cp, lambda: k["read4"]((grid,), (512,), (a, np.int64(n4_l2), np.int64(n4_l2 - 1), np.int32(passes), out)))
    res["l2_read_bandwidth_bytes_per_s"] = l2_buf * passes / t
    res["l2_read_buffer_bytes"] = l2_buf

    # Shared memory: 128-bit loads, 512 threads x 4 blocks per SM.
    iters = 4096
    t, raw["shared"] = _median_event_time(cp, lambda: k["smem_bw"]((sms * 4,), (512,), (np.int32(iters), out)))
    res["shared_bandwidth_bytes_per_s"] = sms * 4 * 512 * iters * 16 / t

    # FP32: 8 independent FFMA chains x 16 unrolled per iteration.
    iters = 2048
    blocks, threads = sms * 8, 256
    t, raw["ffma"] = _median_event_time(cp, lambda: k["ffma_tput"]((blocks,), (threads,), (np.int32(iters), out)))
    res["fp32_flop_per_s"] = blocks * threads * iters * 16 * 8 * 2 / t

    # FFMA latency: one thread, a dependent chain of 64 * iters FFMAs.
    iters = 1024
    k["ffma_latency"]((1,), (1,), (np.int32(iters), out, cyc))
    cp.cuda.Device().synchronize()
    res["ffma_latency_cycles"] = float(cyc.get()[0]) / (64 * iters)

    # Pointer chases: one thread; latencies in cycles and seconds.
    def chase(kernel, nxt, steps=4096):
        u = cp.zeros(1, dtype=cp.uint32)
        kernel((1,), (1,), (nxt, np.int32(steps), u, cyc))
        kernel((1,), (1,), (nxt, np.int32(steps), u, cyc))
        cp.cuda.Device().synchronize()
        return float(cyc.get()[0]) / steps

    line = 32  # uint32 per 128 B line
    dram_chain = cp.asarray(_permutation_chain(np, (1 << 30) // 128 // 4, line * 4))   # 1 GiB span, 512 B apart
    res["dram_latency_cycles"] = chase(k["chase_cg"], dram_chain)
    del dram_chain
    l2_chain = cp.asarray(_permutation_chain(np, (l2 // 4) // 128, line))               # a quarter of L2
    res["l2_latency_cycles"] = chase(k["chase_cg"], l2_chain)
    l1_chain = cp.asarray(_permutation_chain(np, 128, line))                            # 16 KiB: fits L1
    res["l1_latency_cycles"] = chase(k["chase"], l1_chain)
    u = cp.zeros(1, dtype=cp.uint32)
    k["chase_shared"]((1,), (32,), (np.int32(4096), u, cyc))
    cp.cuda.Device().synchronize()
    res["shared_latency_cycles"] = float(cyc.get()[0]) / 4096
    for lvl in ("dram", "l2", "l1", "shared"):
        res[f"{lvl}_latency_s"] = res[f"{lvl}_latency_cycles"] / clock_hz

    # Launch overhead: an empty kernel, event-timed.
    t, raw["launch"] = _median_event_time(cp, lambda: k["empty"]((1,), (32,), ()), reps=200, warmup=20)
    res["launch_overhead_s"] = t
    return {"parameters": res, "raw_times_s": raw, "clock_hz_attribute": clock_hz}


def provenance() -> dict:
    import cupy as cp
    from gpu.device import detect_device  # noqa: WPS433 - GPU edge
    info = detect_device()
    d = info.to_json() if hasattr(info, "to_json") else dict(info.__dict__)
    d["cupy_version"] = cp.__version__
    return d


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="write the JSON result here (default: print)")
    args = ap.parse_args(argv)
    result = run()
    result["date"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    result["method"] = __doc__
    try:
        result["device"] = provenance()
    except Exception as e:  # provenance is best effort; the numbers stand on their own
        result["device_error"] = repr(e)
    text = json.dumps(result, indent=2, default=float)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    for k_, v in result["parameters"].items():
        print(f"{k_:36s} {v:.4g}", file=sys.stderr)
    if not args.out:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
