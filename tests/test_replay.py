"""Replay the shipped measurements (no GPU): every ``experiments/results/*/*.jsonl`` row must follow
``experiments/SCHEMA.md``, and every verified row must be internally consistent.

The invariants are restated here rather than only delegated to ``experiments.sweep.check_row`` so that
a bug there cannot hide a bad file."""
from __future__ import annotations

import json
import math
import statistics
from datetime import datetime
from pathlib import Path

import pytest

from experiments import ncu_run
from experiments import sweep as sw
from model.registry import KernelConfig, validate

RESULTS = Path(__file__).resolve().parent.parent / "experiments" / "results"
FILES = sorted(RESULTS.glob("*/*.jsonl"))
STATUSES = {"ok", "invalid", "compile_error", "launch_error", "wrong_result"}


def load(path: Path) -> list[dict]:
    rows = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            rows.append(json.loads(line, parse_constant=lambda c: pytest.fail(f"{path}:{i}: {c} is not JSON")))
    return rows


def test_result_files_are_shipped() -> None:
    if not FILES:
        pytest.skip(f"no measurements shipped yet (no {RESULTS}/<gpu>/*.jsonl): nothing to replay")


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_row_follows_its_schema(path: Path) -> None:
    rows = load(path)
    assert rows, f"{path} is empty"
    for i, row in enumerate(rows, 1):
        where = f"{path.name}:{i}"
        if row.get("schema") == ncu_run.SCHEMA:
            assert row["schema_version"] == ncu_run.SCHEMA_VERSION, where
            assert row["gpu_key"] == path.parent.name, where
            for k in ("config_key", "M", "N", "K", "metrics", "units", "dropped_metrics", "status", "date"):
                assert k in row, f"{where}: missing {k}"
            KernelConfig.parse(row["config_key"])
            assert all(v is None or isinstance(v, (int, float)) for v in row["metrics"].values()), where
            if row["status"] == "ok":
                assert row["metrics"] and set(row["metrics"]) <= set(row["units"]), where
            continue
        assert row.get("schema") == sw.SCHEMA, f"{where}: unknown schema {row.get('schema')!r}"
        assert row["schema_version"] == 1, where
        problems = sw.check_row(row)
        assert problems == [], f"{where}: {problems}"
        assert row["gpu"]["key"] == path.parent.name, f"{where}: GPU {row['gpu']['key']} filed under {path.parent.name}"
        assert row["status"] in STATUSES, where
        assert datetime.fromisoformat(row["date"]).utcoffset().total_seconds() == 0, where
        cfg = KernelConfig.parse(row["config_key"])
        if row["status"] != "invalid":
            validate(cfg)
        assert (cfg.key, cfg.rung, cfg.p) == (row["config_key"], row["rung"], row["params"]), where
        if row["status"] == "ok":
            t = row["times_s"]
            flops = 2.0 * row["M"] * row["N"] * row["K"]
            assert row["verified"] is True, where
            assert row["rel_error"] <= row["error_bound"], where
            assert len(t) >= 10, where
            assert row["median_s"] == statistics.median(t), where
            assert math.isclose(row["flop_per_s"], flops / row["median_s"], rel_tol=1e-12), where
            assert row["cublas_median_s"] and row["cublas_median_s"] > 0, f"{where}: no cuBLAS time"
        else:
            assert not row["verified"] and not row["times_s"] and row["median_s"] is None, where


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_duplicate_final_rows(path: Path) -> None:
    keys = [(r["config_key"], r["M"], r["N"], r["K"], r.get("target_blocks_per_sm"))
            for r in load(path) if r.get("schema") == sw.SCHEMA]
    assert len(keys) == len(set(keys)), f"{path}: the same (config, size) appears twice"
