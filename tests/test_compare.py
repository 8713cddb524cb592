"""Tests for analysis/data.py and analysis/compare.py: the statistics on hand-worked numbers, loading the
JSON Lines, and the model-versus-measured join on the fixture tests/fixtures/mini_h200.jsonl (no GPU)."""
from __future__ import annotations

import json
from argparse import Namespace
from pathlib import Path

import numpy as np
import pytest

from analysis.compare import compare, main, pick, predict_rows, signed_errors, summary
from analysis.data import DataError, NoDataError, latest, load, parse_row, scored
from model.roofline import plain_roofline
from model.spec import load_gpu

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "mini_h200.jsonl"
STAT_KEYS = {"mape", "median_ape", "max_ape", "spearman", "within_10", "within_25"}


def fixture_lines() -> list[dict]:
    return [json.loads(s) for s in FIXTURE.read_text().splitlines() if s.strip()]


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# --------------------------------------------------------------------------------------------------
# Pure statistics, hand-worked
# --------------------------------------------------------------------------------------------------


def test_signed_error_sign_and_value() -> None:
    # (110 - 100)/100 = +0.10 (optimistic); (90 - 100)/100 = -0.10 (pessimistic); (200 - 100)/100 = +1.00
    e = signed_errors([110, 90, 200], [100, 100, 100])
    assert e == pytest.approx([0.10, -0.10, 1.00])


def test_summary_hand_worked() -> None:
    s = summary([110, 90, 200], [100, 100, 100])
    # |e| = 0.1, 0.1, 1.0 -> MAPE = 1.2 / 3 = 0.4; median 0.1; max 1.0
    assert s["mape"] == pytest.approx(0.40)
    assert s["median_ape"] == pytest.approx(0.10)
    assert s["max_ape"] == pytest.approx(1.00)
    # the boundary is inclusive: the two rows exactly 10 % off count as within 10 % -> 2/3; within 25 % too
    assert s["within_10"] == pytest.approx(2 / 3)
    assert s["within_25"] == pytest.approx(2 / 3)
    # measured values all equal: no ranking to correlate with -> None (not NaN, so JSON stays valid)
    assert s["spearman"] is None
    assert s["n"] == 3
    assert set(s) == STAT_KEYS | {"n"}


def test_within_boundaries_are_inclusive_despite_float_rounding() -> None:
    # 1.1 - 1.0 = 0.10000000000000009 in floating point and 1.25 - 1 = 0.25 exactly: both sit on their
    # boundaries and count as within; 1.26 is 26 % off
    s = summary([1.1, 1.25, 1.26], [1.0, 1.0, 1.0])
    assert s["within_10"] == pytest.approx(1 / 3)   # only 1.1
    assert s["within_25"] == pytest.approx(2 / 3)   # 1.1 and 1.25


def test_spearman_known_ordering() -> None:
    # ranks of pred 1,2,3,4; of meas 1,2,4,3 -> d = 0,0,-1,+1, sum d^2 = 2
    # rho = 1 - 6 * 2 / (4 * (16 - 1)) = 1 - 12/60 = 0.8
    assert summary([1, 2, 3, 4], [10, 20, 40, 30])["spearman"] == pytest.approx(0.8)
    # a perfectly reversed order -> -1
    assert summary([1, 2, 3], [30, 20, 10])["spearman"] == pytest.approx(-1.0)


def test_summary_empty_and_mismatched() -> None:
    s = summary([], [])
    assert s["n"] == 0 and all(s[k] is None for k in STAT_KEYS)
    with pytest.raises(ValueError):
        summary([1, 2], [1])


def test_pick_cost_with_tie() -> None:
    # predicted 5, 9, 9, 7: configs 1 and 2 tie at the top -> the first (lower rung) is the model's pick
    # measured 50, 60, 80, 70: fastest is config 2 (80); the pick measured 60
    # cost = 1 - 60/80 = 0.25; rank of the pick: 80 and 70 beat 60 -> 3rd; over the tie costs are 0.25 and 0
    p = pick([5, 9, 9, 7], [50, 60, 80, 70])
    assert p["model"] == 1 and p["best"] == 2
    assert p["cost"] == pytest.approx(0.25)
    assert p["rank"] == 3 and p["ties"] == 2
    assert p["cost_range"] == pytest.approx([0.0, 0.25])


