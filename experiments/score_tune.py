"""Score model-guided tuning against a full sweep of the same space (no GPU needed).

    python -m experiments.score_tune [TUNE.jsonl] [FULL.jsonl] [--tol 0.03] [--json]

Defaults: ``experiments/results/h200/tune.jsonl`` and ``.../tune_full.jsonl``. Per size measured by both:
the tune's winner (its best verified row at that size) against the best verified row of the full sweep,
the gap, whether it is within ``--tol`` (3 %), the winner's rank in the full sweep, how many configs the
tune measured, and the model's first pick alone. Exit status 0 when every size is within the tolerance.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from experiments.sweep import RESULTS_DIR, SweepError, read_results

DEFAULT_TUNE = RESULTS_DIR / "h200" / "tune.jsonl"
DEFAULT_FULL = RESULTS_DIR / "h200" / "tune_full.jsonl"


def score(tune_rows: Sequence[dict], full_rows: Sequence[dict], tol: float = 0.03) -> list[dict]:
    out = []
    sizes = sorted({(r["M"], r["N"], r["K"]) for r in tune_rows} & {(r["M"], r["N"], r["K"]) for r in full_rows})
    for size in sizes:
        t = [r for r in tune_rows if (r["M"], r["N"], r["K"]) == size]
        f = [r for r in full_rows if (r["M"], r["N"], r["K"]) == size and r["status"] == "ok" and r["rung"] != 0]
        tok = [r for r in t if r["status"] == "ok"]
        if not f or not tok:
            continue
        win = max(tok, key=lambda r: r["flop_per_s"])
        best = max(f, key=lambda r: r["flop_per_s"])
        ranked = sorted(f, key=lambda r: -r["flop_per_s"])
        rank = next((i for i, r in enumerate(ranked, 1) if r["config_key"] == win["config_key"]), None)
        first = [r for r in tok if (r.get("model") or {}).get("rank") == 1]
        first_gap = best["flop_per_s"] / first[0]["flop_per_s"] - 1 if first else None
        gap = best["flop_per_s"] / win["flop_per_s"] - 1
        out.append({"size": list(size), "measured": len(t), "space": (t[0].get("model") or {}).get("space"),
                    "full_configs": len(f), "tune_winner": win["config_key"], "tune_label": win["label"],
                    "tune_gflops": win["flop_per_s"] / 1e9,
                    "tune_share_of_cublas": (win["flop_per_s"] / win["cublas_flop_per_s"]
                                             if win.get("cublas_flop_per_s") else None),
                    "full_best": best["config_key"], "full_label": best["label"], "full_gflops": best["flop_per_s"] / 1e9,
                    "gap": gap, "within_tol": gap <= tol, "winner_rank_in_full": rank, "model_first_pick_gap": first_gap})
    return out


def _ok_rows(path: Path) -> list[dict]:
    if not path.is_file():
        raise SweepError(f"{path}: no such file")
    return [r for r in read_results(path).rows if r.get("schema") == "gemmscope.measurement"]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.score_tune", description=__doc__.splitlines()[0])
    ap.add_argument("tune", nargs="?", type=Path, default=DEFAULT_TUNE)
    ap.add_argument("full", nargs="?", type=Path, default=DEFAULT_FULL)
    ap.add_argument("--tol", type=float, default=0.03)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    try:
        res = score(_ok_rows(a.tune), _ok_rows(a.full), a.tol)
    except SweepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not res:
        print("error: no size measured by both the tune and the full sweep", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(res, indent=1))
    else:
        print(f"{'size':<16} {'measured':>8}  {'tune winner':<30} {'GFLOP/s':>8} {'% cuBLAS':>8}  "
              f"{'full-sweep best':<30} {'GFLOP/s':>8} {'gap':>7} {'rank':>5} {'1st pick gap':>12}")
        for e in res:
            M, N, K = e["size"]
            share = f"{100 * e['tune_share_of_cublas']:.1f}" if e["tune_share_of_cublas"] else "-"
            fp = "-" if e["model_first_pick_gap"] is None else f"{100 * e['model_first_pick_gap']:.1f} %"
            print(f"{f'{M}x{N}x{K}':<16} {e['measured']:>4}/{e['space'] or '?':<4} {e['tune_label']:<30} "
                  f"{e['tune_gflops']:8.0f} {share:>8}  {e['full_label']:<30} {e['full_gflops']:8.0f} "
                  f"{100 * e['gap']:6.1f}% {e['winner_rank_in_full'] or '-':>5} {fp:>12}"
                  + ("" if e["within_tol"] else f"   <-- beyond {100 * a.tol:.0f} %"))
    return 0 if all(e["within_tol"] for e in res) else 1


if __name__ == "__main__":
    sys.exit(main())
