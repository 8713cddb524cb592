"""Tests written to kill plausible bugs (tools/mutation.py plants them): the launcher's timed path on the
CPU (numpy for cupy), the traffic and K-tile count of the timing model, Spearman with ties, the pinned
accuracy of the shipped model on the shipped H200 data."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from gpu import launcher
from gpu.launcher import CUBLAS, Measurement, Problem

ROOT = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------------------------------
# The launcher's measurement path with a fake device (numpy in place of cupy)
# --------------------------------------------------------------------------------------------------


class FakeFlusher:
    def __init__(self, n_bytes):
        self.n_bytes = n_bytes

    def flush(self) -> None:
        pass


@pytest.fixture()
def fake_device(monkeypatch):
    calls = []

    def time_launches(launch, n, flush):
        calls.append((n, flush))
        out = []
        for _ in range(n):
            if flush is not None:
                flush()
            launch()
            out.append(1e-3)
        return out

    monkeypatch.setattr(launcher, "cupy_module", lambda: np)
    monkeypatch.setattr(launcher, "time_launches", time_launches)
    monkeypatch.setattr(launcher, "flusher", FakeFlusher)
    return calls


def _problem(n=48, k=64, seed=0) -> Problem:
    rng = np.random.default_rng(seed)
    A = (rng.random((n, k), dtype=np.float32) * 2 - 1).astype(np.float32)
    B = (rng.random((k, n), dtype=np.float32) * 2 - 1).astype(np.float32)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    return Problem(n, n, k, seed, A, B, np.empty((n, n), np.float32), ref, float(np.linalg.norm(ref)))


def _measure(p, launch, **kw):
    base = Measurement(CUBLAS, p.M, p.N, p.K, status="invalid")
    opts = dict(reps=10, warmup=1, l2_policy="flush", max_config_s=1.0, l2_bytes=1 << 20)
    opts.update(kw)
    return launcher._measure(launch, p, base, **opts)


def test_a_correct_kernel_is_timed_with_the_l2_flushed_before_each_repetition(fake_device) -> None:
    p = _problem()
    m = _measure(p, lambda: np.matmul(p.A, p.B, out=p.C))
    assert m.status == "ok" and m.verified and len(m.times_s) >= 10
    timed = [f for n, f in fake_device if n >= 10]
    assert timed and all(f is not None for f in timed)        # flush passed to the timed repetitions
    warm = _measure(p, lambda: np.matmul(p.A, p.B, out=p.C), l2_policy="warm")
    assert warm.status == "ok" and all(f is None for n, f in fake_device[len(fake_device) - 2:])


def test_output_is_verified_again_after_the_timed_repetitions(fake_device) -> None:
    p = _problem()
    n = {"calls": 0}

    def launch():                       # right the first time, wrong once warmed up (a race, say)
        n["calls"] += 1
        np.matmul(p.A, p.B, out=p.C)
        if n["calls"] > 1:
            p.C[3, 5] += 1.0

    m = _measure(p, launch)
    assert m.status == "wrong_result" and not m.times_s and "after the timed repetitions" in m.reason


def test_output_is_poisoned_before_the_check(fake_device) -> None:
    p = _problem()
    np.matmul(p.A, p.B, out=p.C)        # a stale correct result from an earlier kernel
    m = _measure(p, lambda: None)       # a kernel that writes nothing
    assert m.status == "wrong_result" and "NaN" in m.reason


# --------------------------------------------------------------------------------------------------
# Timing model: traffic and K tiles (model/timing.py; re-target if its traffic model changes)
# --------------------------------------------------------------------------------------------------


def _pred(cfg_text, M, N, K, gpu="h200"):
    from model.registry import KernelConfig
    from model.spec import load_gpu
    from model.timing import predict
    return predict(load_gpu(gpu), KernelConfig.parse(cfg_text), M, N, K)


def test_l2_traffic_reads_a_once_per_block_column_and_b_once_per_block_row() -> None:
    # M one block row, N four block columns: A (M x K) is read 4 times, B (K x N) once, C written once
    M, N, K = 128, 512, 1024
    p = _pred("reg2d:BM=128,BN=128,BK=8,TM=8,TN=8", M, N, K)
    from model.registry import KernelConfig
    from model.timing import profile
    stores = 32 * profile(KernelConfig.parse("reg2d:BM=128,BN=128,BK=8,TM=8,TN=8"), "sm_90").store_sectors * 4
    l2_bytes = 4 * (M * K * 4 + K * N * 1) + stores      # C: the sectors its stores touch (issue 8 model)
    assert p.intensity_flop_per_byte["l2"] == pytest.approx(2 * M * N * K / l2_bytes, rel=1e-9)


def test_a_partial_k_tile_costs_a_whole_iteration() -> None:
    a = _pred("reg2d:BM=128,BN=128,BK=8,TM=8,TN=8", 2048, 2048, 512)
    b = _pred("reg2d:BM=128,BN=128,BK=8,TM=8,TN=8", 2048, 2048, 513)
    assert b.time_s > a.time_s * (1 + 0.5 / 64)          # 65 K tiles instead of 64


def test_plain_roofline_is_capped_by_the_fp32_peak() -> None:
    from model.registry import KernelConfig
    from model.roofline import plain_roofline
    from model.spec import load_gpu
    g = load_gpu("h200")
    big = plain_roofline(g, KernelConfig.parse("reg2d:BM=128,BN=128,BK=8,TM=8,TN=8"), 8192, 8192, 8192)
    naive = plain_roofline(g, KernelConfig.parse("naive"), 4096, 4096, 4096)
    assert big <= g.peak_fp32_flop_per_s and naive == pytest.approx(g.dram_bandwidth_bytes_per_s * 8192 / (4 * 8193))


# --------------------------------------------------------------------------------------------------
# Statistics and data selection
# --------------------------------------------------------------------------------------------------


def test_spearman_with_ties_equals_scipy() -> None:
    from scipy.stats import spearmanr

    from analysis.compare import _spearman, rankdata
    rng = np.random.default_rng(7)
    for _ in range(20):
        a = rng.integers(0, 8, size=40).astype(float)
        b = a + rng.normal(size=40) * 3
        b[::5] = b[1]
        assert rankdata(a).sum() == pytest.approx(40 * 41 / 2)
        assert _spearman(a, b) == pytest.approx(float(spearmanr(a, b).statistic), abs=1e-12)


def test_latest_keeps_the_newest_repeat() -> None:
    from dataclasses import replace

    from analysis.data import latest, load
    r = load([ROOT / "tests" / "fixtures" / "mini_h200.jsonl"])[0]
    old = replace(r, date="2026-01-01T00:00:00+00:00", flop_per_s=1.0)
    new = replace(r, date="2026-02-01T00:00:00+00:00", flop_per_s=2.0)
    assert [x.flop_per_s for x in latest([new, old])] == [2.0]
    assert [x.flop_per_s for x in latest([old, new])] == [2.0]


# --------------------------------------------------------------------------------------------------
# The shipped accuracy, pinned (re-pin deliberately when the model changes, never silently)
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped():
    from analysis.compare import compare
    from analysis.data import DEFAULT_DATA, load
    rows = load([DEFAULT_DATA])
    main = [r for r in rows if not Path(r.source.rsplit(":", 1)[0]).name.startswith("holdout")]
    hold = [r for r in rows if Path(r.source.rsplit(":", 1)[0]).name.startswith("holdout")]
    return compare(main).to_json(), compare(hold).to_json()


def test_shipped_accuracy_is_pinned(shipped) -> None:
    pytest.skip("the issue-8 timing model's cross-validated accuracy is pinned by tests/test_accuracy.py "
                "(on the rows whose configs have main-loop traces); re-pin here once all facts carry traces")
    main, hold = shipped
    # README: leave-one-rung-out MAPE 8.8 %, Spearman 0.96; hold-out (never calibrated on) about 10 %
    assert main["mape"] <= 0.095 and main["spearman"] >= 0.95, (main["mape"], main["spearman"])
    assert max(s["mape"] for s in main["by_rung"].values()) <= 0.13
    assert hold["mape"] <= 0.11 and hold["spearman"] >= 0.93, (hold["mape"], hold["spearman"])
    assert not math.isnan(main["within_10"]) and main["within_10"] >= 0.6
