"""Model-guided tuning: the fastest config for one problem size in a handful of measurements.

    python -m experiments.tune --size 3584 3584 3584 [--rungs 4 5 6] [--budget 8] [--gpu h200] [--dry-run]
    python -m experiments.tune --size 256 8192 4096 --sweep tune_full      # the space of a sweep file
    python -m experiments.tune --size 3584 3584 3584 --gpus all            # measure on every GPU (Dask)

1. **Rank**: every valid config of the chosen rungs (the register-tiling grid of ``regtile.toml`` for
   rungs 04-06 by default, or the configs of ``--sweep``) is predicted by the timing model
   (:func:`rank`, vectorised; per-config counts from :mod:`model.counts`).
2. **Measure** the model's best ``--first`` configs (default half the budget), verified and timed
   exactly like a sweep (:func:`measure_tasks`: same backend, same :func:`experiments.sweep.make_row`,
   cuBLAS timed in the same run), each row appended to ``experiments/results/<gpu>/tune.jsonl`` with
   the model's prediction beside it (``row["model"]``).
3. **Refine** (:class:`ModelGuided`): the model's times are rescaled per rung by what was measured in
   this run (the geometric mean of measured / predicted of that rung's measured configs; a uniform scale
   would change nothing, a per-rung one re-ranks the rungs), and the rest of the budget alternates
   between the best rescaled neighbour of the current winner (one parameter one grid step away, or the
   same tile on another rung) and the best rescaled config overall.
4. Print the winner, its GFLOP/s, its share of cuBLAS in the same run and how many configs were measured.

``--gpus all|0,1`` or ``--scheduler ADDRESS`` measures on the Dask workers a sweep uses
(:class:`experiments.distributed.DaskMeasure`): each batch's configs in parallel, one worker per GPU;
this process writes every row, and each row's ``gpu`` block names the device that measured it.

``--dry-run`` prints the ranked list and needs no GPU. :func:`measure_tasks` takes a list of
:class:`~experiments.sweep.Task` and a backend, so another engine (e.g. a Dask cluster of GPUs) can run
the same measurement. Configs already in the output file for this GPU and size are reused, never
measured twice (an interrupted tune resumes).
"""
from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from model.errors import ConfigError, GemmscopeError
from model.registry import RUNGS, KernelConfig, is_valid, rung

from .sweep import (RESULTS_DIR, RowWriter, RunOptions, SweepError, Task, done_keys, load_sweep, make_row,
                    parse_size, read_results, repair)

TUNE_SWEEP = "tune"

DEFAULT_GRIDS: dict[int, dict[str, tuple[int, ...]]] = {
    1: {"BX": (8, 16, 32, 64, 128), "BY": (8, 16, 32, 64, 128), "COALESCED": (0, 1)},
    2: {"BM": (8, 16, 32), "BN": (8, 16, 32), "BK": (8, 16, 32)},
    3: {"BM": (32, 64, 128, 256), "BN": (32, 64, 128, 256), "BK": (8, 16, 32), "TM": (2, 4, 8, 16)},
    **{r: {"BM": (32, 64, 128, 256), "BN": (32, 64, 128, 256), "BK": (8, 16, 32), "TM": (2, 4, 8, 16),
           "TN": (2, 4, 8, 16)} for r in (4, 5, 6)},
}
"""Default parameter grid per rung: the shipped sweeps' grids (blocks.toml, regtile.toml)."""
DEFAULT_RUNGS = (4, 5, 6)


# ==================================================================================================
# The space and its ranking
# ==================================================================================================


