"""Kernel Tuner interop (optional extra: ``pip install -r requirements-tuning.txt``).

* :func:`export_space` / :func:`export_results`: our measurement JSONL -> Kernel Tuner cache files, one
  per (rung set, size) space, so that Kernel Tuner's simulation mode replays our H200 data without a GPU::

      python -m experiments.kerneltuner export experiments/results/h200/regtile.jsonl --out kt-cache/

* :class:`ModelStrategy`: the timing model as a Kernel Tuner search strategy (any object with a callable
  ``tune(searchspace, runner, tuning_options)`` is accepted by ``tune_kernel(strategy=...)`` in
  kernel-tuner 1.5). It ranks the whole search space with the model and evaluates configs in the order
  :class:`experiments.tune.ModelGuided` chooses, through Kernel Tuner's own ``CostFunc`` (so budgets,
  caching and results work as with its built-in strategies);
* :func:`replay`: one tuning run in simulation mode on an exported cache (any strategy, seeded);
* :func:`tune_live`: model-guided tuning of our kernels on a GPU through Kernel Tuner's CuPy backend::

      python -m experiments.kerneltuner live --size 3584 3584 3584 --rung 6 --budget 8

Tunable parameters are ``RUNG`` followed by the union of the rungs' template parameters in registry order
(a parameter a rung does not take is 0 for it); Kernel Tuner's ``time`` is in milliseconds.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import sys
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from model.registry import RUNGS, KernelConfig

KT_VERSION = "1.5"
FAILED = "RuntimeFailedConfig"


def kernel_tuner_available() -> tuple[bool, str]:
    import importlib.util
    try:
        if importlib.util.find_spec("kernel_tuner") is None:
            raise ImportError("no module named 'kernel_tuner'")
    except ImportError as exc:
        return False, f"kernel_tuner is not installed (pip install -r requirements-tuning.txt): {exc}"
    return True, ""


def param_names(rungs: Iterable[int]) -> list[str]:
    """``["RUNG", ...]``: the union of the rungs' template parameters, in registry order."""
    names: list[str] = []
    for r in sorted(set(rungs)):
        for p in RUNGS[r].params:
            if p not in names:
                names.append(p)
    return ["RUNG"] + names


def config_values(cfg: KernelConfig, names: Sequence[str]) -> tuple[int, ...]:
    p = cfg.p
    return tuple(cfg.rung if n == "RUNG" else int(p.get(n, 0)) for n in names)


def config_of(values: Sequence, names: Sequence[str]) -> KernelConfig:
    d = dict(zip(names, (int(v) for v in values)))
    r = d.pop("RUNG")
    return KernelConfig.make(r, **{k: d[k] for k in RUNGS[r].params})


def cache_key(values: Sequence) -> str:
    return ",".join(str(v) for v in values)


# ==================================================================================================
# Exporter
# ==================================================================================================


def _rows(paths: Iterable[str | Path]) -> list[dict]:
    out = []
    for p in paths:
        for line in Path(p).read_text().splitlines():
            if line.strip():
                d = json.loads(line)
                if d.get("schema") == "gemmscope.measurement" and d.get("rung", 0) != 0:
                    out.append(d)
    return out


def spaces(rows: Sequence[Mapping]) -> dict[tuple[tuple[int, ...], tuple[int, int, int]], list[Mapping]]:
    """{(rungs, size): the latest row per config} of the rows (cuBLAS rows excluded)."""
    by_size: dict[tuple[int, int, int], dict[str, Mapping]] = {}
    for r in rows:
        by_size.setdefault((r["M"], r["N"], r["K"]), {})[r["config_key"]] = r   # later rows win
    out = {}
    for size, d in by_size.items():
        rungs = tuple(sorted({r["rung"] for r in d.values()}))
        out[(rungs, size)] = list(d.values())
    return out


