"""Calibrate the timing model's three dimensionless parameters on shipped H200 measurements.

    python -m tools.calibrate [DATA ...] [--write] [--out FILE] [--json]

Fits (p, latency_scale, spill_overlap) of :mod:`model.timing` by least squares on log time (each rung
weighted equally) on every verified row of the data (default: experiments/results/h200, less the
hold-out file holdout.jsonl, which is kept for scoring, and less any validation set ``*_val*.jsonl``),
and once per rung on all the other rungs (leave-one-rung-out). Prints the cross-validated accuracy
(MAPE of GFLOP/s per rung, at sizes <= 512^3, Spearman, the 50 fastest configs at 4096^3) and, with
``--write``, writes the fits, the rows they saw and the date to ``model/data/calibration.json`` (or
``--out``); ``analysis.compare`` predicts each rung with the fit that did not see it, so the error it
reports is cross-validated. Never calibrate on another GPU's published data or on a validation set.
"""
from __future__ import annotations

import datetime as _dt
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CALIBRATION_FILES = ("blocks.jsonl", "edge_dev.jsonl", "ladder.jsonl", "regtile.jsonl")
"""The development sets, the only files calibrated on. Every other file is scored, never fitted: the
hold-out and the validation sets (holdout, edge_val), the forced-residency rows (a residency the occupancy
calculator does not give), and the sweeps whose predictions were committed before they ran (warptile,
splitk, tune_full, ...), so a new sweep is never calibrated on by accident."""


def _excluded(source: str) -> bool:
    return Path(source.rsplit(":", 1)[0]).name not in CALIBRATION_FILES


def calibration_rows(rows, traced_only: bool = False, until: str | None = None) -> list:
    """The rows a calibration uses (of all rows read, the newest per point among those kept): verified rows of rungs >= 1, less the hold-out, residency and validation
    files; with ``traced_only`` only those whose configs have a main-loop trace in the compiler facts; with
    ``until`` (ISO date) only rows measured up to then: rows added to a development file later (e.g. a new
    rung's rows in ladder.jsonl, whose predictions were committed first) are scored, not fitted, until the
    next calibration."""
    from analysis.data import latest, resolve_gpu
    from model.facts import facts_for
    # filter first, then the newest row per point: a later re-measurement in a validation file (or after
    # ``until``) must not push a development row out of the set
    out = latest(r for r in rows if r.rung >= 1 and not _excluded(r.source) and (until is None or r.date <= until))
    if traced_only and out:
        arch = resolve_gpu(out[0].device).arch
        out = [r for r in out if (f := facts_for(r.config, arch)) is not None and f.loop_trace_cycles]
    return out


def loro_stats(rows, pred_s) -> dict:
    """Cross-validated accuracy of per-row predicted times ``pred_s`` (GFLOP/s errors, fractions)."""
    import numpy as np
    from scipy.stats import spearmanr

    meas = np.array([r.median_s for r in rows])
    pred = np.asarray(pred_s, dtype=float)
    err = meas / pred - 1.0                    # (pred FLOP/s - meas FLOP/s) / meas FLOP/s
    ape = np.abs(err)
    rung = np.array([r.rung for r in rows])
    small = np.array([r.M * r.N * r.K <= 512 ** 3 for r in rows])
    out = {"rows": len(rows), "mape": float(ape.mean()), "max_ape": float(ape.max()),
           "spearman": float(spearmanr(1 / pred, 1 / meas).statistic),
           "per_rung": {int(q): float(ape[rung == q].mean()) for q in sorted(set(rung.tolist()))},
           "small_mape": float(ape[small].mean()) if small.any() else None, "small_rows": int(small.sum())}
    big = np.array([(r.M, r.N, r.K) == (4096, 4096, 4096) for r in rows])
    if big.sum() >= 50:
        idx = np.flatnonzero(big)
        top = idx[np.argsort(meas[idx])[:50]]
        out["top50_4096_spearman"] = float(spearmanr(1 / pred[top], 1 / meas[top]).statistic)
        out["top50_4096_mean_signed"] = float(err[top].mean())
    return out


