"""How many measurements each tuning strategy needs on our H200 data (Kernel Tuner simulation mode).

    python -m analysis.tuning            # the cached comparison -> reports/tuning.md (+ reports/tuning.png)
    python -m analysis.tuning --run      # re-run the comparison (a few minutes, needs kernel-tuner)

For every shipped H200 (rung set, size) space with at least :data:`MIN_CONFIGS` configs (each results
file's rows at one size; the ladder's 10 classic configs per size are left out), the rows are exported
as a Kernel Tuner cache (:mod:`experiments.kerneltuner`) and replayed in its simulation mode. Per
strategy and seed: the number of distinct configs measured until one within 3 % (and 1 %) of the
space's best was measured. Median over :data:`SEEDS` seeds; a run that had not got there within
:data:`CAP` measurements counts as ``> CAP``. The model-guided strategy
(:class:`experiments.kerneltuner.ModelStrategy`) is deterministic (the same for every seed); it predicts
the spaces the timing model was calibrated on (ladder, blocks, regtile) with the leave-one-rung-out
parameters (each rung by a fit that never saw it) and the hold-out spaces with the shipped parameters,
which never saw them. Results are cached in :data:`CACHE` so the report does not re-run them.
"""
from __future__ import annotations

import argparse
import json
import math
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "experiments" / "results" / "h200"
CACHE = DATA / "tuning_comparison.json"
REPORTS = ROOT / "reports"
FILES = ("regtile", "blocks", "holdout")            # ladder spaces have 10 configs: below MIN_CONFIGS
CALIBRATED_ON = ("ladder", "blocks", "regtile")
STRATEGIES = ("model", "random_sample", "genetic_algorithm", "simulated_annealing", "bayes_opt")
SEEDS = 20
CAP = 64
MIN_CONFIGS = 20
RUN_TIMEOUT_S = 30.0
THRESHOLDS = (0.03, 0.01)


class _Timeout(Exception):
    pass


def _reach(order: Sequence[tuple[str, float | None]], best: float, tol: float) -> int | None:
    for n, (_, t) in enumerate(order, 1):
        if t is not None and t <= best * (1 + tol):
            return n
    return None


def run(seeds: int = SEEDS, cap: int = CAP, log=lambda s: print(s, file=sys.stderr, flush=True),
        strategies: Sequence[str] = STRATEGIES) -> dict:
    """Run the comparison (needs kernel-tuner); returns the document written to :data:`CACHE`.
    ``strategies``: the strategies to run (default all)."""
    from experiments.kerneltuner import ModelStrategy, export_space, replay, spaces, _rows

    out = {"schema": "gemmscope.tuning_comparison", "schema_version": 1,
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "seeds": seeds, "cap": cap,
           "thresholds": list(THRESHOLDS), "strategies": list(strategies), "spaces": []}
    import kernel_tuner
    out["kernel_tuner"] = kernel_tuner.__version__ if hasattr(kernel_tuner, "__version__") else "1.5"

    def handler(signum, frame):
        raise _Timeout()

    signal.signal(signal.SIGALRM, handler)
    with tempfile.TemporaryDirectory() as tmp:
        for stem in FILES:
            for (rungs, size), rows in sorted(spaces(_rows([DATA / f"{stem}.jsonl"])).items()):
                ok = [r for r in rows if r["status"] == "ok"]
                if len(rows) < MIN_CONFIGS or not ok:
                    continue
                path = export_space(rows, size, Path(tmp) / f"{stem}_{size[0]}x{size[1]}x{size[2]}.json")
                best = min(r["median_s"] for r in ok)
                budget = min(cap, len(rows))
                entry = {"file": f"{stem}.jsonl", "rungs": list(rungs), "size": list(size), "configs": len(rows),
                         "best_s": best, "best_config": min(ok, key=lambda r: r["median_s"])["config_key"],
                         "budget": budget, "runs": {}}
                t0 = time.time()
                for strat in strategies:
                    runs = []
                    for seed in range(1 if strat == "model" else seeds):
                        obj = (ModelStrategy("h200", size, cross_validated=stem in CALIBRATED_ON)
                               if strat == "model" else strat)
                        signal.setitimer(signal.ITIMER_REAL, RUN_TIMEOUT_S)
                        try:
                            order = replay(path, obj, max_fevals=budget, seed=seed)
                            status = "ok"
                        except _Timeout:
                            order, status = [], "timeout"
                        finally:
                            signal.setitimer(signal.ITIMER_REAL, 0)
                        runs.append({"seed": seed, "status": status, "measured": len(order),
                                     **{f"n_{int(round(tol * 100))}pct": _reach(order, best, tol) for tol in THRESHOLDS}})
                    if strat == "model":
                        runs = [dict(runs[0], seed=s) for s in range(seeds)]     # deterministic
                    entry["runs"][strat] = runs
                log(f"{stem} {size}: {len(rows)} configs, {time.time() - t0:.0f} s: " + ", ".join(
                    f"{s} {median_needed(entry, s, 0.03)}" for s in strategies))
                out["spaces"].append(entry)
    return out