def cache_document(rows: Sequence[Mapping], size: tuple[int, int, int], kernel_name: str | None = None) -> dict:
    """A Kernel Tuner cache (kernel-tuner 1.5 format) of one space: one entry per config; ``time`` and
    ``times`` in ms; rows that failed (compile, launch, wrong result) become ``RuntimeFailedConfig``."""
    rungs = sorted({r["rung"] for r in rows})
    names = param_names(rungs)
    cfgs = [KernelConfig.parse(r["config_key"]) for r in rows]
    values = [config_values(c, names) for c in cfgs]
    tune_params = {n: sorted({v[j] for v in values}) for j, n in enumerate(names)}
    cache = {}
    for r, v in zip(rows, values):
        e = {n: x for n, x in zip(names, v)}
        if r["status"] == "ok":
            times = [t * 1e3 for t in r["times_s"]]
            e.update(time=r["median_s"] * 1e3, times=times, compile_time=0.0, verification_time=0.0,
                     benchmark_time=float(sum(times)), strategy_time=0, framework_time=0.0,
                     GFLOPs=r["flop_per_s"] / 1e9, timestamp=r["date"], config_key=r["config_key"])
        else:
            e.update(time=FAILED, compile_time=0.0, verification_time=0.0, benchmark_time=0.0,
                     strategy_time=0, framework_time=0.0, timestamp=r["date"], config_key=r["config_key"],
                     status=r["status"])
        cache[cache_key(v)] = e
    gpu = rows[0]["gpu"]
    return {"device_name": gpu.get("name", "unknown"),
            "kernel_name": kernel_name or ("gemmscope_" + "_".join(f"{r:02d}" for r in rungs)),
            "problem_size": list(size), "tune_params_keys": names, "tune_params": tune_params,
            "objective": "time", "cache": cache}


def export_space(rows: Sequence[Mapping], size, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cache_document(rows, tuple(size)), indent=0) + "\n")
    return path


def export_results(paths: Sequence[str | Path], out_dir: str | Path) -> list[Path]:
    """One cache file per (rung set, size) space of the result files: ``<stem>_<rungs>_<M>x<N>x<K>.json``."""
    out = []
    for p in paths:
        for (rungs, size), rows in sorted(spaces(_rows([p])).items()):
            name = f"{Path(p).stem}_{'-'.join(f'{r:02d}' for r in rungs)}_{size[0]}x{size[1]}x{size[2]}.json"
            out.append(export_space(rows, size, Path(out_dir) / name))
    return out


def read_cache_times(path: str | Path) -> dict[str, float | None]:
    """{config key: time in seconds (None = failed)} of a cache file, read by Kernel Tuner itself."""
    from kernel_tuner.util import read_cache
    d = read_cache(str(path), open_cache=False)
    names = d["tune_params_keys"]
    out = {}
    for e in d["cache"].values():
        key = config_of([e[n] for n in names], names).key
        out[key] = None if "__error__" in e else float(e["time"]) / 1e3
    return out


# ==================================================================================================
# The strategy
# ==================================================================================================