def space(gpu, rungs: Sequence[int] = DEFAULT_RUNGS, sweep: str | None = None) -> list[KernelConfig]:
    """Every config of ``rungs`` valid on ``gpu``: from :data:`DEFAULT_GRIDS`, or the configs of the
    sweep file ``sweep`` (its sizes ignored)."""
    rungs = tuple(dict.fromkeys(rung(r).number for r in rungs))
    if 0 in rungs:
        raise SweepError("rung 00 (cuBLAS) is the reference, measured in every run: not a tuning candidate")
    if sweep is not None:
        s = load_sweep(sweep)
        out: dict[str, KernelConfig] = {}
        for g in s.groups:
            for c in g.configs(gpu)[0]:
                if c.rung in rungs:
                    out.setdefault(c.key, c)
        return list(out.values())
    out = []
    for r in rungs:
        if r not in DEFAULT_GRIDS:
            raise SweepError(f"{RUNGS[r].label} has no default grid here: give a sweep file of its configs (--sweep)")
        names = RUNGS[r].params
        grid = DEFAULT_GRIDS[r]
        for values in itertools.product(*(grid[n] for n in names)):
            c = KernelConfig(r, tuple(zip(names, values)))
            if is_valid(c, gpu):
                out.append(c)
    return out


def rank(gpu, cfgs: Sequence[KernelConfig], sizes, cross_validated: bool = False, prm=None) -> np.ndarray:
    """Predicted times (s) of every config at every size: array (len(cfgs), len(sizes)); ``sizes`` is
    one (M, N, K) or a list of them. ``cross_validated`` predicts each rung with the parameters fitted
    without it (for scoring on data the calibration saw)."""
    from model import timing

    s = np.asarray(sizes, dtype=np.int64).reshape(-1, 3)
    (pa,), _ = timing._arrays_for(gpu, list(cfgs), None)
    n = len(cfgs)
    loro = timing.load_loro_params() if cross_validated and prm is None else {}
    if not loro:
        groups = [(prm, np.arange(n))]
    else:
        rr = np.array([c.rung for c in cfgs])
        groups = [(loro.get(q), np.flatnonzero(rr == q)) for q in sorted(set(rr.tolist()))]
    t = np.empty((n, len(s)), dtype=np.float64)
    for q_prm, idx in groups:      # one size at a time: the configs' arrays are not repeated per size
        sub = pa[idx]
        for j, (M, N, K) in enumerate(s.tolist()):
            rows = np.ones(len(idx), dtype=np.int64)
            t[idx, j] = timing.evaluate(gpu, sub, M * rows, N * rows, K * rows, prm=q_prm)["time_s"]
    return t


# ==================================================================================================
# The search: which config to measure next
# ==================================================================================================


_PARAM_COLUMNS = ("BM", "BN", "BK", "TM", "TN", "BX", "BY", "COALESCED")