def merge_model_runs(doc: dict, fresh: dict) -> dict:
    """``doc`` with the model strategy's runs (and the date it was re-run, with the model's commit) taken
    from ``fresh`` (a :func:`run` of the model strategy alone), space by space (file, size); Kernel Tuner's
    strategies are left as they were (they do not depend on our model)."""
    from experiments.predict import git_commit
    new = {(e["file"], tuple(e["size"])): e for e in fresh["spaces"]}
    out = dict(doc)
    out["spaces"] = []
    for e in doc["spaces"]:
        f = new.get((e["file"], tuple(e["size"])))
        e = dict(e)
        if f is not None:
            e["runs"] = dict(e["runs"], model=f["runs"]["model"])
        out["spaces"].append(e)
    out["model_rerun"] = {"date": fresh["date"], "model_commit": git_commit()}
    return out


def median_needed(entry: dict, strategy: str, tol: float) -> float:
    """Median over seeds of the measurements needed (``inf`` for a run that did not get there)."""
    key = f"n_{int(round(tol * 100))}pct"
    vals = [r[key] if r[key] is not None else math.inf for r in entry["runs"][strategy]]
    return statistics.median(vals)


def load(path: Path = CACHE) -> dict:
    return json.loads(Path(path).read_text())


def _fmt(v: float, cap: int) -> str:
    return f"> {cap}" if math.isinf(v) else f"{v:g}"


def markdown_section(doc: dict | None = None) -> str:
    """The report's section: one row per space, measurements to within 3 % / 1 % of the best, per strategy."""
    doc = doc or load()
    strategies = doc["strategies"]
    short = {"model": "model", "random_sample": "random", "genetic_algorithm": "genetic",
             "simulated_annealing": "annealing", "bayes_opt": "Bayesian"}
    lines = ["## Model-guided tuning against Kernel Tuner's strategies", "",
             f"Measured configs needed to reach a config within 3 % / 1 % of each space's best, median over "
             f"{doc['seeds']} seeds, replayed in Kernel Tuner {doc.get('kernel_tuner', '1.5')}'s simulation mode on "
             f"the shipped H200 measurements (`python -m analysis.tuning --run`, {doc['date']}"
             + (f"; the model strategy re-run with `--run --model-only` on {doc['model_rerun']['date']}, model at "
                f"commit {str(doc['model_rerun']['model_commit'])[:7]}" if doc.get("model_rerun") else "") + "). "
             f"`> {doc['cap']}`: not reached within {doc['cap']} measurements. The model predicts spaces it was "
             "calibrated on (regtile, blocks) with leave-one-rung-out parameters and the hold-out spaces with the "
             "shipped ones; it is deterministic.", "",
             "| space | configs | " + " | ".join(short.get(s, s) for s in strategies) + " | best KT / model (3 %) |",
             "|---|---:|" + "---:|" * len(strategies) + "---:|"]
    for e in doc["spaces"]:
        cells = []
        for s in strategies:
            a, b = median_needed(e, s, 0.03), median_needed(e, s, 0.01)
            cells.append(f"{_fmt(a, doc['cap'])} / {_fmt(b, doc['cap'])}")
        kt = min(median_needed(e, s, 0.03) for s in strategies if s != "model")
        ours = median_needed(e, "model", 0.03)
        ratio = "-" if math.isinf(ours) else (f"> {doc['cap'] / ours:.0f}x" if math.isinf(kt) else f"{kt / ours:.1f}x")
        M, N, K = e["size"]
        lines.append(f"| {e['file'].split('.')[0]} {'-'.join(f'{r:02d}' for r in e['rungs'])} {M}x{N}x{K} "
                     f"| {e['configs']} | " + " | ".join(cells) + f" | {ratio} |")
    big = [e for e in doc["spaces"] if e["configs"] >= 100]
    if big:
        worst = max(median_needed(e, "model", 0.03) for e in big)
        lines += ["", f"On the {len(big)} spaces with at least 100 configs the model-guided strategy needs at most "
                      f"{_fmt(worst, doc['cap'])} measured configs (median) to get within 3 % of the best."]
    return "\n".join(lines) + "\n"