class ModelStrategy:
    """The timing model as a Kernel Tuner strategy (``tune_kernel(..., strategy=ModelStrategy(...))``).

    ``gpu``: spec key or :class:`~model.spec.GPUSpec` whose performance is predicted; ``size``: the
    (M, N, K) the kernel is tuned for (default: the tuning run's ``problem_size``); ``first``: configs
    taken in the model's order before refining; ``cross_validated``: predict each rung with the
    parameters fitted without it (to score the strategy on data the calibration saw)."""

    def __init__(self, gpu="h200", size: Sequence[int] | None = None, first: int = 4,
                 cross_validated: bool = False) -> None:
        self.gpu, self.size, self.first, self.cross_validated = gpu, size, first, cross_validated
        self.order: list[str] = []

    def tune(self, searchspace, runner, tuning_options):
        from kernel_tuner.strategies.common import CostFunc
        from kernel_tuner.util import StopCriterionReached

        from experiments.tune import ModelGuided, rank
        from model.spec import load_gpu

        spec = load_gpu(self.gpu) if isinstance(self.gpu, str) else self.gpu
        names = list(searchspace.tune_params.keys())
        configs = list(searchspace.list)
        cfgs = [config_of(v, names) for v in configs]
        size = self.size or tuple(runner.kernel_options.problem_size)
        pred = rank(spec, cfgs, [tuple(int(x) for x in size)], cross_validated=self.cross_validated)[:, 0]
        guide = ModelGuided(cfgs, pred, first=self.first)
        cost_func = CostFunc(searchspace, tuning_options, runner)
        budget = tuning_options.get("max_fevals") or len(configs)
        self.order = []
        try:
            while len(guide.measured) < budget:
                i = guide.next()
                if i is None:
                    break
                cost = cost_func(list(configs[i]), check_restrictions=False)
                guide.record(i, cost / 1e3 if cost is not None and math.isfinite(cost) and cost < 1e300 else None)
        except StopCriterionReached:
            pass
        self.order = [config_of([r[n] for n in names], names).key for r in cost_func.results]
        return cost_func.results


# ==================================================================================================
# Simulation mode and the live GPU path
# ==================================================================================================


def replay(cache_path: str | Path, strategy, *, max_fevals: int, seed: int = 0,
           strategy_options: Mapping | None = None) -> list[tuple[str, float | None]]:
    """One simulated tuning run: ``[(config key, time s or None)]`` of the distinct configs in the
    order ``strategy`` (a Kernel Tuner strategy name or object) evaluated them."""
    import logging
    import warnings

    from kernel_tuner import tune_kernel
    from kernel_tuner.util import infer_restrictions_from_cache, read_cache

    cache = read_cache(str(cache_path), open_cache=False)
    names = cache["tune_params_keys"]
    random.seed(seed)
    np.random.seed(seed)
    opts = dict(strategy_options or {})
    opts["max_fevals"] = max_fevals
    logging.getLogger().setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, _ = tune_kernel(cache["kernel_name"], "", tuple(cache["problem_size"]), [], cache["tune_params"],
                                 restrictions=[infer_restrictions_from_cache(cache)], cache=str(cache_path),
                                 simulation_mode=True, strategy=strategy, strategy_options=opts,
                                 quiet=True, verbose=False)
    seen: dict[str, float | None] = {}
    for r in results:
        key = config_of([r[n] for n in names], names).key
        if key in seen:
            continue
        t = r.get("time")
        seen[key] = float(t) / 1e3 if isinstance(t, (int, float)) and "__error__" not in r else None
    return list(seen.items())


