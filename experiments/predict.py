"""Commit the model's predictions for a sweep BEFORE it is measured.

    python -m experiments.predict SWEEP [--gpu KEY] [--out FILE]

writes one JSON line per (config, size) row of the sweep to ``experiments/predictions/<sweep>.jsonl``:
the config, the size, the predicted time (seconds) and FLOP/s, the binding limit, the model's name and
the git commit of the model that made it. An existing predictions file is never overwritten (the file,
once committed, is the proof of what the model said before the measurement; git history gives the
order). ``python analyze.py compare --predictions FILE DATA`` scores them against measurements.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from model.errors import ConfigError

PRED_SCHEMA = "gemmscope.prediction"
PRED_SCHEMA_VERSION = 1
ROOT = Path(__file__).resolve().parent.parent
PRED_DIR = ROOT / "experiments" / "predictions"


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "model", "gpus"], cwd=ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "") if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def prediction_rows(sweep, spec, model: str = "timing", skip: set | None = None) -> list[dict]:
    """One dict per (config, size) row of ``sweep`` on ``spec``: what the model predicts, before measuring.

    ``skip``: (config key, M, N, K) keys already measured, left out (their predictions would not be made
    before the measurement)."""
    from experiments.sweep import now_iso  # noqa: PLC0415
    if model == "timing":
        from model.timing import predict  # noqa: PLC0415
    else:
        from model.roofline import predict  # noqa: PLC0415
    tasks, _ = sweep.tasks(spec)
    commit, made = git_commit(), now_iso()
    rows = []
    for t in tasks:
        if t.config.rung == 0 or (skip and t.key in skip):
            continue
        row = {"schema": PRED_SCHEMA, "schema_version": PRED_SCHEMA_VERSION, "sweep": sweep.name,
               "gpu_key": spec.key, "config": t.config.key, "label": t.config.label,
               "M": t.M, "N": t.N, "K": t.K, "model": model, "model_commit": commit, "made": made}
        try:
            p = predict(spec, t.config, t.M, t.N, t.K)
        except ConfigError as exc:
            row.update(time_s=None, flop_per_s=None, bound=None, error=str(exc))
        else:
            row.update(time_s=p.time_s, flop_per_s=p.flop_per_s, bound=p.bound)
            if getattr(p, "time_refill_random_s", None) is not None:
                # the alternative the model does not predict: the later blocks dealt in random order (scored apart)
                row["time_refill_random_s"] = p.time_refill_random_s
        rows.append(row)
    return rows


def write_predictions(path: Path, rows: Sequence[dict]) -> None:
    """Write prediction rows as JSON Lines to a NEW file (``FileExistsError`` if it exists: a committed
    predictions file is never overwritten)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "x", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, sort_keys=True) + "\n")


def read_predictions(path: str | Path) -> list[dict]:
    """The rows of a predictions file (schema checked); raises ValueError naming the problem."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{p}: cannot read predictions ({type(exc).__name__})") from exc
    rows = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{p}:{i}: not JSON ({exc.msg})") from exc
        if not isinstance(r, dict) or r.get("schema") != PRED_SCHEMA:
            raise ValueError(f"{p}:{i}: not a {PRED_SCHEMA} row")
        rows.append(r)
    if not rows:
        raise ValueError(f"{p}: no prediction rows")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    from experiments.sweep import SweepError, load_sweep  # noqa: PLC0415
    from model.spec import SpecError, load_gpu  # noqa: PLC0415
    from analysis.cli import Parser  # noqa: PLC0415 - one-line usage errors, exit 2
    ap = Parser(prog="python -m experiments.predict", description=__doc__.split("\n\n")[0])
    ap.add_argument("sweep", help="sweep name (experiments/sweeps/<name>.toml) or path")
    ap.add_argument("--gpu", default="h200", help="GPU spec key [h200]")
    ap.add_argument("--model", choices=("timing", "roofline"), default="timing")
    ap.add_argument("--out", type=Path, help="predictions file (default experiments/predictions/<sweep>.jsonl)")
    ap.add_argument("--pending", type=Path, metavar="RESULTS",
                    help="predict only the rows not yet measured in this results file (a sweep that grows)")
    a = ap.parse_args(argv)
    try:
        sweep = load_sweep(a.sweep)
        spec = load_gpu(a.gpu)
    except (SweepError, SpecError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = a.out or PRED_DIR / f"{sweep.name}.jsonl"
    if out.exists():
        print(f"error: {out} exists: predictions are never overwritten (write a new file with --out)",
              file=sys.stderr)
        return 2
    skip = None
    if a.pending is not None:
        from experiments.sweep import done_keys, read_results  # noqa: PLC0415
        try:
            skip = done_keys(read_results(a.pending), spec.key)
        except SweepError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    rows = prediction_rows(sweep, spec, a.model, skip)
    write_predictions(out, rows)
    print(f"{len(rows)} predictions for sweep {sweep.name} on {spec.key} written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