class ModelGuided:
    """Chooses the next config to measure from the model's predictions and what was measured so far.

    ``first`` configs in the model's order, then (see the module doc) per-rung rescaled predictions,
    alternating between the winner's neighbours and the whole space. Deterministic; configs predicted
    unlaunchable (infinite time) are never proposed."""

    def __init__(self, cfgs: Sequence[KernelConfig], predicted_s: Sequence[float], first: int = 4) -> None:
        self.cfgs = list(cfgs)
        self.pred = np.asarray(predicted_s, dtype=np.float64).reshape(-1)
        if len(self.pred) != len(self.cfgs):
            raise ValueError("one prediction per config")
        self.first = max(1, int(first))
        self.rungs = np.array([c.rung for c in self.cfgs])
        vals = np.array([[c.p.get(p, -1) for p in _PARAM_COLUMNS] for c in self.cfgs], dtype=np.int64).reshape(-1, len(_PARAM_COLUMNS))
        # each parameter as its index among the values the space takes (neighbours = one step apart)
        self.idx = np.zeros_like(vals)
        for j in range(vals.shape[1]):
            u = np.unique(vals[:, j])
            self.idx[:, j] = np.searchsorted(u, vals[:, j])
        self.measured: dict[int, float | None] = {}
        self.order = np.argsort(self.pred, kind="stable")

    def record(self, i: int, time_s: float | None) -> None:
        """A measurement of config ``i`` (None or non-finite: it failed)."""
        self.measured[int(i)] = time_s if time_s is not None and math.isfinite(time_s) and time_s > 0 else None

    def corrected(self) -> np.ndarray:
        """Predictions rescaled per rung by this run's measured / predicted (geometric mean)."""
        ok = [(i, t) for i, t in self.measured.items() if t is not None and math.isfinite(self.pred[i])]
        if not ok:
            return self.pred.copy()
        logr = {i: math.log(t / self.pred[i]) for i, t in ok}
        overall = float(np.mean(list(logr.values())))
        scale = np.full(len(self.pred), overall)
        for q in set(self.rungs.tolist()):
            mine = [v for i, v in logr.items() if self.rungs[i] == q]
            if mine:
                scale[self.rungs == q] = float(np.mean(mine))
        return self.pred * np.exp(scale)

    def neighbours(self, w: int) -> np.ndarray:
        """Configs one grid step from ``w`` in one parameter (same rung), or the same tile on another rung."""
        d = self.idx - self.idx[w]
        nz = (d != 0).sum(axis=1)
        same_rung = self.rungs == self.rungs[w]
        step = same_rung & (nz == 1) & (np.abs(d).sum(axis=1) == 1)
        other_rung = (~same_rung) & (nz == 0)
        return np.flatnonzero(step | other_rung)

    def next(self) -> int | None:
        """Index of the next config to measure, or None when every launchable config was measured."""
        cand = np.array([i for i in range(len(self.pred)) if i not in self.measured and math.isfinite(self.pred[i])],
                        dtype=np.int64)
        if cand.size == 0:
            return None
        n = len(self.measured)
        ok = {i: t for i, t in self.measured.items() if t is not None}
        if n < self.first or not ok:
            return int(next(i for i in self.order if i not in self.measured and math.isfinite(self.pred[i])))
        score = self.corrected()
        if (n - self.first) % 2 == 0:
            w = min(ok, key=ok.get)
            nb = np.array([i for i in self.neighbours(w) if i not in self.measured and math.isfinite(self.pred[i])],
                          dtype=np.int64)
            if nb.size:
                return int(nb[np.argmin(score[nb])])
        return int(cand[np.argmin(score[cand])])

    def run(self, measure: Callable[[int], float | None], budget: int) -> list[int]:
        """Measure up to ``budget`` configs one by one with ``measure(i) -> time_s or None``."""
        done = []
        while len(done) < budget:
            i = self.next()
            if i is None:
                break
            self.record(i, measure(i))
            done.append(i)
        return done


# ==================================================================================================
# Measuring (one function: a list of tasks and a backend)
# ==================================================================================================


@dataclass
class Problems:
    """Inputs and the cuBLAS measurement per size, kept between calls of :func:`measure_tasks`."""

    seed: int
    by_size: dict = field(default_factory=dict)

    def get(self, backend, size, opts: RunOptions):
        if size not in self.by_size:
            problem = backend.problem(*size, self.seed + len(self.by_size))
            self.by_size[size] = (problem, backend.cublas(problem, **opts.measure_opts()))
        return self.by_size[size]

    def free(self, backend) -> None:
        for problem, _ in self.by_size.values():
            backend.free(problem)
        self.by_size.clear()


def measure_tasks(tasks: Sequence[Task], backend, opts: RunOptions | None = None, *, problems: Problems | None = None,
                  log: Callable[[str], None] = lambda s: None,
                  on_result: Callable[[Task, object, object], None] | None = None) -> list[tuple[Task, object, object]]:
    """Verify and time every task on ``backend`` exactly as a sweep does (compile up front, inputs and
    cuBLAS once per size, :meth:`backend.run`); returns ``[(task, measurement, cublas measurement)]``
    in task order. Pass ``problems`` to keep the inputs (and the cuBLAS time) across calls, and
    ``on_result(task, measurement, cublas)`` to record each result as soon as it exists (a lost device
    then loses no measurement)."""
    from gpu.errors import DeviceLost  # noqa: PLC0415

    opts = opts or RunOptions()
    own = problems is None
    problems = problems or Problems(seed=int(time.time()) % (2**31))
    errors = backend.precompile([t.config for t in tasks if t.config.rung != 0], opts.workers, log)
    if errors:
        log(f"{len(errors)} of {len(tasks)} configs failed to compile")
    out = []
    try:
        for t in tasks:
            _, cublas = problems.get(backend, t.size, opts)
            problem = problems.by_size[t.size][0]
            try:
                m = cublas if t.config.rung == 0 else backend.run(t.config, problem, **opts.measure_opts())
            except DeviceLost as exc:
                if exc.measurement is not None:
                    out.append((t, exc.measurement, cublas))
                    if on_result is not None:
                        on_result(t, exc.measurement, cublas)
                raise
            out.append((t, m, cublas))
            if on_result is not None:
                on_result(t, m, cublas)
    finally:
        if own:
            problems.free(backend)
    return out