def test_pick_right_choice_costs_nothing() -> None:
    p = pick([1.0, 3.0, 2.0], [10.0, 30.0, 20.0])
    assert p == {"model": 1, "best": 1, "cost": 0.0, "rank": 1, "ties": 1, "cost_range": [0.0, 0.0]}


# --------------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------------


def test_load_fixture() -> None:
    rows = load([FIXTURE])
    assert len(rows) == 14
    assert {r.rung for r in rows} == {0, 1, 2, 3, 4, 5, 6}
    ok = scored(rows)
    assert len(ok) == 11                 # 14 - 2 cuBLAS - 1 wrong_result
    failed = [r for r in rows if r.status != "ok"]
    assert len(failed) == 1 and failed[0].status == "wrong_result" and not failed[0].scored
    r = next(r for r in rows if r.key == "06:BM=128,BN=128,BK=8,TM=8,TN=8" and r.M == 2048)
    assert r.num_regs == 168 and r.device.cc_major == 9 and r.device.sm_count == 132


def test_load_folder_skips_ncu_rows(tmp_path: Path) -> None:
    lines = fixture_lines()[:3]
    write_jsonl(tmp_path / "sweep.jsonl", lines)
    write_jsonl(tmp_path / "ncu.jsonl", [{"schema": "gemmscope.ncu", "schema_version": 1, "config_key": "04:x"}])
    (tmp_path / "notes.txt").write_text("not data")
    assert len(load([tmp_path])) == 3


def test_load_empty_folder_gives_no_rows(tmp_path: Path) -> None:
    assert load([tmp_path]) == []


@pytest.mark.parametrize("change, message", [
    ({"schema_version": 2}, "schema_version 2 is not supported"),
    ({"schema": "something.else"}, "field 'schema'"),
    ({"config_key": "04:BM=64,BN=128,BK=8,TM=8,TN=8"}, "does not match"),
    ({"M": 0}, "field 'M'"),
    ({"status": "fine"}, "field 'status'"),
    ({"params": {"BM": 128}}, "bad config"),
    ({"gpu": "H200"}, "field 'gpu'"),
])
def test_malformed_rows_raise_typed_errors(tmp_path: Path, change: dict, message: str) -> None:
    row = fixture_lines()[8]           # an ok reg2d row
    row.update(change)
    f = write_jsonl(tmp_path / "bad.jsonl", [fixture_lines()[0], row])
    with pytest.raises(DataError, match=message) as e:
        load([f])
    assert f"{f}:2" in str(e.value)      # names file and line


def test_invalid_json_and_missing_path(tmp_path: Path) -> None:
    f = tmp_path / "broken.jsonl"
    f.write_text('{"schema": "gemmscope.measurement"\n')
    with pytest.raises(DataError, match="invalid JSON"):
        load([f])
    with pytest.raises(DataError, match="no such file"):
        load([tmp_path / "nope.jsonl"])


def test_latest_keeps_newest_repeat() -> None:
    old = fixture_lines()[8]
    new = dict(old, date="2027-01-01T00:00:00Z", flop_per_s=30e12, median_s=2 * 2048 ** 3 / 30e12)
    rows = [parse_row(old, "a:1"), parse_row(new, "a:2")]
    kept = latest(rows)
    assert len(kept) == 1 and kept[0].flop_per_s == pytest.approx(30e12)


# --------------------------------------------------------------------------------------------------
# The join with the model
# --------------------------------------------------------------------------------------------------


