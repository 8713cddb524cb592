"""Calibrate the timing model's four dimensionless parameters on shipped measurements.

    python -m tools.calibrate [DATA ...] [--out FILE]

writes ``reports/calibration.json`` by default; the shipped calibration (``model/data/calibration.json``,
tracked in git) is replaced only when named explicitly: ``--out model/data/calibration.json``.

Fits (w0, p, latency_scale, spill_overlap) of :mod:`model.timing` by least squares on log time (each rung weighted
equally) on every verified row of the data (default: experiments/results/h200, less the hold-out file
holdout.jsonl, which is kept for scoring), and once per rung on
all the other rungs (leave-one-rung-out). The file records the fits, the rows they saw and the date;
``analysis.compare`` predicts each rung with the fit that did not see it, so the error it reports is
cross-validated.
"""
from __future__ import annotations

import datetime as _dt
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


DEFAULT_OUT = ROOT / "reports" / "calibration.json"


def main(argv=None) -> int:
    from analysis.cli import Parser, run
    ap = Parser(prog="python -m tools.calibrate", description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="*", help="JSON Lines files or folders (default: experiments/results/h200)")
    ap.add_argument("--out", default=str(DEFAULT_OUT.relative_to(ROOT)),
                    help="where to write the calibration (default reports/calibration.json; the shipped file "
                         "model/data/calibration.json is replaced only when named here)")
    args = ap.parse_args(argv)
    return run(lambda: _calibrate(args))


def _calibrate(args) -> int:
    from analysis.cli import BadInput, input_files, output_file
    input_files(args.data)
    out_path = output_file(args.out, (".json",), "--out")
    import numpy as np

    from analysis.data import latest, load, resolve_gpu, scored
    from model import timing
    # The hold-out set (experiments/sweeps/holdout.toml) is never calibrated on: it scores the calibration.
    rows = [r for r in scored(latest(load(args.data or None))) if r.rung >= 1
            and not Path(r.source.rsplit(":", 1)[0]).name.startswith("holdout")]
    if not rows:
        raise BadInput(f"no verified measurement rows to calibrate on in {', '.join(args.data) or 'the default data'}")
    gpu = resolve_gpu(rows[0].device)
    cfgs = [r.config for r in rows]
    sizes = [(r.M, r.N, r.K) for r in rows]
    regs = [r.num_regs for r in rows]
    meas = np.array([r.median_s for r in rows])
    rung = np.array([r.rung for r in rows])
    res = timing.calibrate(gpu, cfgs, sizes, regs, meas, rung)
    ape = np.abs(res["predicted_loro_s"] - meas) / meas
    files = ", ".join(sorted({Path(r.source.rsplit(":", 1)[0]).name for r in rows}))
    what = f"{len(rows)} verified rows of {gpu.key} ({files})"
    out = {
        "schema": "gemmscope.calibration", "schema_version": 1,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "gpu": gpu.key, "rows": len(rows),
        "all": {**res['all'].to_json(), "calibrated_on": f"all {what}"},
        "loro": {str(q): {**p.to_json(), "calibrated_on": f"{what}, rung {q:02d} left out"}
                 for q, p in res["loro"].items()},
        "loro_mape": float(ape.mean()),
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"calibrated on {what}: w0 {res['all'].w0:.3f}, p {res['all'].p:.3f}, "
          f"latency_scale {res['all'].latency_scale:.3f}, spill_overlap {res['all'].spill_overlap:.2f}; leave-one-rung-out MAPE {100 * ape.mean():.1f} %")
    for q in sorted(res["loro"]):
        m = rung == q
        print(f"  rung {q:02d}: {m.sum():5d} rows, held-out MAPE {100 * ape[m].mean():5.1f} %")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