# ==================================================================================================
# Tuning
# ==================================================================================================


@dataclass
class TuneResult:
    size: tuple[int, int, int]
    space: int
    rows: list[dict]                    # rows of this size measured (or reused) by this tune, in order
    winner: dict | None
    measured_now: int
    reused: int

    @property
    def share_of_cublas(self) -> float | None:
        w = self.winner
        if not w or not w.get("cublas_flop_per_s"):
            return None
        return w["flop_per_s"] / w["cublas_flop_per_s"]


def tune(gpu_backend, size, cfgs: Sequence[KernelConfig], out: Path, *, budget: int = 8, first: int | None = None,
         opts: RunOptions | None = None, log: Callable[[str], None] = print, measure=None) -> TuneResult:
    """Rank ``cfgs`` at ``size``, measure the model's choices one batch at a time (``budget`` configs in
    all), append each row to ``out``. ``measure`` defaults to :func:`measure_tasks`."""
    from model.timing import load_params  # noqa: PLC0415

    backend = gpu_backend
    spec = backend.spec
    opts = opts or RunOptions()
    measure = measure or measure_tasks
    size = tuple(int(x) for x in size)
    pred = rank(spec, cfgs, [size])[:, 0]
    guide = ModelGuided(cfgs, pred, first=first if first is not None else max(1, budget // 2))
    results = read_results(out)
    if repair(results):
        log(f"{out}: cut off an incomplete last line")
    done_keys(results, spec.key)       # refuses another GPU's file
    previous = {r["config_key"]: r for r in results.rows
                if (r["M"], r["N"], r["K"]) == size and r.get("status") is not None}
    run_id = f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
    problems = Problems(seed=opts.seed if opts.seed is not None else int(time.time()) % (2**31))
    prm = load_params()
    rows: list[dict] = []
    measured_now = reused = 0
    backend.preflight()
    gpu_block = None
    per_row_gpu = bool(getattr(backend, "per_row_gpu_block", False))
    try:
        with RowWriter(out) as writer:
            while len(guide.measured) < budget:
                # one batch: the first picks together (one compile pass), then one at a time
                want = max(1, (guide.first if not guide.measured else 1))
                batch = []
                while len(batch) < want and len(guide.measured) + len(batch) < budget:
                    i = guide.next()
                    if i is None:
                        break
                    guide.measured[i] = None         # reserve; recorded below
                    batch.append(i)
                if not batch:
                    break
                todo = []
                for i in batch:
                    prev = previous.get(cfgs[i].key)
                    if prev is not None:
                        guide.record(i, prev.get("median_s") if prev.get("status") == "ok" else None)
                        rows.append(prev)
                        reused += 1
                        log(f"  {cfgs[i].label:<34} reused from {out.name}: "
                            + (f"{prev['flop_per_s'] / 1e9:.0f} GFLOP/s" if prev.get("status") == "ok" else prev["status"]))
                    else:
                        todo.append(i)
                if not todo:
                    continue
                by_key = {cfgs[i].key: i for i in todo}

                def record(task, m, cublas) -> None:
                    nonlocal gpu_block, measured_now
                    if gpu_block is None or per_row_gpu:     # rows from several GPUs: each names its own
                        gpu_block = backend.gpu_block()
                    i = by_key[task.config.key]
                    row = make_row(m, sweep=TUNE_SWEEP, run_id=run_id, gpu=gpu_block, cublas=cublas)
                    row["model"] = {"time_s": float(pred[i]), "flop_per_s": 2.0 * math.prod(size) / float(pred[i]),
                                    "rank": int(np.flatnonzero(guide.order == i)[0]) + 1, "space": len(cfgs),
                                    "params": prm.calibrated_on, "model": "timing"}
                    writer.write(row)
                    rows.append(row)
                    measured_now += 1
                    guide.record(i, m.median_s if m.status == "ok" else None)
                    rate = f"{m.flop_per_s / 1e9:7.0f} GFLOP/s" if m.status == "ok" else m.status
                    log(f"  #{row['model']['rank']:<5} {task.config.label:<34} {rate}  "
                        f"(model {row['model']['flop_per_s'] / 1e9:.0f})")

                measure([Task(cfgs[i], *size) for i in todo], backend, opts, problems=problems,
                        log=lambda s: log("  " + s), on_result=record)
    finally:
        problems.free(backend)
    ok = [r for r in rows if r.get("status") == "ok"]
    winner = max(ok, key=lambda r: r["flop_per_s"]) if ok else None
    return TuneResult(size, len(cfgs), rows, winner, measured_now, reused)


def format_ranking(cfgs: Sequence[KernelConfig], pred: np.ndarray, size, top: int) -> str:
    M, N, K = size
    flops = 2.0 * M * N * K
    order = np.argsort(pred, kind="stable")
    lines = [f"{'rank':>5}  {'config':<34} {'model GFLOP/s':>13} {'model time':>11}"]
    for k, i in enumerate(order[:top], 1):
        lines.append(f"{k:>5}  {cfgs[i].label:<34} {flops / pred[i] / 1e9:13.0f} {pred[i] * 1e3:9.3f} ms")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m experiments.tune",
                                 description="Model-guided tuning: rank a config space with the timing model, "
                                             "measure its best few (verified, like a sweep), refine, print the winner.")
    ap.add_argument("--size", nargs=3, type=int, metavar=("M", "N", "K"), required=True, help="problem size")
    ap.add_argument("--rungs", nargs="+", default=[str(r) for r in DEFAULT_RUNGS],
                    help="rungs to search (numbers or names) [4 5 6]")
    ap.add_argument("--sweep", help="search the configs of this sweep file instead of the default grids")
    ap.add_argument("--budget", type=int, default=8, help="configs to measure [8]")
    ap.add_argument("--first", type=int, help="configs measured in the model's order before refining [budget/2]")
    ap.add_argument("--gpu", help="GPU spec key (--dry-run: default h200; on a GPU the device must match)")
    ap.add_argument("--dry-run", action="store_true", help="print the ranked list; no GPU needed")
    ap.add_argument("--top", type=int, default=20, help="rows of the ranked list to print [20]")
    ap.add_argument("--out", type=Path, help="results file [experiments/results/<gpu>/tune.jsonl]")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--gpus", metavar="all|ID,...", help="measure on several GPUs of this machine through Dask, "
                    "one worker per GPU (requirements-cluster.txt; see README 'Many GPUs and hosts')")
    ap.add_argument("--scheduler", metavar="ADDRESS", help="measure on the workers of a running Dask scheduler "
                    "(tcp://host:8786); rows come back to this process, which writes them")
    ap.add_argument("--min-workers", type=int, default=1, help="with --scheduler: wait for this many workers [1]")
    return ap