def save_plot(path: Path = REPORTS / "tuning.png", doc: dict | None = None) -> Path:
    """Bar chart: median measurements to within 3 % per space and strategy (log scale)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    doc = doc or load()
    strategies = doc["strategies"]
    sp = doc["spaces"]
    x = np.arange(len(sp))
    w = 0.8 / len(strategies)
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(sp)), 3.8))
    for j, s in enumerate(strategies):
        v = [median_needed(e, s, 0.03) for e in sp]
        capped = [doc["cap"] * 1.3 if math.isinf(a) else a for a in v]
        ax.bar(x + (j - (len(strategies) - 1) / 2) * w, capped, w,
               label=s + (" (ours)" if s == "model" else ""))
    ax.axhline(doc["cap"], color="grey", lw=0.8, ls="--")
    ax.text(len(sp) - 0.5, doc["cap"] * 1.05, f"cap {doc['cap']}: bars above it did not get there", fontsize=6,
            ha="right", va="bottom", color="grey")
    ax.set_yscale("log")
    ax.set_ylim(0.5, doc["cap"] * 2.2)
    ax.set_xticks(x)
    ax.set_xticklabels([f"{e['file'].split('.')[0]}\n{e['size'][0]}x{e['size'][1]}x{e['size'][2]}\n({e['configs']})"
                        for e in sp], fontsize=7)
    ax.set_ylabel("measured configs to 3 % of best\n(median over seeds)")
    ax.set_title("Model-guided tuning vs Kernel Tuner strategies (H200 data, simulation mode)", fontsize=9)
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.tuning", description=__doc__.splitlines()[0])
    ap.add_argument("--run", action="store_true", help=f"re-run the comparison and rewrite {CACHE.name}")
    ap.add_argument("--seeds", type=int, default=SEEDS)
    ap.add_argument("--cap", type=int, default=CAP)
    ap.add_argument("--out", type=Path, default=REPORTS)
    ap.add_argument("--model-only", action="store_true",
                    help=f"with --run: re-run only the model strategy (after a model change) and keep Kernel Tuner's "
                         f"runs from {CACHE.name}")
    a = ap.parse_args(argv)
    if a.run and a.model_only:
        if not CACHE.exists():
            print(f"error: {CACHE} not found: run python -m analysis.tuning --run first", file=sys.stderr)
            return 2
        from experiments.kerneltuner import kernel_tuner_available
        ok, why = kernel_tuner_available()
        if not ok:
            print(f"error: {why}", file=sys.stderr)
            return 2
        doc = merge_model_runs(load(), run(a.seeds, a.cap, strategies=("model",)))
        CACHE.write_text(json.dumps(doc, indent=1) + "\n")
    elif a.run:
        from experiments.kerneltuner import kernel_tuner_available
        ok, why = kernel_tuner_available()
        if not ok:
            print(f"error: {why}", file=sys.stderr)
            return 2
        doc = run(a.seeds, a.cap)
        CACHE.write_text(json.dumps(doc, indent=1) + "\n")
    elif not CACHE.exists():
        print(f"error: {CACHE} not found: run python -m analysis.tuning --run", file=sys.stderr)
        return 2
    doc = load()
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "tuning.md").write_text(markdown_section(doc))
    save_plot(a.out / "tuning.png", doc)
    print(markdown_section(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
