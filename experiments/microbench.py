"""Microbenchmarks that measure a GPU's ``[timing]`` table (latencies, bandwidths, sustained clock, launch overhead).

Run on the GPU, one call measures every field (about 10-20 s on an H200)::

    python3 -m experiments.microbench --out microbench.json --toml timing.toml

``--out`` gets the raw numbers (JSON: every parameter in SI units, the method of each, raw times, extras and the
device's provenance); ``--toml`` gets a ready-to-paste ``[timing]`` table for ``gpus/<key>.toml`` whose sources read
``experiments/microbench.py on <GPU name>, <date>: <method>``. Neither file is ever overwritten. Nothing here is
fitted to the SGEMM kernels the model is scored on. ``--from-json FILE --toml OUT`` rebuilds the table from a
stored JSON on any machine (no GPU).

Methods (the field names are those of :data:`model.spec.TIMING_FIELDS`):

* ``sustained_clock_hz``: every SM runs independent FFMA chains (one full wave) for about 3 s in launches of
  0.25 s; thread 0 of each block reads ``clock64`` and ``%globaltimer`` at its start and end; the clock is the
  median over blocks of (cycles / ns) in the last half of the launches. ``fp32_flop_per_s`` comes from the same
  launches (CUDA-event time).
* ``l1_latency_cycles``: one thread, a dependent chase of plain global loads (L1-cached) over 16 KiB (128 lines in random
  order, one pass to warm up, then 4096 timed steps), ``clock64`` cycles per step.
* ``shared_latency_cycles``: the same chase in shared memory.
* ``l2_latency_cycles``: a dependent chase of ``ld.global.cg`` loads (L1 bypassed) over a quarter of the L2 (lines in
  random order; one full pass to warm up, then 4096 timed steps over lines now in L2).
* ``dram_latency_cycles``: a dependent ``ld.global.cg`` chase that misses L2 on every step: one random line in each
  4 KiB page of a 32 MiB window, pages in random order (TLB-friendly: the window is covered by the TLB after the
  first touches), run right after reading 4 x L2 of other data, and no line is visited twice. The older version
  timed a second launch over the first launch's path, which then hit L2; its H200 figure (295 cycles) was L2
  latency. A chase over a 1 GiB window (a new 2 MiB page almost every step, so TLB misses) is kept as an extra.
* ``shared_bandwidth_bytes_per_s``: conflict-free 128-bit shared loads, 4 blocks x 512 threads per SM.
* ``l2_bandwidth_bytes_per_s``: 128-bit ``ld.global.cg`` reads of a buffer of a quarter of the L2, 64 passes.
* ``dram_read_bandwidth_bytes_per_s`` / ``dram_copy_bandwidth_bytes_per_s``: 128-bit reads / a copy of a buffer of
  up to 2 GiB (>= 8 x L2 where memory allows); the copy counts read + write bytes.
* ``launch_overhead_s``: median CUDA-event time of an empty kernel, events and launches queued behind a spin
  kernel so that the host is never on the timed path: how the sweeps time kernels (``gpu/timing.py``). The time
  of a launch from an idle stream (host latency included) is kept as an extra.
* ``ffma_latency_cycles``: one thread, a dependent chain of 65536 FFMA.
* ``l2_reduction_bytes_per_s``: ``atomicAdd`` of floats with the result unused (``RED.E.ADD.F32``) into an 8 MiB
  buffer (in L2), 8 blocks x 256 threads per SM, each warp's lanes four floats apart (the split-K epilogue's
  pattern: 16 sectors a request), 64 passes; 32 B x sector requests / time. Lanes one float apart (4 sectors a
  request) and 16 warps adding into one region are kept as extras.
* ``dram_reduction_bytes_per_s``: 16-byte float reductions (``atomicAdd`` of a float4, sm_90; four 4-byte ones
  before) into a buffer of 4 x L2, so that every sector is read from DRAM, reduced and written back (split-K's
  epilogue when C does not fit in the L2); buffer bytes over the steady time of a pass, (t(4 passes) - t(1)) / 3.
  ``experiments/red_beyond_l2.py`` measures the same at buffer sizes around the L2's.

Bandwidths are medians of 20 CUDA-event timings after warm-up.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import statistics
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from model.spec import TIMING_FIELDS, SpecError, parse_gpu

SCHEMA = "gemmscope.microbench"
SCHEMA_VERSION = 2
TIMING_KEYS: tuple[str, ...] = tuple(f.key for f in TIMING_FIELDS)

METHODS: dict[str, str] = {
    "sustained_clock_hz": "clock64 cycles over %globaltimer ns of every block during ~3 s of FFMA load on all SMs "
                          "(one wave, 0.25 s launches), median over blocks of the last half of the launches",
    "l1_latency_cycles": "one-thread pointer chase of plain global loads (LDG, L1-cached) over 16 KiB (128 lines in random order, warmed), "
                         "clock64 cycles per step, 4096 steps",
    "shared_latency_cycles": "one-thread pointer chase in shared memory, clock64 cycles per step, 4096 steps",
    "l2_latency_cycles": "one-thread ld.global.cg pointer chase over a quarter of the L2 (lines in random order, one "
                         "warm-up pass), clock64 cycles per step, 4096 steps",
    "dram_latency_cycles": "one-thread ld.global.cg pointer chase, one random line per 4 KiB page of a 32 MiB window "
                           "in random page order, after reading 4 x L2 of other data, no line visited twice (every "
                           "step misses L2, TLB hits), clock64 cycles per step, 4096 steps",
    "shared_bandwidth_bytes_per_s": "conflict-free 128-bit shared loads, 4 blocks x 512 threads per SM, median of 20",
    "l2_bandwidth_bytes_per_s": "128-bit ld.global.cg reads of a buffer of a quarter of the L2, 64 passes, "
                                "median of 20",
    "dram_read_bandwidth_bytes_per_s": "128-bit reads of a buffer of up to 2 GiB, median of 20",
    "dram_copy_bandwidth_bytes_per_s": "128-bit copy of a buffer of up to 2 GiB, read + write bytes, median of 20",
    "launch_overhead_s": "median CUDA-event time of an empty kernel, 200 launches queued behind a spin kernel "
                         "(host off the timed path, as the sweeps time)",
    "dram_reduction_bytes_per_s": "16-byte float reductions (atomicAdd of a float4 on sm_90, four 4-byte ones before) "
                                  "into a buffer of 4 x L2, one a thread in address order, 8 blocks x 256 threads "
                                  "per SM; buffer bytes over the steady time of a pass ((t(4 passes) - t(1)) / 3 "
                                  "after an L2 flush), median of 20",
    "fp32_flop_per_s": "independent FFMA chains on all SMs (one wave) during the sustained-clock launches, "
                       "CUDA-event time",
    "ffma_latency_cycles": "one thread, a dependent chain of 65536 FFMA, clock64 cycles",
    "l2_reduction_bytes_per_s": "atomicAdd of floats with the result unused (RED.E.ADD.F32) into an 8 MiB buffer "
                                "(L2-resident), 8 blocks x 256 threads per SM, each warp's lanes 4 floats apart (the "
                                "split-K epilogue's pattern: 16 sectors a request), 64 passes; 32 B x sector requests / "
                                "time, median of 20",
    "l2_latency_spread_cycles": "experiments/batch_latency.py: standard deviation of one warp's wait for one "
                                "ld.global.cg line load that hits L2 (one warp an SM on every SM, both row patterns)",
    "dram_latency_spread_cycles": "experiments/batch_latency.py: standard deviation of one warp's wait for one "
                                  "LDG.E.CONSTANT line load from DRAM (the L2 flushed; one warp an SM on every SM, both "
                                  "row patterns)",
    "dram_page_bytes": "experiments/batch_latency.py: of 256 B - 4 KiB, the DRAM segment whose lines arrive together "
                       "that best fits one warp's wait for 1-14 lines from DRAM at row pitches of 128 B - 16 KiB",
    "batch_wait_per_load_cycles": "experiments/batch_latency.py: cycles each further L2 hit a warp waits for together "
                                  "adds beyond its issue and the slowest latency, least squares over batches of 1-14",
}
assert set(METHODS) == set(TIMING_KEYS)


class UsageError(Exception):
    """Bad command-line input (exit status 2)."""


# --------------------------------------------------------------------------------------------------
# TOML emitter (pure; tested on the CPU)
# --------------------------------------------------------------------------------------------------


def _toml_number(x: float) -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise ValueError(f"not a finite number: {x!r}")
    text = f"{float(x):.6g}"
    if not any(c in text for c in ".en"):
        text += ".0"
    return text


def _toml_string(s: str) -> str:
    """A TOML basic string (JSON's escapes are a subset of TOML's)."""
    return json.dumps(s, ensure_ascii=True)


def source_text(device_name: str, date: str, method: str) -> str:
    return f"experiments/microbench.py on {device_name}, {date}: {method}"


def timing_toml(parameters: Mapping[str, float], device_name: str, date: str,
                methods: Mapping[str, str] | None = None) -> str:
    """A ``[timing]`` table for ``gpus/<key>.toml``: one ``{ value, source }`` line per known field present.

    Keys that are not :data:`model.spec.TIMING_FIELDS` are left out (they stay in the JSON); the order is that of
    :data:`TIMING_FIELDS`. ``date`` is written as given (an ISO date or time).
    """
    methods = METHODS if methods is None else methods
    lines = [f"[timing]  # measured by experiments/microbench.py on {device_name}, {date}; "
             "raw numbers in the JSON written with it"]
    for key in TIMING_KEYS:
        value = parameters.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            lines.append(f"# {key}: no valid measurement ({value!r}); see the JSON")
            continue
        src = source_text(device_name, date, methods.get(key, METHODS[key]))
        lines.append(f"{key} = {{ value = {_toml_number(value)}, source = {_toml_string(src)} }}")
    return "\n".join(lines) + "\n"


def toml_from_result(result: Mapping[str, Any]) -> str:
    """The ``[timing]`` table of a stored microbench JSON (schema 1 files: known keys only, old key names mapped)."""
    params = dict(result.get("parameters", {}))
    if "l2_bandwidth_bytes_per_s" not in params and "l2_read_bandwidth_bytes_per_s" in params:
        params["l2_bandwidth_bytes_per_s"] = params["l2_read_bandwidth_bytes_per_s"]    # schema 1 name
    device = result.get("device") or {}
    name = device.get("name") or result.get("device_name") or "unknown GPU"
    date = str(result.get("date", "unknown date"))
    methods = result.get("methods") or {}
    if result.get("schema_version", 1) < SCHEMA_VERSION:
        methods = {k: f"(microbench.py schema {result.get('schema_version', 1)}) see the JSON's 'method' text"
                   for k in TIMING_KEYS}
    return timing_toml({k: v for k, v in params.items() if k in TIMING_KEYS}, name, date, methods)


def check_against_spec(toml_text: str, spec_path: Path | None) -> str | None:
    """Load ``spec_path`` with its ``[timing]`` replaced by ``toml_text``; None if it validates, else the error."""
    import tomllib  # noqa: PLC0415

    if spec_path is None:
        return None
    data = tomllib.loads(spec_path.read_text(encoding="utf-8"))
    data["timing"] = tomllib.loads(toml_text)["timing"]
    try:
        parse_gpu(data, f"{spec_path.name} with the measured [timing]")
    except SpecError as exc:
        return str(exc)
    return None


# --------------------------------------------------------------------------------------------------
# The GPU part
# --------------------------------------------------------------------------------------------------

SRC = r"""
__device__ __forceinline__ unsigned long long gtimer() {
    unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}