def main(argv=None) -> int:
    from analysis.cli import Parser, run
    from model import timing
    ap = Parser(prog="python -m tools.calibrate", description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="*", help="JSON Lines files or folders (default: experiments/results/h200)")
    ap.add_argument("--write", action="store_true", help=f"write the calibration (default file: {timing.CALIBRATION_FILE})")
    ap.add_argument("--out", default=None, help="where to write the calibration (implies --write)")
    ap.add_argument("--json", action="store_true", help="print the cross-validated statistics as JSON")
    ap.add_argument("--traced-only", action="store_true",
                    help="only rows whose configs have a main-loop trace in the compiler facts")
    ap.add_argument("--until", metavar="ISO_DATE",
                    help="only rows measured up to this date (e.g. 2026-11-30T14:00:00+00:00); stored as data_until")
    args = ap.parse_args(argv)
    return run(lambda: _calibrate(args))


def _calibrate(args) -> int:
    import numpy as np

    from analysis.cli import BadInput, input_files, output_file
    from analysis.data import load, resolve_gpu, scored
    from model import timing
    input_files(args.data)
    out_file = output_file(args.out, (".json",), "--out") if args.out else None
    rows = calibration_rows(scored(load(args.data or None)), args.traced_only, args.until)
    if not rows:
        raise BadInput(f"no verified measurement rows to calibrate on in {', '.join(args.data) or 'the default data'}")
    gpu = resolve_gpu(rows[0].device)
    if any(resolve_gpu(r.device).key != gpu.key for r in rows):
        print("calibrate: rows of more than one GPU; calibrate on one GPU's data", file=sys.stderr)
        return 2
    cfgs = [r.config for r in rows]
    sizes = [(r.M, r.N, r.K) for r in rows]
    regs = [r.num_regs for r in rows]
    meas = np.array([r.median_s for r in rows])
    rung = np.array([r.rung for r in rows])
    res = timing.calibrate(gpu, cfgs, sizes, regs, meas, rung)
    stats = loro_stats(rows, res["predicted_loro_s"])
    files = ", ".join(sorted({Path(r.source.rsplit(":", 1)[0]).name for r in rows}))
    what = (f"{len(rows)} verified rows of {gpu.key} ({files})"
            + (f" measured up to {args.until}" if args.until else "")
            + ("; only configs with a main-loop trace in the compiler facts" if args.traced_only else ""))
    a = res["all"]
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        print(f"calibrated on {what}: p {a.p:.3f}, latency_scale {a.latency_scale:.3f}, "
              f"spill_overlap {a.spill_overlap:.2f}")
        print(f"leave-one-rung-out: MAPE {100 * stats['mape']:.1f} %, max {100 * stats['max_ape']:.0f} %, "
              f"Spearman {stats['spearman']:.3f}; sizes <= 512^3: {100 * (stats['small_mape'] or 0):.1f} % "
              f"({stats['small_rows']} rows)")
        if "top50_4096_spearman" in stats:
            print(f"  50 fastest at 4096^3: Spearman {stats['top50_4096_spearman']:.3f}, mean signed error "
                  f"{100 * stats['top50_4096_mean_signed']:+.1f} %")
        for q, m in stats["per_rung"].items():
            p = res["loro"][q]
            print(f"  rung {q:02d}: {int((rung == q).sum()):5d} rows, held-out MAPE {100 * m:5.1f} %  "
                  f"(fit without it: p {p.p:.2f}, latency_scale {p.latency_scale:.2f}, spill_overlap {p.spill_overlap:.1f})")
    if args.write or args.out:
        out_path = Path(out_file) if out_file else timing.CALIBRATION_FILE
        out = {
            "schema": "gemmscope.calibration", "schema_version": 2,
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "gpu": gpu.key, "rows": len(rows), "traced_only": bool(args.traced_only),
            "data_until": args.until or max(r.date for r in rows),
            "all": {**a.to_json(), "calibrated_on": f"all {what}"},
            "loro": {str(q): {**p.to_json(), "calibrated_on": f"{what}, rung {q:02d} left out"}
                     for q, p in res["loro"].items()},
            "loro_stats": stats,
        }
        out_path.write_text(json.dumps(out, indent=2) + "\n")
        print(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
