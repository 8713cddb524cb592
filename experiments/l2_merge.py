"""Does the L2 look up a sector once for requests from many SMs that arrive together? A target for Nsight Compute.

    python -m experiments.l2_merge --groups G [--mib 4] [--blocks 132] [--launches 2]

``blocks`` blocks of 1024 threads (one an SM) each read the same ``mib`` MiB buffer once, through the L2 only
(``ld.global.cg``: no L1 sharing), in 128-byte lines, thread by thread. Block ``b`` starts at line
``(b % G) * lines / G`` and wraps around: with ``G = 1`` every SM asks for the same sector at about the same time;
with ``G = blocks`` no two do. The kernel is launched ``launches`` times (profile the last: with ncu's
``--cache-control none`` the buffer is then in the L2; with ``--cache-control all`` the L2 is flushed before it).
Each block's sum is checked against the host's (float64) so that a broken read shows; exits 1 if any differs.

Why (issue 8, the L2 bytes of three classic configs 15-18 % above ``lts__t_bytes``; logs/lrc-2026-12-01): the L2
request coalescer merges read requests to one sector that arrive together, and past it the L2 looks up fewer
sectors from the L1s than it receives. Two readings: (i) merging in time whatever the sector's state (every
``G = 1`` run below its requests, warm or cold), (ii) requests that find the sector's miss still pending wait on
it without a lookup of their own (only the cold ``G = 1`` run below its requests). Requests: ``blocks`` x ``mib``
MiB / 32 B read sectors.
"""
from __future__ import annotations

import argparse
import sys

SRC = r"""
extern "C" __global__ void merge_read(const float* __restrict__ x, int lines, int groups, float* out) {
    // one warp reads one 128-byte line (a float a lane); the block's 32 warps walk the lines from the block's start
    int start = (int)(((long long)(blockIdx.x % groups) * lines) / groups);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float acc = 0.f;
    for (int i = warp; i < lines; i += blockDim.x >> 5) {
        int l = i + start;
        if (l >= lines) l -= lines;
        acc += __ldcg(x + (long long)l * 32 + lane);
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    __shared__ float part[32];
    if (lane == 0) part[warp] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0.f;
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) s += part[w];
        out[blockIdx.x] = s;
    }
}
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", type=int, required=True, help="start offsets (1: every block in step)")
    ap.add_argument("--mib", type=int, default=4, help="buffer size, MiB (default 4)")
    ap.add_argument("--blocks", type=int, default=132, help="blocks of 1024 threads (default 132: one an H200 SM)")
    ap.add_argument("--launches", type=int, default=2, help="launches (profile the last; default 2)")
    a = ap.parse_args(argv)
    for name in ("groups", "mib", "blocks", "launches"):
        if getattr(a, name) < 1:
            print(f"l2_merge: --{name} must be at least 1, got {getattr(a, name)}", file=sys.stderr)
            return 2
    if a.groups > a.blocks:
        print(f"l2_merge: --groups {a.groups} is more than --blocks {a.blocks}", file=sys.stderr)
        return 2
    import cupy as cp
    import numpy as np
    lines = a.mib * 2**20 // 128
    rng = np.random.default_rng(7)
    host = rng.integers(-4, 5, size=lines * 32).astype(np.float32)     # small integers: the sum is exact in float32
    x = cp.asarray(host)
    out = cp.full(a.blocks, np.nan, dtype=cp.float32)
    fn = cp.RawModule(code=SRC).get_function("merge_read")
    for _ in range(a.launches):
        out.fill(np.nan)
        fn((a.blocks,), (1024,), (x, np.int32(lines), np.int32(a.groups), out))
    cp.cuda.runtime.deviceSynchronize()
    want = float(host.astype(np.float64).sum())
    got = cp.asnumpy(out).astype(np.float64)
    bad = int(np.sum(got != want))
    print(f"l2_merge: groups {a.groups}, {a.mib} MiB, {a.blocks} blocks: requests {a.blocks * lines * 4} sectors; "
          f"sums {'ok' if bad == 0 else f'WRONG in {bad} blocks'}")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