__device__ __forceinline__ unsigned smid() { unsigned r; asm volatile("mov.u32 %0, %%smid;" : "=r"(r)); return r; }

extern "C" __global__ void spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}
extern "C" __global__ void empty() {}

extern "C" __global__ void copy4(const float4* __restrict__ a, float4* __restrict__ b, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (; i < n; i += stride) b[i] = a[i];
}
// passes over a[0..n), L1 bypassed (n a power of two when mask = n - 1); the sum is kept live.
extern "C" __global__ void read4(const float4* __restrict__ a, long long n, long long mask, int passes, float* out) {
    long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    float s = 0.f;
    for (int p = 0; p < passes; ++p)
        for (long long i = tid; i < n; i += stride) {
            float4 v = __ldcg(a + ((i + p * 4096LL) & mask)); s += v.x + v.y + v.z + v.w;
        }
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
// 8 independent FFMA chains x 16 per iteration; thread 0 stamps clock64 and %globaltimer at start and end.
extern "C" __global__ void ffma_clock(int iters, float* out, long long* stamps) {
    long long c0 = 0; unsigned long long t0 = 0;
    if (threadIdx.x == 0) { t0 = gtimer(); c0 = clock64(); }
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
    __syncthreads();
    if (threadIdx.x == 0) {
        long long c1 = clock64(); unsigned long long t1 = gtimer();
        long long* st = stamps + 4 * blockIdx.x;
        st[0] = c1 - c0; st[1] = (long long)(t1 - t0); st[2] = smid(); st[3] = (long long)t0;
    }
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
// Pointer chases: one thread; `warm` untimed steps, then `steps` timed ones; the end stamp waits for the last load.
// plain loads (LDG.E, cached in L1 by default on sm_80+)
extern "C" __global__ void chase_l1(const unsigned* next, unsigned start, int warm, int steps, unsigned* out, long long* cycles) {
    unsigned j = start;
    for (int s = 0; s < warm; ++s) j = next[j];
    long long t0 = clock64();
    for (int s = 0; s < steps; ++s) j = next[j];
    out[0] = j;
    long long t1 = clock64();
    cycles[0] = t1 - t0;
}
extern "C" __global__ void chase_cg(const unsigned* next, unsigned start, int warm, int steps, unsigned* out, long long* cycles) {
    unsigned j = start;
    for (int s = 0; s < warm; ++s) j = __ldcg(next + j);
    long long t0 = clock64();
    for (int s = 0; s < steps; ++s) j = __ldcg(next + j);
    out[0] = j;
    long long t1 = clock64();
    cycles[0] = t1 - t0;
}
// Float reductions in L2 (atomicAdd with the result unused: RED.E.ADD.F32): each warp adds 1 to `stride` floats per
// lane, lanes `stride` floats apart (stride 4: the split-K epilogue's pattern, 16 sectors a request), in a region
// that `share` consecutive warps add to together; `passes` regions per warp.
extern "C" __global__ void red_add(float* c, long long regions, int stride, int share, int passes) {
    long long warp = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
    long long groups = (((long long)gridDim.x * blockDim.x) >> 5) / share;
    int lane = threadIdx.x & 31;
    for (int p = 0; p < passes; ++p) {
        long long r = (warp / share + (long long)p * groups) % regions;
        float* base = c + r * 32LL * stride + lane * stride;
        for (int e = 0; e < stride; ++e) atomicAdd(base + e, 1.0f);
    }
}
// Float reductions into a buffer beyond the L2: one 16-byte reduction a thread (atomicAdd of a float4,
// RED.E.ADD.F32x4, on sm_90; four 4-byte ones before), threads in address order, the grid walking the buffer.
extern "C" __global__ void red_wide(float4* buf, long long n4) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
#if __CUDA_ARCH__ >= 900
        atomicAdd(buf + i, make_float4(1.f, 1.f, 1.f, 1.f));
#else
        float* p = reinterpret_cast<float*>(buf + i);
        atomicAdd(p, 1.f); atomicAdd(p + 1, 1.f); atomicAdd(p + 2, 1.f); atomicAdd(p + 3, 1.f);
#endif
    }
}
extern "C" __global__ void chase_shared(int steps, unsigned* out, long long* cycles) {
    __shared__ unsigned nxt[1024];
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) nxt[i] = (i * 97 + 31) & 1023;
    __syncthreads();
    if (threadIdx.x != 0) return;
    unsigned j = 0;
    for (int s = 0; s < 1024; ++s) j = nxt[j];
    long long t0 = clock64();
    for (int s = 0; s < steps; ++s) j = nxt[j];
    out[0] = j;
    long long t1 = clock64();
    cycles[0] = t1 - t0;
}
"""

KERNELS = ("spin", "empty", "copy4", "read4", "smem_bw", "ffma_clock", "ffma_latency", "chase_l1", "chase_cg",
           "chase_shared", "red_add", "red_wide")
LINE = 128          # bytes per cache line
STEPS = 4096        # timed steps of every pointer chase
REPS = 20           # CUDA-event timings per bandwidth


def _median_event_time(cp, fn, reps: int = REPS, warmup: int = 3) -> tuple[float, list[float]]:
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
    return statistics.median(times), times


def _chain(cp, n_slots: int, slot_elems: int, total_elems: int, jitter_elems: int = 0, seed: int = 1):
    """A cyclic chase over ``n_slots`` slots ``slot_elems`` uint32 apart in random order (plus a random offset of
    whole 128-byte lines below ``jitter_elems``); returns (next array on the device, first slot)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    slots = rng.permutation(n_slots).astype(np.int64) * slot_elems
    if jitter_elems:
        slots += rng.integers(0, jitter_elems // 32, size=n_slots, dtype=np.int64) * 32
    assert int(slots.max()) < total_elems < 2**32
    nxt = cp.zeros(total_elems, dtype=cp.uint32)
    nxt[cp.asarray(slots)] = cp.asarray(np.roll(slots, -1).astype(np.uint32))
    return nxt, int(slots[0])


def run(log=print, state: dict | None = None) -> dict:
    """Measure everything on the current device. ``state`` (filled in place, so a failure part-way keeps what was
    measured) gets ``parameters``, ``extra`` and ``raw_times_s``; returns it."""
    import cupy as cp
    import numpy as np

    state = {} if state is None else state

    t_start = time.perf_counter()
    dev = cp.cuda.Device()
    attrs = dev.attributes
    sms = int(attrs["MultiProcessorCount"])
    clock_attr_hz = float(attrs["ClockRate"]) * 1e3
    l2 = int(attrs["L2CacheSize"])
    threads_per_sm = int(attrs["MaxThreadsPerMultiProcessor"])
    blocks_per_sm_max = int(attrs["MaxBlocksPerMultiprocessor"])
    mod = cp.RawModule(code=SRC, options=("-std=c++17",))
    k = {name: mod.get_function(name) for name in KERNELS}
    out = cp.zeros(16, dtype=cp.float32)
    cyc = cp.zeros(1, dtype=cp.int64)
    u32 = cp.zeros(1, dtype=cp.uint32)
    res: dict[str, float] = state.setdefault("parameters", {})
    extra: dict[str, Any] = state.setdefault("extra", {})
    raw: dict[str, list[float]] = state.setdefault("raw_times_s", {})
    extra.update({"clock_attribute_hz": clock_attr_hz, "l2_bytes_attribute": l2})

    def spin(seconds: float) -> None:
        k["spin"]((1,), (1,), (np.int64(int(seconds * clock_attr_hz * 1.2)),))

    # ---- DRAM read and copy: buffers of up to 2 GiB (>= 8 x L2 where memory allows)
    free = dev.mem_info[0]
    n_bytes = int(min(2 << 30, max(free // 6, 64 << 20))) // (16 << 20) * (16 << 20)
    extra["dram_buffer_bytes"] = n_bytes
    extra["dram_buffer_over_l2"] = n_bytes / l2
    n4 = n_bytes // 16
    a = cp.full(n_bytes // 4, 1.0, dtype=cp.float32)
    b = cp.empty_like(a)
    grid = sms * 8
    t, raw["copy"] = _median_event_time(cp, lambda: k["copy4"]((grid,), (512,), (a, b, np.int64(n4))))
    res["dram_copy_bandwidth_bytes_per_s"] = 2 * n_bytes / t
    t, raw["read"] = _median_event_time(
        cp, lambda: k["read4"]((grid,), (512,), (a, np.int64(n4), np.int64((1 << 62) - 1), np.int32(1), out)))
    res["dram_read_bandwidth_bytes_per_s"] = n_bytes / t
    del b
    log(f"dram: read {res['dram_read_bandwidth_bytes_per_s']:.4g} B/s, copy "
        f"{res['dram_copy_bandwidth_bytes_per_s']:.4g} B/s ({n_bytes >> 20} MiB)")

    # ---- L2 read: a power-of-two buffer of at most L2/4, 64 passes, L1 bypassed
    l2_buf = 1 << int(math.floor(math.log2(l2 / 4)))
    n4_l2 = l2_buf // 16
    passes = 64
    l2_read = lambda: k["read4"]((sms * 4,), (256,), (a, np.int64(n4_l2), np.int64(n4_l2 - 1), np.int32(passes), out))  # noqa: E731
    t, raw["l2_read"] = _median_event_time(cp, l2_read)
    res["l2_bandwidth_bytes_per_s"] = l2_buf * passes / t
    extra["l2_read_buffer_bytes"] = l2_buf

    # ---- shared memory: 128-bit loads, 512 threads x 4 blocks per SM
    iters = 4096
    t, raw["shared"] = _median_event_time(cp, lambda: k["smem_bw"]((sms * 4,), (512,), (np.int32(iters), out)))
    res["shared_bandwidth_bytes_per_s"] = sms * 4 * 512 * iters * 16 / t
    log(f"l2 {res['l2_bandwidth_bytes_per_s']:.4g} B/s, shared {res['shared_bandwidth_bytes_per_s']:.4g} B/s")

    # ---- float reductions in L2 (RED.ADD.F32): an 8 MiB buffer (in L2), 8 blocks x 256 threads per SM, 64 passes;
    # a warp's request covers stride x 4 sectors (32 lanes, stride floats apart)
    red_buf = cp.zeros((8 << 20) // 4, dtype=cp.float32)
    red_blocks, red_threads, red_passes = sms * 8, 256, 64
    warps_total = red_blocks * red_threads // 32
    for stride, share in ((1, 1), (4, 1), (4, 16)):
        regions = red_buf.size // (32 * stride)
        t, raw[f"red_s{stride}_x{share}"] = _median_event_time(cp, lambda: k["red_add"](
            (red_blocks,), (red_threads,), (red_buf, np.int64(regions), np.int32(stride), np.int32(share),
                                            np.int32(red_passes))))
        requests = warps_total * red_passes * stride
        extra[f"red_stride{stride}_share{share}_sectors_per_s"] = requests * 4 * stride / t
        extra[f"red_stride{stride}_share{share}_atomics_per_s"] = requests * 32 / t
    del red_buf
    res["l2_reduction_bytes_per_s"] = 32.0 * extra["red_stride4_share1_sectors_per_s"]
    # ---- float reductions beyond the L2: a buffer of 4 x L2, one and four passes after a flush; a pass's steady time
    # is (t(4) - t(1)) / 3 (the first pass also reads the buffer in from DRAM)
    wide_bytes = min(4 * l2, n_bytes) // (1 << 20) * (1 << 20)
    wide = cp.zeros(wide_bytes // 4, dtype=cp.float32)
    wide_pass = {}
    for p in (1, 4):
        def reduce_wide(p=p):
            k["read4"]((grid,), (512,), (a, np.int64(min(2 * l2, n_bytes) // 16), np.int64((1 << 62) - 1),
                                         np.int32(1), out))     # flush the L2 (not timed: an event after it)
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record()
            for _ in range(p):
                k["red_wide"]((sms * 8,), (256,), (wide, np.int64(wide_bytes // 16)))
            e1.record()
            e1.synchronize()
            return cp.cuda.get_elapsed_time(e0, e1) / 1e3
        for _ in range(3):
            reduce_wide()
        raw[f"red_wide_passes{p}"] = [reduce_wide() for _ in range(REPS)]
        wide_pass[p] = statistics.median(raw[f"red_wide_passes{p}"])
    del wide
    res["dram_reduction_bytes_per_s"] = wide_bytes / ((wide_pass[4] - wide_pass[1]) / 3.0)
    extra["red_wide_buffer_bytes"] = wide_bytes
    log("L2 reductions: " + ", ".join(f"stride {a} share {b_}: {extra[f'red_stride{a}_share{b_}_sectors_per_s']:.4g} "
                                      f"sectors/s, {extra[f'red_stride{a}_share{b_}_atomics_per_s']:.4g} adds/s"
                                      for a, b_ in ((1, 1), (4, 1), (4, 16))))

    # ---- latencies (one thread; clock64 cycles per step)
    def chase(kernel, nxt, start, warm, steps=STEPS) -> float:
        kernel((1,), (1,), (nxt, np.uint32(start), np.int32(warm), np.int32(steps), u32, cyc))
        cp.cuda.Device().synchronize()
        return float(cyc.get()[0]) / steps

    def flush_l2() -> None:   # read 4 x L2 of other data (clean lines, nothing to write back)
        n = min(4 * l2, n_bytes) // 16
        k["read4"]((grid,), (512,), (a, np.int64(n), np.int64((1 << 62) - 1), np.int32(1), out))

    # DRAM, TLB-friendly: one random line per 4 KiB page of a 32 MiB window, pages in random order
    window = 32 << 20
    nxt, start = _chain(cp, window // 4096, 1024, window // 4, jitter_elems=1024, seed=2)
    flush_l2()
    res["dram_latency_cycles"] = chase(k["chase_cg"], nxt, start, warm=16)
    # check: the same window chased again from the same start now hits L2 (shows the chase is what misses)
    extra["dram_window_replayed_cycles"] = chase(k["chase_cg"], nxt, start, warm=16)
    del nxt
    # DRAM with TLB misses: one random line per 64 KiB of a window of up to 1 GiB (closer spacing on small GPUs)
    wide = int(min(1 << 30, n_bytes // 2)) // (64 << 10) * (64 << 10)
    spacing = max(4096, min(65536, wide // (2 * STEPS)) // 4096 * 4096)   # enough slots for one pass
    nxt, start = _chain(cp, wide // spacing, spacing // 4, wide // 4, jitter_elems=spacing // 4, seed=3)
    flush_l2()
    extra["dram_latency_wide_cycles"] = chase(k["chase_cg"], nxt, start, warm=16)
    extra["dram_latency_wide_window_bytes"] = wide
    extra["dram_latency_wide_spacing_bytes"] = spacing
    del nxt
    # L2: lines of a quarter of the L2 in random order; one warm-up pass, then timed steps over L2 hits
    n_lines = max(l2 // 4 // LINE, 2 * STEPS)
    nxt, start = _chain(cp, n_lines, LINE // 4, n_lines * LINE // 4, seed=4)
    res["l2_latency_cycles"] = chase(k["chase_cg"], nxt, start, warm=n_lines)
    del nxt
    # L1: 128 lines (16 KiB) in random order, warmed
    nxt, start = _chain(cp, 128, LINE // 4, 128 * LINE // 4, seed=5)
    res["l1_latency_cycles"] = chase(k["chase_l1"], nxt, start, warm=256)
    del nxt
    k["chase_shared"]((1,), (32,), (np.int32(STEPS), u32, cyc))
    cp.cuda.Device().synchronize()
    res["shared_latency_cycles"] = float(cyc.get()[0]) / STEPS
    k["ffma_latency"]((1,), (1,), (np.int32(1024), out, cyc))
    cp.cuda.Device().synchronize()
    res["ffma_latency_cycles"] = float(cyc.get()[0]) / (64 * 1024)
    log("latency (cycles): " + ", ".join(f"{x} {res[f'{x}_latency_cycles']:.1f}" for x in ("l1", "shared", "l2", "dram"))
        + f"; dram, TLB misses {extra['dram_latency_wide_cycles']:.1f}; replayed window {extra['dram_window_replayed_cycles']:.1f}")

    # ---- launch overhead: queued behind a spin kernel (as the sweeps time), and from an idle stream (extra)
    reps = 200
    k["empty"]((1,), (32,), ())
    cp.cuda.Device().synchronize()
    spin(0.05)
    events = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(reps)]
    for e0, e1 in events:
        e0.record()
        k["empty"]((1,), (32,), ())
        e1.record()
    events[-1][1].synchronize()
    raw["launch"] = [cp.cuda.get_elapsed_time(e0, e1) / 1e3 for e0, e1 in events]
    res["launch_overhead_s"] = statistics.median(raw["launch"])
    extra["launch_overhead_host_s"], raw["launch_host"] = _median_event_time(
        cp, lambda: k["empty"]((1,), (32,), ()), reps=reps, warmup=20)
    log(f"launch overhead {res['launch_overhead_s']:.3g} s queued, {extra['launch_overhead_host_s']:.3g} s from idle")

    # ---- sustained clock and FP32 throughput under FFMA load: ~3 s, one full wave
    threads = 256
    bps = max(1, min(threads_per_sm // threads, blocks_per_sm_max))
    blocks = sms * bps
    stamps = cp.zeros(4 * blocks, dtype=cp.int64)
    flop_per_iter = blocks * threads * 16 * 8 * 2

    def ffma(iters: int) -> None:
        k["ffma_clock"]((blocks,), (threads,), (np.int32(iters), out, stamps))

    probe = 512
    t_probe, _ = _median_event_time(cp, lambda: ffma(probe), reps=3, warmup=1)
    iters = int(min(2**31 - 1, max(probe, probe * 0.25 / t_probe)))
    n_launch = 12
    smi: list[Any] = []
    timer = None
    try:
        from gpu.device import sample_smi  # noqa: PLC0415 - GPU edge, best effort
        timer = threading.Timer(1.2, lambda: smi.append(sample_smi()))
        timer.start()
    except Exception as exc:  # noqa: BLE001 - provenance only
        extra["smi_error"] = repr(exc)
    clocks, flops, raw["ffma"] = [], [], []
    for _ in range(n_launch):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        ffma(iters)
        e1.record()
        e1.synchronize()
        t = cp.cuda.get_elapsed_time(e0, e1) / 1e3
        st = stamps.get().reshape(blocks, 4)
        ok = st[:, 1] > 0.5 * t * 1e9          # the stamps must span the launch (else the compiler moved them)
        clocks.append(float(np.median(st[ok, 0] / st[ok, 1] * 1e9)) if ok.any() else float("nan"))
        flops.append(flop_per_iter * iters / t)
        raw["ffma"].append(t)
    if timer is not None:
        timer.join()
    half = n_launch // 2
    res["sustained_clock_hz"] = float(np.nanmedian(clocks[half:]))
    res["fp32_flop_per_s"] = float(statistics.median(flops[half:]))
    extra["sustained_clock_per_launch_hz"] = clocks
    extra["fp32_flop_per_s_per_launch"] = flops
    extra["ffma_blocks_per_sm"] = bps
    extra["ffma_iters_per_launch"] = iters
    if smi and smi[0] is not None:
        s = smi[0]
        extra["smi_during_ffma"] = {"sm_clock_hz": s.sm_clock_hz, "power_w": s.power_w,
                                    "temperature_c": s.temperature_c}
    log(f"sustained clock {res['sustained_clock_hz'] / 1e6:.0f} MHz (per launch: "
        + ", ".join(f"{c / 1e6:.0f}" for c in clocks) + f"), FP32 {res['fp32_flop_per_s']:.4g} FLOP/s")

    for lvl in ("dram", "l2", "l1", "shared"):
        extra[f"{lvl}_latency_s"] = res[f"{lvl}_latency_cycles"] / res["sustained_clock_hz"]
    # ---- a warp waiting for several loads: the latencies' spread and the cost of each further load
    from . import batch_latency
    batch = batch_latency.run(log=lambda _m: None, only=batch_latency.FIELD_CASES)
    res.update(batch_latency.timing_fields(batch))
    extra["batch_latency_dram_check"] = batch_latency.check_fields(batch, res)
    log("batch waits: " + ", ".join(f"{k} {res[k]:.4g}" for k in ("l2_latency_spread_cycles",
                                                                 "dram_latency_spread_cycles", "dram_page_bytes",
                                                                 "batch_wait_per_load_cycles")))
    extra["elapsed_s"] = time.perf_counter() - t_start
    state["parameters"] = {key: res[key] for key in TIMING_KEYS if key in res}
    return state


def provenance() -> tuple[dict, str | None]:
    """The device block (as in measurement rows) and the matched spec key (None when no spec file matches)."""
    from gpu.device import detect_device  # noqa: PLC0415 - GPU edge
    from model.spec import match_device  # noqa: PLC0415

    info = detect_device()
    spec = match_device(info.name, info.cc_major, info.cc_minor, info.sm_count)
    key = spec.key if spec is not None else None
    return info.to_json(key or "unmatched"), key


# --------------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------------


def require_gpu() -> None:
    """Raise :class:`UsageError` (one line, before any work) when no usable CUDA GPU is there."""
    from gpu.device import gpu_available  # noqa: PLC0415 - GPU edge
    ok, why = gpu_available()
    if not ok:
        raise UsageError(f"no usable CUDA GPU: {why}")


def _check_new_file(path: str | None, what: str) -> Path | None:
    if path is None:
        return None
    p = Path(path)
    if p.exists():
        raise UsageError(f"{what} {p} already exists; a measurement is never overwritten (choose a new name)")
    if not p.parent.is_dir():
        raise UsageError(f"{what} {p}: folder {p.parent} does not exist")
    return p


def _write(path: Path | None, text: str) -> None:
    if path is not None:
        with path.open("x", encoding="utf-8") as fh:   # "x": never overwrite
            fh.write(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m experiments.microbench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the raw results here (JSON; default: print them)")
    ap.add_argument("--toml", help="write the ready-to-paste [timing] table here")
    ap.add_argument("--from-json", metavar="FILE",
                    help="no GPU: rebuild the [timing] table from a stored microbench JSON (with --toml, or printed)")
    args = ap.parse_args(argv)
    try:
        out_path = _check_new_file(args.out, "--out")
        toml_path = _check_new_file(args.toml, "--toml")
        if args.from_json:
            src = Path(args.from_json)
            if not src.is_file():
                raise UsageError(f"--from-json {src}: no such file")
            try:
                stored = json.loads(src.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise UsageError(f"--from-json {src}: not JSON ({exc})") from None
            text = toml_from_result(stored)
            _write(toml_path, text)
            if toml_path is None:
                print(text, end="")
            return 0
        require_gpu()
    except UsageError as exc:
        print(f"microbench: {exc}", file=sys.stderr)
        return 2

    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    date = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    try:
        device, key = provenance()
    except Exception as exc:  # noqa: BLE001 - provenance is best effort; the numbers stand on their own
        device, key = {"error": repr(exc)}, None
    result: dict[str, Any] = {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "date": date, "device": device,
                              "spec_key": key}
    failed = None
    try:
        run(log, result)
    except Exception as exc:  # noqa: BLE001 - keep what was measured, then fail
        failed = f"{type(exc).__name__}: {exc}"
        result["error"] = failed
    result.setdefault("parameters", {})
    result["methods"] = {k: METHODS[k] for k in result["parameters"] if k in METHODS}
    import cupy as cp  # noqa: PLC0415

    name = device.get("name") or cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"].decode()
    result["device"].setdefault("name", name)
    text = timing_toml(result["parameters"], name, date[:10], result["methods"])
    spec_path = None
    if key is not None:
        from model.spec import GPU_DIR  # noqa: PLC0415
        spec_path = GPU_DIR / f"{key}.toml"
    problem = check_against_spec(text, spec_path)
    result["spec_check"] = problem or (f"the [timing] table validates against gpus/{key}.toml" if key else
                                       "no shipped spec matches this device: not validated")
    _write(out_path, json.dumps(_finite(result), indent=2, allow_nan=False) + "\n")
    if out_path is None:
        print(json.dumps(_finite(result), indent=2, allow_nan=False))
    _write(toml_path, text)
    log("")
    for k_, v in result["parameters"].items():
        log(f"{k_:34s} {v:.4g}")
    log(f"elapsed {result.get('extra', {}).get('elapsed_s', float('nan')):.1f} s; spec check: {result['spec_check']}")
    if toml_path is None:
        print(text, file=sys.stderr)
    if failed:
        log(f"microbench: failed part-way ({failed}); what was measured is in the output")
        return 1
    return 0


def _finite(x: Any) -> Any:
    """``x`` with NaN and infinities replaced by None (strict JSON)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, Mapping):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


if __name__ == "__main__":
    sys.exit(main())