def tune_live(size: Sequence[int], rung: int = 6, budget: int = 8, gpu: str | None = None,
              grid: Mapping[str, Sequence[int]] | None = None, cache: str | None = None):
    """Model-guided tuning of one register-tiling rung (04-06) on the GPU through Kernel Tuner's CuPy
    backend (Kernel Tuner compiles, launches, times and checks against cuBLAS's result itself; these
    rows are Kernel Tuner's, not our sweep rows). Configs whose shared memory exceeds 48 KiB are left
    out: the CuPy backend does not raise the dynamic shared-memory limit."""
    from kernel_tuner import tune_kernel

    from experiments.tune import DEFAULT_GRIDS
    from gpu import device_spec
    from model.registry import geometry, is_valid

    import cupy as cp

    spec = device_spec()
    M, N, K = (int(x) for x in size)
    g0 = dict(grid or DEFAULT_GRIDS[rung])
    src = (Path(__file__).resolve().parent.parent / "gpu" / "kernels" / RUNGS[rung].file).read_text()
    tune_params = {"RUNG": [rung], **{n: list(g0[n]) for n in RUNGS[rung].params}}
    threads = sorted({geometry(KernelConfig.make(rung, **dict(zip(RUNGS[rung].params, v)))).threads
                      for v in itertools.product(*(g0[n] for n in RUNGS[rung].params))})
    tune_params["block_size_x"] = [t for t in threads if 0 < t <= 1024]

    def ok(p):
        c = KernelConfig.make(rung, **{n: p[n] for n in RUNGS[rung].params})
        g = geometry(c)
        return is_valid(c, spec) and g.smem_bytes <= 48 * 1024 and p["block_size_x"] == g.threads

    rng = np.random.default_rng(0)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    C = np.zeros((M, N), dtype=np.float32)
    ref = (cp.asarray(A.astype(np.float64)) @ cp.asarray(B.astype(np.float64))).get().astype(np.float32)
    args = [A, B, C, np.int32(M), np.int32(N), np.int32(K)]
    kname = f"{RUNGS[rung].kernel}<{','.join(RUNGS[rung].params)}>"
    smem = {"size": lambda p: geometry(KernelConfig.make(rung, **{n: p[n] for n in RUNGS[rung].params})).smem_bytes}
    return tune_kernel(kname, src, (N, M), args, tune_params, restrictions=ok, grid_div_x=["BN"], grid_div_y=["BM"],
                       block_size_names=["block_size_x"], smem_args=smem, lang="cupy",
                       answer=[None, None, ref, None, None, None], atol=1e-2 * math.sqrt(K),
                       strategy=ModelStrategy(spec, (M, N, K)), strategy_options={"max_fevals": budget},
                       cache=cache, compiler_options=["-std=c++17"],
                       defines={"kernel_tuner": 1})   # no #define per parameter: they are template names


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.kerneltuner", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export", help="write Kernel Tuner cache files of measurement JSONL files")
    e.add_argument("files", nargs="+", type=Path)
    e.add_argument("--out", type=Path, default=Path("kt-cache"))
    s = sub.add_parser("replay", help="one simulated tuning run on a cache file")
    s.add_argument("cache", type=Path)
    s.add_argument("--strategy", default="model")
    s.add_argument("--budget", type=int, default=8)
    s.add_argument("--seed", type=int, default=0)
    lv = sub.add_parser("live", help="model-guided tuning on the GPU through Kernel Tuner's CuPy backend")
    lv.add_argument("--size", nargs=3, type=int, required=True)
    lv.add_argument("--rung", type=int, default=6)
    lv.add_argument("--budget", type=int, default=8)
    lv.add_argument("--cache", help="Kernel Tuner cache file to write")
    a = ap.parse_args(argv)
    ok, why = kernel_tuner_available()
    if not ok:
        print(f"error: {why}", file=sys.stderr)
        return 2
    for f in getattr(a, "files", []):
        if not f.is_file():
            print(f"error: {f}: no such file", file=sys.stderr)
            return 2
    if a.cmd == "export":
        for p in export_results(a.files, a.out):
            print(p)
        return 0
    if a.cmd == "replay":
        if not a.cache.is_file():
            print(f"error: {a.cache}: no such file", file=sys.stderr)
            return 2
        strat = ModelStrategy("h200") if a.strategy == "model" else a.strategy
        order = replay(a.cache, strat, max_fevals=a.budget, seed=a.seed)
        best = math.inf
        for k, t in order:
            best = min(best, t or math.inf)
            print(f"{k:<40} {'failed' if t is None else f'{t * 1e3:.4f} ms'}   best {best * 1e3:.4f} ms")
        return 0
    res, env = tune_live(a.size, a.rung, a.budget, cache=a.cache)
    ok_rows = [r for r in res if isinstance(r.get("time"), float)]
    if ok_rows:
        b = min(ok_rows, key=lambda r: r["time"])
        gf = 2.0 * math.prod(a.size) / (b["time"] * 1e-3) / 1e9
        print(f"Kernel Tuner + model: best {b} -> {gf:.0f} GFLOP/s after {len(res)} evaluations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
