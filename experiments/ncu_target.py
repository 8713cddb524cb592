"""Launch one config twice (a warm-up, then the launch to profile) for Nsight Compute.

    python -m experiments.ncu_target CONFIG_KEY M N K [--seed S]

``experiments/ncu_run.py`` runs this under ``ncu``. The inputs are made on the host (numpy) and copied
to the GPU, so the only kernels this process launches are the two launches of the config itself: for
a ladder kernel, ``ncu -k regex:<kernel> --launch-skip 1 --launch-count 1`` selects the second; for
cuBLAS (rung 00), whose call may launch more than one kernel, ncu profiles all of them and the
second half belongs to the second call.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from model.errors import GemmscopeError
from model.registry import KernelConfig, grid, validate_size


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.ncu_target", description=__doc__.split("\n\n")[0])
    ap.add_argument("config_key", help="e.g. 04:BM=128,BN=128,BK=8,TM=8,TN=8 (or 00: for cuBLAS)")
    ap.add_argument("M", type=int)
    ap.add_argument("N", type=int)
    ap.add_argument("K", type=int)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args(argv)
    try:
        from gpu.device import cupy_module, device_spec  # noqa: PLC0415
        from gpu.launcher import check_tf32_off, compile_config  # noqa: PLC0415

        cfg = KernelConfig.parse(args.config_key)
        M, N, K = validate_size(args.M, args.N, args.K)
        cp = cupy_module()
        rng = np.random.default_rng(args.seed)
        A = cp.asarray(rng.random((M, K), dtype=np.float32) * 2 - 1)   # host -> device copy: no kernel
        B = cp.asarray(rng.random((K, N), dtype=np.float32) * 2 - 1)
        C = cp.empty((M, N), dtype=cp.float32)
        if cfg.rung == 0:
            check_tf32_off()

            def launch() -> None:
                cp.matmul(A, B, out=C)
        else:
            ck = compile_config(cfg, device_spec())
            g = grid(cfg, M, N)
            kargs = (A, B, C, np.int32(M), np.int32(N), np.int32(K))

            def launch() -> None:
                ck.kernel(g, ck.block, kargs, shared_mem=ck.dynamic_smem_bytes)
        launch()                                  # warm-up (skipped by ncu)
        cp.cuda.Device().synchronize()
        launch()                                  # the profiled launch
        cp.cuda.Device().synchronize()
    except GemmscopeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"ncu_target: launched {cfg.label} at {M}x{N}x{K} twice", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
