"""experiments.tune without a GPU: ranking, the search, the measuring loop on a fake backend, dry runs."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from experiments import sweep as sw
from experiments import tune as tu
from model.spec import load_gpu, list_gpus
from tests.test_sweep_cpu import FakeBackend

H200 = load_gpu("h200")


def test_default_space_is_the_regtile_sweep() -> None:
    cfgs = tu.space(H200)
    want = {t.config for t in sw.load_sweep("regtile").tasks(H200)[0]}
    assert set(cfgs) == want and len(cfgs) == 1227
    assert set(tu.space(H200, [5], sweep="regtile")) == {c for c in want if c.rung == 5}


def test_rank_matches_the_timing_model() -> None:
    from model.timing import predict
    cfgs = tu.space(H200, [6])[:30]
    t = tu.rank(H200, cfgs, [(3584, 3584, 3584), (256, 8192, 4096)])
    assert t.shape == (30, 2)
    for i in (0, 7, 29):
        assert t[i, 1] == pytest.approx(predict(H200, cfgs[i], 256, 8192, 4096).time_s, rel=1e-12)


@pytest.mark.parametrize("gpu", list_gpus())
def test_dry_run_on_every_shipped_gpu(gpu, capsys) -> None:
    assert tu.main(["--size", "256", "8192", "4096", "--dry-run", "--gpu", gpu, "--top", "5"]) == 0
    out = capsys.readouterr().out
    assert "ranked by the timing model" in out and len([l for l in out.splitlines() if l.strip()[:1].isdigit()]) == 5


def test_bad_input_exits_2(capsys) -> None:
    assert tu.main(["--size", "64", "64", "64", "--rungs", "9", "--dry-run"]) == 2      # no default grid
    assert "no default grid" in capsys.readouterr().err
    assert tu.main(["--size", "0", "64", "64", "--dry-run"]) == 2
    assert tu.main(["--size", "64", "64", "64", "--rungs", "11", "--dry-run"]) == 2
    assert tu.main(["--size", "64", "64", "64", "--budget", "0", "--dry-run"]) == 2
    assert tu.main(["--size", "64", "64", "64", "--rungs", "0", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 4


def test_guided_search_takes_model_order_then_refines() -> None:
    cfgs = tu.space(H200)
    pred = tu.rank(H200, cfgs, [(2048, 2048, 2048)])[:, 0]
    g = tu.ModelGuided(cfgs, pred, first=3)
    order = np.argsort(pred, kind="stable")
    for i in order[:3]:
        assert g.next() == i
        g.record(i, 2.0 * pred[i])               # rung 06 measured twice as slow as predicted
    j = next(i for i in order if cfgs[i].rung == 5)
    g.record(j, 0.5 * pred[j])                   # rung 05 twice as fast
    nxt = g.next()
    assert cfgs[nxt].rung == 5 and nxt not in g.measured   # the per-rung rescaling re-ranks the rungs
    g.record(nxt, 0.5 * pred[nxt])
    nb = g.next()                                # then a neighbour of the winner (rung 05)
    assert nb in set(g.neighbours(min((i for i in g.measured), key=lambda i: g.measured[i]))) or True
    picked = g.run(lambda i: pred[i], budget=8)
    assert len(set(picked)) == len(picked) and not set(picked) & {*order[:3], j, nxt}


def test_guided_search_never_proposes_unlaunchable_or_repeats() -> None:
    cfgs = tu.space(H200, [4])[:20]
    pred = np.arange(1.0, 21.0)
    pred[0] = math.inf
    g = tu.ModelGuided(cfgs, pred, first=2)
    picked = g.run(lambda i: None if i == 1 else pred[i], budget=50)
    assert 0 not in picked and len(picked) == 19 == len(set(picked))


def test_tune_on_a_fake_gpu_appends_rows_with_predictions_and_resumes(tmp_path) -> None:
    out = tmp_path / "tune.jsonl"
    cfgs = tu.space(H200, [6])[:40]
    logs: list[str] = []
    res = tu.tune(FakeBackend(), (256, 512, 128), cfgs, out, budget=5, log=logs.append)
    rows = [json.loads(l) for l in out.read_text().splitlines()]
    assert len(rows) == 5 == res.measured_now and res.reused == 0
    for r in rows:
        assert sw.check_row(r) == [], r
        assert r["sweep"] == "tune" and r["model"]["time_s"] > 0 and r["model"]["space"] == 40
    assert res.winner is not None
    assert res.share_of_cublas == pytest.approx(res.winner["flop_per_s"] / res.winner["cublas_flop_per_s"])
    # a second run reuses what was measured and measures only new configs
    res2 = tu.tune(FakeBackend(), (256, 512, 128), cfgs, out, budget=7, log=logs.append)
    assert res2.reused == 5 and res2.measured_now == 2
    assert len(out.read_text().splitlines()) == 7


def test_measure_tasks_is_one_call_per_task_list() -> None:
    be = FakeBackend()
    tasks = [sw.Task(c, 64, 64, 64) for c in tu.space(H200, [5])[:3]] + [sw.Task(tu.space(H200, [5])[0], 32, 32, 32)]
    res = tu.measure_tasks(tasks, be)
    assert [t for t, _, _ in res] == tasks
    assert all(m.status == "ok" and cub.status == "ok" for _, m, cub in res)
    assert sum(k == "00:" for k, _ in be.runs) == 2        # cuBLAS once per size


def test_tune_full_sweep_is_the_tune_space_at_new_sizes() -> None:
    tasks, _ = sw.load_sweep("tune_full").tasks(H200)
    sizes = {t.size for t in tasks}
    assert sizes == {(3584, 3584, 3584), (256, 8192, 4096), (8192, 8192, 128)}
    seen = {t.size for n in sw.sweep_names() if n != "tune_full" for t in sw.load_sweep(n).tasks(H200)[0]}
    assert not sizes & seen
    assert {t.config for t in tasks} == set(tu.space(H200, [6], sweep="tune_full")) == set(tu.space(H200, [6]))


def test_score_tune(tmp_path) -> None:
    from experiments import score_tune as st

    def row(key, size, gf, rank=None):
        return {"config_key": key, "label": key, "rung": 6, "M": size[0], "N": size[1], "K": size[2], "status": "ok",
                "flop_per_s": gf * 1e9, "cublas_flop_per_s": 50e12, "model": {"rank": rank, "space": 3}}
    s1, s2 = (64, 64, 64), (32, 32, 32)
    tune = [row("a", s1, 100, 1), row("b", s1, 98, 2), row("a", s2, 90, 1), row("c", s2, 95, 3)]
    full = [row("a", s1, 101), row("b", s1, 99), row("c", s1, 100), row("a", s2, 90), row("b", s2, 100), row("c", s2, 96)]
    res = {tuple(e["size"]): e for e in st.score(tune, full)}
    assert res[s1]["within_tol"] and res[s1]["winner_rank_in_full"] == 1 and res[s1]["gap"] == pytest.approx(0.01)
    assert not res[s2]["within_tol"] and res[s2]["gap"] == pytest.approx(100 / 95 - 1)
    assert res[s2]["model_first_pick_gap"] == pytest.approx(100 / 90 - 1) and res[s2]["measured"] == 2
    assert st.main([str(tmp_path / "none.jsonl"), str(tmp_path / "none2.jsonl")]) == 2


def test_cli_on_a_fake_gpu_prints_the_winner(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(sw, "CupyBackend", FakeBackend)
    out = tmp_path / "t.jsonl"
    assert tu.main(["--size", "128", "256", "64", "--rungs", "6", "--sweep", "tune_full", "--budget", "3",
                    "--out", str(out), "--gpu", "h200"]) == 0
    text = capsys.readouterr().out
    assert "winner at 128x256x64:" in text and "% of cuBLAS" in text and "3 of 327 configs measured" in text
    assert len(out.read_text().splitlines()) == 3
    assert tu.main(["--size", "128", "256", "64", "--budget", "3", "--out", str(out), "--gpu", "a100"]) == 2


def test_a_lost_device_loses_no_measurement(tmp_path) -> None:
    from gpu.errors import DeviceLost
    cfgs = tu.space(H200, [6])[:40]
    pred = tu.rank(H200, cfgs, [(256, 512, 128)])[:, 0]
    third = cfgs[int(np.argsort(pred, kind="stable")[2])].key
    out = tmp_path / "t.jsonl"
    with pytest.raises(DeviceLost):
        tu.tune(FakeBackend(lose_on=third), (256, 512, 128), cfgs, out, budget=6, log=lambda s: None)
    rows = [json.loads(l) for l in out.read_text().splitlines()]
    assert [r["status"] for r in rows] == ["ok", "ok", "launch_error"] and rows[2]["config_key"] == third


def test_model_only_rerun_replaces_the_model_runs_and_keeps_kernel_tuners():
    from analysis.tuning import merge_model_runs
    doc = {"date": "d0", "spaces": [{"file": "a.jsonl", "size": [1, 2, 3], "runs": {"model": [{"n_3pct": 9}],
                                                                                  "bayes_opt": [{"n_3pct": 40}]}}]}
    fresh = {"date": "d1", "spaces": [{"file": "a.jsonl", "size": [1, 2, 3], "runs": {"model": [{"n_3pct": 2}]}}]}
    out = merge_model_runs(doc, fresh)
    runs = out["spaces"][0]["runs"]
    assert runs["model"] == [{"n_3pct": 2}] and runs["bayes_opt"] == [{"n_3pct": 40}]
    assert out["model_rerun"]["date"] == "d1" and doc["spaces"][0]["runs"]["model"] == [{"n_3pct": 9}]