def _tune_cli(args, backend, size, rungs, opts: RunOptions, measure=None) -> tuple[TuneResult, Path]:
    """main's tuning run on ``backend`` (one GPU, or the Dask workers' stand-in with ``measure``)."""
    cfgs = space(backend.spec, rungs, args.sweep)
    if not cfgs:
        raise SweepError(f"no valid config of rungs {rungs} on {backend.spec.key}")
    out = args.out or RESULTS_DIR / backend.spec.key / f"{TUNE_SWEEP}.jsonl"
    print(f"# tune {size[0]}x{size[1]}x{size[2]} on {backend.spec.name}: {len(cfgs)} configs, budget {args.budget}",
          flush=True)
    res = tune(backend, size, cfgs, out, budget=args.budget, first=args.first, opts=opts,
               log=lambda s: print(s, flush=True), measure=measure)
    return res, out


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    err = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    try:
        size = parse_size(list(args.size), "--size")
        if args.budget < 1:
            raise SweepError(f"--budget must be >= 1, got {args.budget}")
        if args.first is not None and not 1 <= args.first <= args.budget:
            raise SweepError(f"--first must be between 1 and --budget ({args.budget}), got {args.first}")
        try:
            rungs = [rung(int(r) if r.isdigit() else r).number for r in args.rungs]
        except ConfigError as exc:
            raise SweepError(f"--rungs: {exc}") from None
        gpus = None
        if args.gpus or args.scheduler:   # the sweep's Dask workers: experiments/distributed.py
            from experiments import distributed as dist  # noqa: PLC0415
            if args.gpus and args.scheduler:
                raise SweepError("give --gpus or --scheduler, not both")
            if args.min_workers < 1:
                raise SweepError(f"--min-workers must be >= 1, got {args.min_workers}")
            gpus = dist.parse_gpus(args.gpus) if args.gpus else None
        if args.dry_run:
            from model.spec import load_gpu  # noqa: PLC0415
            spec = load_gpu(args.gpu or "h200")
            cfgs = space(spec, rungs, args.sweep)
            if not cfgs:
                raise SweepError(f"no valid config of rungs {rungs} on {spec.key}")
            t0 = time.perf_counter()
            pred = rank(spec, cfgs, [size])[:, 0]
            dt = time.perf_counter() - t0
            print(f"# tune {size[0]}x{size[1]}x{size[2]} on {spec.name} ({spec.key}): {len(cfgs)} configs of rungs "
                  f"{', '.join(f'{r:02d}' for r in rungs)} ranked by the timing model in {dt:.2f} s; "
                  f"a run measures {min(args.budget, len(cfgs))} of them")
            print(format_ranking(cfgs, pred, size, args.top))
            return 0
        opts = RunOptions(reps=args.reps, warmup=args.warmup, seed=args.seed)
        if args.gpus or args.scheduler:   # measure on the workers; this process writes every row
            why = dist.dask_missing()
            if why:
                raise SweepError(why)
            engine = dist.EngineOptions(gpus=gpus, scheduler=args.scheduler,
                                        gpu_key=args.gpu.lower() if args.gpu else None,
                                        # --gpus 0,1: wait for each listed GPU's worker
                                        min_workers=max(args.min_workers, len(gpus) if isinstance(gpus, tuple) else 1),
                                        run=opts)
            with dist.DaskMeasure(engine) as m:
                res, out = _tune_cli(args, m.backend, size, rungs, opts, measure=m)
        else:
            from .sweep import CupyBackend  # noqa: PLC0415
            backend = CupyBackend()
            if args.gpu and backend.spec.key != args.gpu.lower():
                raise SweepError(f"--gpu {args.gpu} given, but the device is {backend.spec.name} ({backend.spec.key})")
            res, out = _tune_cli(args, backend, size, rungs, opts)
        w = res.winner
        if w is None:
            print(f"no config passed verification ({len(res.rows)} measured)")
            return 1
        share = res.share_of_cublas
        print(f"winner at {size[0]}x{size[1]}x{size[2]}: {w['label']}  {w['flop_per_s'] / 1e9:.0f} GFLOP/s"
              + (f", {100 * share:.1f} % of cuBLAS ({w['cublas_flop_per_s'] / 1e9:.0f} GFLOP/s) in the same run"
                 if share else "")
              + f"; {res.measured_now + res.reused} of {res.space} configs measured"
              + (f" ({res.reused} reused from {out})" if res.reused else "") + f"; rows in {out}")
        return 0
    except GemmscopeError as exc:
        from experiments.sweep import exit_status  # noqa: PLC0415
        err(f"error: {exc}")
        return exit_status(exc)


if __name__ == "__main__":
    sys.exit(main())
