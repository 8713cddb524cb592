"""Print the simulator (model/simulate.py) against Nsight Compute rows, field by field.

    python -m tools.sim_vs_ncu [FILE] [--plan sass|compiler|source] [--only-bad] [--config SUBSTR ...]

FILE defaults to ``experiments/results/h200/ncu.jsonl`` (schema ``gemmscope.ncu``). For every ``ok`` row
of rungs 01-06 it prints, per compared field, the simulated count, ncu's, ``(ncu - sim)/ncu`` and the
rule (``==`` exact; ``>=`` one-sided with the allowed excess, for shared wavefronts and bank conflicts,
see ``model.simulate.BOUNDED_FIELDS``), then a summary. Exit status 1 when a row breaks a rule, 2 when
the file is missing.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # pragma: no cover - when run as a script
    sys.path.insert(0, str(REPO))

from model.simulate import compare_ncu_row, format_diff_table  # noqa: E402

DEFAULT_FILE = REPO / "experiments" / "results" / "h200" / "ncu.jsonl"


def read_rows(path: Path) -> list[dict]:
    from analysis.data import load_ncu  # noqa: PLC0415
    return load_ncu(path, kernels_only=True)


def _check_ncu_file(path: Path) -> None:
    """Refuse a file that holds no Nsight Compute rows (a measurement file, binary data, empty)."""
    import json  # noqa: PLC0415
    from analysis.cli import BadInput, check_text_file  # noqa: PLC0415
    if not path.is_file():
        raise BadInput(f"{path} does not exist (python -m experiments.ncu_run writes it on the GPU)")
    check_text_file(path)
    schemas: dict = {}
    for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            raise BadInput(f"{path}:{i}: not JSON; expected gemmscope.ncu rows (experiments/ncu_run.py)") from None
        s = obj.get("schema") if isinstance(obj, dict) else None
        schemas[s] = schemas.get(s, 0) + 1
    if not schemas.get("gemmscope.ncu"):
        what = ", ".join(f"{n} {k}" for k, n in schemas.items()) or "nothing"
        raise BadInput(f"{path} holds no Nsight Compute rows (schema gemmscope.ncu); it holds {what}")


def main(argv: Sequence[str] | None = None) -> int:
    from analysis.cli import Parser, run  # noqa: PLC0415
    ap = Parser(prog="python -m tools.sim_vs_ncu", description=__doc__.split("\n\n")[0])
    ap.add_argument("file", nargs="?", type=Path, default=DEFAULT_FILE, help=f"ncu rows [{DEFAULT_FILE.relative_to(REPO)}]")
    ap.add_argument("--plan", default="sass", choices=("sass", "compiler", "source"),
                    help="widths of the inner loop's shared loads [sass: from model.facts / the observed SASS]")
    ap.add_argument("--only-bad", action="store_true", help="print only the fields that break their rule")
    ap.add_argument("--config", nargs="+", metavar="SUBSTR", help="only rows whose config key contains one of these")
    args = ap.parse_args(argv)
    return run(lambda: _main(args))


def _main(args) -> int:
    _check_ncu_file(args.file)
    rows = read_rows(args.file)
    if args.config:
        rows = [r for r in rows if any(s in r["config_key"] for s in args.config)]
    results = [(row, *compare_ncu_row(row, plan=args.plan)) for row in rows]
    print(format_diff_table(results, only_bad=args.only_bad))
    bad_rows = [(r, s, d) for r, s, d in results if any(not x.ok for x in d)]
    print()
    for r, s, _ in results:
        if s.plan is not None and s.plan.note:
            print(f"load plan of {r['config_key']}: {s.plan.origin}: {s.plan.note}")
    n_fields = sum(1 for _, _, d in results for x in d if x.measured is not None)
    n_bad = sum(1 for _, _, d in results for x in d if not x.ok)
    print(f"{len(results)} rows, {n_fields} measured fields: {n_fields - n_bad} agree, {n_bad} break their rule"
          + (f" (rows: {', '.join(r['config_key'] for r, _, _ in bad_rows)})" if bad_rows else ""))
    return 1 if bad_rows else 0


if __name__ == "__main__":
    sys.exit(main())