def test_predict_rows_matches_predict_with_measured_registers() -> None:
    rows = scored(load([FIXTURE]))
    from model import timing
    pred = predict_rows(rows)
    h200 = load_gpu("h200")
    loro = timing.load_loro_params()
    for i, r in enumerate(rows):
        # the default predictor is the timing model, each rung with the fit that did not see it
        p = timing.predict(h200, r.config, r.M, r.N, r.K, registers=r.num_regs, prm=loro.get(r.rung))
        assert pred.flop_per_s[i] == pytest.approx(p.flop_per_s, rel=1e-9)
        assert pred.bound[i] == p.bound
        assert pred.intensity_dram[i] == pytest.approx(p.intensity_flop_per_byte["dram"])
        assert pred.blocks_per_sm[i] == p.occupancy.blocks_per_sm
        assert pred.baseline_flop_per_s[i] == pytest.approx(plain_roofline(h200, r.config, r.M, r.N, r.K))
    # the measured 168 registers of rung 06 allow 1 block/SM of 256 threads
    # (168 x 32 = 5376 per warp; 16384 per sub-partition / 5376 = 3 warps; 4 x 3 = 12 warps / 8 per block = 1);
    # the floor estimate (8*8 + 8 + 8 + 8 = 88 registers) would give 2
    i = next(i for i, r in enumerate(rows) if r.rung == 6)
    assert pred.blocks_per_sm[i] == 1


def test_compare_on_fixture() -> None:
    c = compare(load([FIXTURE]))
    j = c.to_json()
    assert set(j) == STAT_KEYS | {"by_rung", "baseline", "n", "best_config", "gpu"}
    assert j["n"] == 11 and j["gpu"]["key"] == "h200"
    assert set(j["by_rung"]) == {"01", "02", "03", "04", "05", "06"}
    assert j["by_rung"]["04"]["n"] == 3 and set(j["by_rung"]["04"]) == STAT_KEYS | {"n"}
    assert STAT_KEYS <= set(j["baseline"])
    # the errors agree with the statistics
    assert j["mape"] == pytest.approx(np.mean(np.abs(c.errors)))
    # at 2048^3 over rungs 01-06 the fastest measured fixture row is dbuf 128x128x8 8x8 (35.1 TFLOP/s); the
    # cost of the model's pick is 1 - measured(pick) / measured(best), e.g. reg2d's 27.8 would cost
    # 1 - 27.8/35.1 = 0.208
    e = next(e for e in j["best_config"] if e["M"] == 2048 and e["scope"] == "01-06")
    assert e["n"] == 7
    assert e["measured_best"]["config_key"] == "06:BM=128,BN=128,BK=8,TM=8,TN=8"
    assert e["cost"] == pytest.approx(1 - e["model_pick"]["measured_flop_per_s"]
                                      / e["measured_best"]["measured_flop_per_s"], rel=1e-9)
    assert 0 <= e["cost"] < 1
    assert {x["scope"] for x in j["best_config"]} == {"01-06", "04-06"}
    json.dumps(j)   # JSON-serialisable: no numpy types, no NaN


def test_predictor_can_be_swapped() -> None:
    rows = scored(load([FIXTURE]))

    def oracle(gpu, rs):   # a 'model' that predicts exactly what was measured
        n = len(rs)
        meas = np.array([r.flop_per_s for r in rs])
        return {"flop_per_s": meas, "time_s": np.ones(n), "bound": np.array(["x"] * n, dtype=object),
                "intensity_dram": np.ones(n), "blocks_per_sm": np.ones(n), "baseline_flop_per_s": meas * 2}

    c = compare(rows, predictor=oracle)
    j = c.to_json()
    assert j["mape"] == pytest.approx(0.0) and j["within_10"] == 1.0 and j["spearman"] == pytest.approx(1.0)
    assert j["baseline"]["mape"] == pytest.approx(1.0)
    assert all(e["cost"] == 0.0 for e in j["best_config"])


