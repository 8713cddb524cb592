"""Kernel Tuner interop in simulation mode (skips when kernel-tuner is not installed) and the
comparison table read from its committed results."""
from __future__ import annotations

import math

import pytest

from analysis import tuning
from experiments import kerneltuner as kt

OK, WHY = kt.kernel_tuner_available()
needs_kt = pytest.mark.skipif(not OK, reason=WHY)
REGTILE = tuning.DATA / "regtile.jsonl"
HOLDOUT = tuning.DATA / "holdout.jsonl"


def _space(path, size):
    return kt.spaces(kt._rows([path]))[next(k for k in kt.spaces(kt._rows([path])) if k[1] == size)]


def test_param_names_and_config_round_trip() -> None:
    names = kt.param_names([1, 2, 6])
    assert names == ["RUNG", "BX", "BY", "COALESCED", "BM", "BN", "BK", "TM", "TN"]
    from model.registry import KernelConfig
    for key in ("01:BX=32,BY=8,COALESCED=0", "02:BM=16,BN=32,BK=8", "06:BM=128,BN=64,BK=16,TM=8,TN=4"):
        c = KernelConfig.parse(key)
        assert kt.config_of(kt.config_values(c, names), names) == c


@needs_kt
def test_export_round_trips_through_kernel_tuner(tmp_path) -> None:
    rows = _space(HOLDOUT, (3000, 2000, 1500))
    rows = rows + [dict(rows[0], config_key="04:BM=64,BN=128,BK=8,TM=8,TN=4", rung=4, status="wrong_result",
                        times_s=[], median_s=None, flop_per_s=None)] if not any(
        r["config_key"] == "04:BM=64,BN=128,BK=8,TM=8,TN=4" for r in rows) else rows
    p = kt.export_space(rows, (3000, 2000, 1500), tmp_path / "c.json")
    got = kt.read_cache_times(p)                     # read by kernel_tuner.util.read_cache
    want = {r["config_key"]: (r["median_s"] if r["status"] == "ok" else None) for r in rows}
    assert got.keys() == want.keys()
    for k, t in want.items():
        assert (got[k] is None) if t is None else got[k] == pytest.approx(t, rel=1e-12), k


@needs_kt
def test_kernel_tuner_replays_our_data_with_its_own_strategy(tmp_path) -> None:
    rows = _space(HOLDOUT, (3072, 3072, 3072))
    p = kt.export_space(rows, (3072, 3072, 3072), tmp_path / "c.json")
    times = kt.read_cache_times(p)
    order = kt.replay(p, "random_sample", max_fevals=10, seed=1)
    assert len(order) == 10 and all(times[k] == pytest.approx(t) for k, t in order if t is not None)


@needs_kt
def test_model_strategy_end_to_end_in_simulation_mode(tmp_path) -> None:
    rows = _space(REGTILE, (4096, 4096, 4096))
    p = kt.export_space(rows, (4096, 4096, 4096), tmp_path / "regtile.json")
    strat = kt.ModelStrategy("h200", cross_validated=True)
    order = kt.replay(p, strat, max_fevals=8, seed=0)
    assert len(order) == 8 and strat.order[:8] == [k for k, _ in order]
    best = min(r["median_s"] for r in rows if r["status"] == "ok")
    assert min(t for _, t in order if t is not None) <= 1.03 * best
    # the same choices as the model's ranking: the first is the model's best config
    from experiments.tune import rank
    from model.registry import KernelConfig
    from model.spec import load_gpu
    cfgs = [KernelConfig.parse(r["config_key"]) for r in rows]
    pred = rank(load_gpu("h200"), cfgs, [(4096, 4096, 4096)], cross_validated=True)[:, 0]
    assert order[0][0] == cfgs[int(pred.argmin())].key


def test_comparison_meets_the_acceptance_on_large_spaces() -> None:
    doc = tuning.load()
    assert doc["seeds"] >= 20
    big = [e for e in doc["spaces"] if e["configs"] >= 100]
    assert len(big) >= 2
    for e in big:
        ours = tuning.median_needed(e, "model", 0.03)
        kt_best = min(tuning.median_needed(e, s, 0.03) for s in doc["strategies"] if s != "model")
        assert ours <= 8 and (math.isinf(kt_best) or kt_best >= 5 * ours), e["size"]


def test_markdown_section_and_plot(tmp_path) -> None:
    md = tuning.markdown_section()
    assert md.startswith("## Model-guided tuning") and "| regtile 04-05-06 4096x4096x4096 | 1227 |" in md
    p = tuning.save_plot(tmp_path / "t.png")
    assert p.stat().st_size > 1000


def test_cli_without_kernel_tuner_is_one_line(monkeypatch, capsys) -> None:
    monkeypatch.setattr(kt, "kernel_tuner_available", lambda: (False, "kernel_tuner is not installed"))
    assert kt.main(["export", str(REGTILE)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
