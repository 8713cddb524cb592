"""The simulator against every row of the shipped Nsight Compute file (no GPU needed).

``experiments/results/h200/ncu.jsonl`` (schema ``gemmscope.ncu``, written by ``python -m
experiments.ncu_run`` on the H200) is read, or the file named by ``GEMMSCOPE_NCU_FILE``. For every ``ok``
row of a ladder kernel (cuBLAS has no index maps) :func:`model.simulate.compare_ncu_row` simulates the
same config and size with the shared-load widths of the compiled code (``plan="sass"``) and pairs:

* for equality: global load / store requests and sectors, thread-level FFMA, LDS / STS instructions,
  and shared ideal wavefronts (ncu wavefronts - ncu bank conflicts, ld and st);
* one-sided: shared wavefronts and bank conflicts (ld and st): ncu >= simulated, the excess (which
  ncu adds to both counters alike: conflicts with other L1 traffic, see
  ``model.simulate.BOUNDED_FIELDS``) at most ``EXCESS_TOLERANCE`` of the measured wavefronts.

A failure prints the diff table of the row (``python -m tools.sim_vs_ncu`` prints it for the file).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from model.simulate import compare_ncu_row, format_diff_table

REPO = Path(__file__).resolve().parent.parent
DEFAULT_FILE = REPO / "experiments" / "results" / "h200" / "ncu.jsonl"


def ncu_file() -> Path:
    env = os.environ.get("GEMMSCOPE_NCU_FILE")
    return Path(env) if env else DEFAULT_FILE


def simulable_rows(path: Path) -> list[dict]:
    """The ``ok`` rows of ladder kernels (rungs 01-06) in ``path``."""
    from analysis.data import load_ncu
    return load_ncu(path, kernels_only=True)


_PATH = ncu_file()
ROWS = simulable_rows(_PATH) if _PATH.exists() else []


@pytest.mark.skipif(not _PATH.exists(), reason=f"no ncu measurements yet ({_PATH} is absent; "
                    "python -m experiments.ncu_run on the H200 writes it)")
def test_file_has_rows():
    assert ROWS, f"{_PATH} has no ok rows of rungs 01-06"


@pytest.mark.skipif(not ROWS, reason=f"no simulable ncu rows ({_PATH})")
@pytest.mark.parametrize("row", ROWS, ids=[f"{r['config_key']}@{r['M']}x{r['N']}x{r['K']}" for r in ROWS])
def test_simulator_matches_ncu(row):
    sim, diffs = compare_ncu_row(row, plan="sass")
    measured = [d for d in diffs if d.measured is not None]
    assert measured, f"row {row['config_key']} has none of the compared metrics"
    bad = [d for d in diffs if not d.ok]
    plan = "" if sim.plan is None else f" (load plan: {sim.plan.origin}{'; ' + sim.plan.note if sim.plan.note else ''})"
    assert not bad, (f"simulator vs ncu for {row['config_key']} at {row['M']}x{row['N']}x{row['K']}{plan}:\n"
                     + format_diff_table([(row, sim, diffs)]))