def test_compare_refuses_no_scorable_rows_and_mixed_gpus(tmp_path: Path) -> None:
    lines = fixture_lines()
    only_failed = [r for r in lines if r["status"] != "ok" or r["rung"] == 0]
    with pytest.raises(NoDataError):
        compare(load([write_jsonl(tmp_path / "a.jsonl", only_failed)]))
    other = dict(lines[8], gpu={"name": "NVIDIA GeForce RTX 4060", "key": "rtx4060", "cc": "8.9", "sm_count": 24})
    with pytest.raises(DataError, match="several GPUs"):
        compare(load([write_jsonl(tmp_path / "b.jsonl", lines + [other])]))


def test_main_json_and_text(capsys) -> None:
    assert main(Namespace(data=[str(FIXTURE)], json=True, rows=False)) == 0
    j = json.loads(capsys.readouterr().out)
    assert j["n"] == 11
    assert main(Namespace(data=[str(FIXTURE)], json=False, rows=True)) == 0
    out = capsys.readouterr().out
    for text in ("MAPE", "Spearman", "By rung", "Best config", "06 dbuf 128x128x8 8x8", "plain roofline"):
        assert text in out


def test_main_without_data_says_so(tmp_path: Path) -> None:
    with pytest.raises(NoDataError, match="no measurement rows"):
        main(Namespace(data=[str(tmp_path)], json=False, rows=False))


def test_traffic_predictions_are_scored_against_ncu_bytes(tmp_path, capsys):
    # Committed traffic predictions (l2_bytes, dram_bytes) scored against ncu rows: planted errors of
    # +8 % (L2) and -20 % (DRAM) on one config come back exactly, and the CLI prints the table.
    import json
    from types import SimpleNamespace
    from analysis.compare import main as compare_main, score_traffic_predictions
    ncu = [{"schema": "gemmscope.ncu", "status": "ok", "rung": 4, "config_key": "04:BM=128,BN=128,BK=8,TM=8,TN=8",
            "M": 3072, "N": 3072, "K": 3072,
            "metrics": {"lts__t_bytes.sum": 1.0e9, "dram__bytes_read.sum": 0.08e9, "dram__bytes_write.sum": 0.02e9}},
           {"schema": "gemmscope.ncu", "status": "ok", "rung": 0, "config_key": "00:", "M": 3072, "N": 3072,
            "K": 3072, "metrics": {"lts__t_bytes.sum": 5.0e8}}]
    preds = [{"schema": "gemmscope.prediction", "schema_version": 1, "config": "04:BM=128,BN=128,BK=8,TM=8,TN=8",
              "M": 3072, "N": 3072, "K": 3072, "l2_bytes": 1.08e9, "dram_bytes": 0.08e9, "flop_per_s": 1e13,
              "gpu_key": "h200", "model": "timing", "model_commit": "x", "sweep": "ncu_traffic"},
             dict({"schema": "gemmscope.prediction", "schema_version": 1, "config": "05:BM=128,BN=128,BK=8,TM=8,TN=8",
                   "M": 3072, "N": 3072, "K": 3072, "l2_bytes": 1e9, "dram_bytes": 1e8, "flop_per_s": 1e13,
                   "gpu_key": "h200", "model": "timing", "model_commit": "x", "sweep": "ncu_traffic"})]
    j = score_traffic_predictions(preds, ncu)
    assert j["n"] == 1 and j["unmatched"] == 1
    r = j["rows"][0]
    assert r["l2_error"] == pytest.approx(0.08) and r["dram_error"] == pytest.approx(-0.20)
    assert j["levels"]["l2"]["within_10"] == 1 and j["levels"]["dram"]["within_15"] == 0
    pf, nf = tmp_path / "p.jsonl", tmp_path / "ncu.jsonl"
    pf.write_text("".join(json.dumps(p) + "\n" for p in preds))
    nf.write_text("".join(json.dumps(r) + "\n" for r in ncu))
    assert compare_main(SimpleNamespace(data=[str(nf)], predictions=str(pf), json=False, rows=False)) == 0
    out = capsys.readouterr().out
    assert "+8.0 %" in out and "-20.0 %" in out
