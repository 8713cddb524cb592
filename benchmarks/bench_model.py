"""Throughput of the performance model (a script, not a test).

    python benchmarks/bench_model.py [--repeats 5] [--sizes 200]

Times, each as the median of ``--repeats`` runs:

1. ``model.roofline.predict_many`` over every valid register-tiling config of rung 04 on the H200
   (BM, BN in {32, 64, 128, 256}, BK in {8, 16, 32}, TM, TN in {2, 4, 8, 16}: 573 configs) x ``--sizes``
   problem sizes (573 x 200 = 114,600 (config, size) pairs by default). Goal: >= 100,000 predictions/s.
2. the single-config ``model.roofline.predict`` (full Prediction object, validation and occupancy included);
3. the default predict table: every classic config (cuBLAS excluded) at 4096^3 on the RTX 4060 and the H200.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from model.registry import classic_configs, grid_configs  # noqa: E402
from model.roofline import predict, predict_many  # noqa: E402
from model.spec import load_gpu  # noqa: E402

REG_GRID = dict(BM=[32, 64, 128, 256], BN=[32, 64, 128, 256], BK=[8, 16, 32], TM=[2, 4, 8, 16], TN=[2, 4, 8, 16])


def median_time(fn, repeats: int) -> tuple[float, list[float]]:
    fn()  # warm-up (imports, caches)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def sizes_for(n: int, seed: int = 0) -> list[tuple[int, int, int]]:
    """n problem sizes: half square (log-spaced 64..16384), half random rectangular."""
    rng = np.random.default_rng(seed)
    square = np.unique(np.geomspace(64, 16384, n // 2).astype(int))
    out = [(int(m), int(m), int(m)) for m in square]
    while len(out) < n:
        out.append(tuple(int(v) for v in rng.integers(1, 8193, 3)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--sizes", type=int, default=200)
    args = ap.parse_args()

    h200, rtx4060 = load_gpu("h200"), load_gpu("rtx4060")
    print(f"python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
          f"median of {args.repeats} runs")

    # 1. vectorised
    cfgs = list(grid_configs(4, h200, **REG_GRID))
    sizes = sizes_for(args.sizes)
    pairs = len(cfgs) * len(sizes)
    med, times = median_time(lambda: predict_many(h200, cfgs, sizes), args.repeats)
    out = predict_many(h200, cfgs, sizes)
    assert out["time_s"].shape == (len(cfgs), len(sizes)) and np.all(np.isfinite(out["time_s"]))
    rate = pairs / med
    print(f"predict_many  H200, {len(cfgs)} rung-04 configs x {len(sizes)} sizes = {pairs:,} predictions: "
          f"{med * 1e3:.2f} ms -> {rate:,.0f} predictions/s "
          f"(runs: {', '.join(f'{t * 1e3:.2f}' for t in times)} ms)")

    # 2. single config
    n_single = 500
    single = [(cfgs[i % len(cfgs)], sizes[i % len(sizes)]) for i in range(n_single)]
    med1, _ = median_time(lambda: [predict(h200, c, *s) for c, s in single], args.repeats)
    print(f"predict       H200, {n_single} single calls: {med1 * 1e3:.1f} ms -> {n_single / med1:,.0f} predictions/s "
          f"({med1 / n_single * 1e6:.0f} us each)")

    # 3. the default table
    table = [c for c in classic_configs() if c.rung != 0]

    def default_table():
        return [predict(g, c, 4096, 4096, 4096) for g in (rtx4060, h200) for c in table]

    med3, _ = median_time(default_table, args.repeats)
    print(f"default table {len(table)} classic configs x 2 GPUs (RTX 4060, H200) at 4096^3 = {2 * len(table)} "
          f"predictions: {med3 * 1e3:.2f} ms")
    keys = [g.key for g in (rtx4060, h200) for _ in table]
    for key, p in zip(keys, default_table()):
        print(f"    {key:8s} {p.config.label:30s} {p.flop_per_s / 1e12:7.2f} TFLOP/s  bound {p.bound:6s} "
              f"{p.occupancy.blocks_per_sm} blocks/SM ({p.occupancy.limiter}), {p.waves} waves")

    goal = 100_000
    print(f"goal >= {goal:,} predictions/s with predict_many: {'met' if rate >= goal else 'NOT met'}")
    return 0 if rate >= goal else 1


if __name__ == "__main__":
    raise SystemExit(main())
