"""Throughput of the timing model's vectorised core (a script, not a test).

    python benchmarks/bench_timing.py [--repeats 5] [--sizes 100] [--gpu h200]

1. Builds the per-config arrays (:func:`model.timing._arrays_for`: counts and compiler facts of the whole
   space at once) of every register-tiling config (rungs 04-06) in the shipped
   ``experiments/results/h200/regtile.jsonl`` (timed once: this is the part a sweep pays once per config,
   not per size), and, for comparison, the per-config profiles (:func:`model.timing.profile`) one by one;
2. times :func:`model.timing.evaluate` over every config x ``--sizes`` problem sizes (half square,
   log-spaced 64..16384; half random rectangular 1..8192), i.e. >= 100,000 (config, size) pairs, as
   the median of ``--repeats`` runs, and prints predictions per second. Goal: >= 100,000 per second.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from model.registry import KernelConfig  # noqa: E402
from model.spec import load_gpu  # noqa: E402
from model.timing import _arrays_for, evaluate, load_params, profile  # noqa: E402

REGTILE = ROOT / "experiments" / "results" / "h200" / "regtile.jsonl"


def regtile_configs() -> list[KernelConfig]:
    """Distinct configs of rungs 04-06 in the shipped register-tiling sweep, in file order."""
    seen: dict[str, KernelConfig] = {}
    for line in REGTILE.read_text().splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        if d.get("schema") == "gemmscope.measurement" and d.get("rung") in (4, 5, 6):
            seen.setdefault(d["config_key"], KernelConfig.parse(d["config_key"]))
    return list(seen.values())


def sizes_for(n: int, seed: int = 0) -> np.ndarray:
    """n problem sizes: half square (log-spaced 64..16384), half random rectangular (1..8192)."""
    rng = np.random.default_rng(seed)
    square = np.geomspace(64, 16384, n // 2).astype(np.int64)
    rect = rng.integers(1, 8193, size=(n - square.size, 3))
    return np.concatenate([np.repeat(square[:, None], 3, axis=1), rect]).astype(np.int64)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--sizes", type=int, default=100)
    ap.add_argument("--gpu", default="h200")
    args = ap.parse_args()

    gpu = load_gpu(args.gpu)
    prm = load_params()
    cfgs = regtile_configs()

    t0 = time.perf_counter()
    (pa,), _ = _arrays_for(gpu, cfgs, None)
    t_arr = time.perf_counter() - t0
    t0 = time.perf_counter()
    for c in cfgs:                               # the single-config path, for comparison
        profile(c, gpu.arch)
    t_prof = time.perf_counter() - t0

    sizes = sizes_for(args.sizes)
    nc, ns = len(cfgs), len(sizes)
    rep = pa[np.repeat(np.arange(nc), ns)]                        # every config x every size
    M, N, K = (np.tile(sizes[:, i], nc) for i in range(3))
    n = nc * ns

    evaluate(gpu, rep, M, N, K, prm=prm)                           # warm-up
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        out = evaluate(gpu, rep, M, N, K, prm=prm)
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    assert out["time_s"].shape == (n,) and np.all(np.isfinite(out["time_s"])) and np.all(out["time_s"] > 0)

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}, numpy {np.__version__}")
    print(f"GPU spec: {gpu.name} ({gpu.key}); parameters: {prm.calibrated_on}")
    print(f"configs: {nc} register-tiling configs (rungs 04-06) of {REGTILE.relative_to(ROOT)}")
    print(f"_arrays_for (the whole space at once) {t_arr * 1e3:.1f} ms; profile() config by config "
          f"{t_prof * 1e3:.1f} ms")
    print(f"model.timing.evaluate over {nc} configs x {ns} sizes = {n:,} (config, size) pairs: "
          f"median {med * 1e3:.1f} ms of {args.repeats} runs "
          f"({', '.join(f'{t * 1e3:.1f}' for t in times)} ms)")
    rate = n / med
    print(f"=> {rate:,.0f} predictions per second (goal >= 100,000: {'met' if rate >= 1e5 else 'NOT met'})")
    return 0 if rate >= 1e5 else 1


if __name__ == "__main__":
    sys.exit(main())
