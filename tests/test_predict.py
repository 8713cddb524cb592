"""experiments.predict: predictions committed before a sweep is measured."""
import json

import pytest

from experiments import predict
from experiments.sweep import parse_sweep
from model.spec import load_gpu


def _sweep():
    return parse_sweep({"group": [{"rungs": [0, 4], "classic": True, "sizes": [256, [512, 256, 64]]}]}, "tiny")


def test_rows_predict_every_modelled_row_and_skip_cublas():
    rows = predict.prediction_rows(_sweep(), load_gpu("h200"))
    assert len(rows) == 2 and all(r["config"].startswith("04") for r in rows)
    for r in rows:
        assert r["schema"] == predict.PRED_SCHEMA and r["time_s"] > 0 and r["bound"]
        assert r["flop_per_s"] == pytest.approx(2 * r["M"] * r["N"] * r["K"] / r["time_s"])


def test_skip_leaves_out_measured_rows():
    sw = _sweep()
    rows = predict.prediction_rows(sw, load_gpu("h200"))
    first = (rows[0]["config"], rows[0]["M"], rows[0]["N"], rows[0]["K"])
    again = predict.prediction_rows(sw, load_gpu("h200"), skip={first})
    assert len(again) == 1 and (again[0]["M"], again[0]["K"]) != (rows[0]["M"], rows[0]["K"])


def test_cli_writes_once_and_never_overwrites(tmp_path, capsys):
    out = tmp_path / "p.jsonl"
    assert predict.main(["ladder", "--out", str(out)]) == 0
    rows = predict.read_predictions(out)
    assert rows and all(json.loads(json.dumps(r)) == r for r in rows)
    before = out.read_bytes()
    assert predict.main(["ladder", "--out", str(out)]) == 2
    assert "never overwritten" in capsys.readouterr().err
    assert out.read_bytes() == before


def test_read_predictions_refuses_other_files(tmp_path):
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"schema": "gemmscope.measurement"}\n')
    with pytest.raises(ValueError, match="not a gemmscope.prediction row"):
        predict.read_predictions(bad)
    bad.write_bytes(b"\xff\xfe")
    with pytest.raises(ValueError, match="cannot read"):
        predict.read_predictions(bad)
