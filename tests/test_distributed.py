"""Sweeps on many workers through Dask distributed, on the CPU: a local Dask cluster and a fake GPU.

Several workers share one pending list and the driver writes every row once; a worker killed mid-sweep
loses no row; a driver killed mid-sweep resumes from the file; a lost CUDA context records its row and the
worker is restarted; rows of another GPU model never land in this GPU's file. Skipped (with the reason)
where Dask distributed is not installed: pip install -r requirements-cluster.txt."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from experiments import sweep as sw
from experiments.distributed import dask_missing

pytestmark = pytest.mark.skipif(dask_missing() is not None, reason=dask_missing() or "")

from experiments import distributed as dist  # noqa: E402
from model.spec import load_gpu  # noqa: E402
from tools.dask_kill_stress import FakeBackend, FakeGPU, check_file, stress_sweep  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
H200 = load_gpu("h200")
SMALL = sw.parse_sweep({"group": [{"rungs": [0, 1, 2, 4], "classic": True, "sizes": [64, [32, 16, 8], 96]}]},
                       "small")


@pytest.fixture(scope="module")
def cluster():
    import dask
    from distributed import Client, LocalCluster
    dask.config.set({"distributed.scheduler.worker-ttl": None})
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=50) as c, Client(c) as client:
        client.wait_for_workers(3, timeout=120)
        yield c, client


def engine(client, delay=0.01, **kw) -> dist.EngineOptions:
    return dist.EngineOptions(client=client, backend=FakeGPU(delay, **kw.pop("fake", {})),
                              run=sw.RunOptions(seed=3, **kw.pop("run", {})), **kw)


def keys_of(path: Path) -> list[tuple]:
    return [(r["config_key"], r["M"], r["N"], r["K"]) for r in sw.read_results(path).rows]


def assert_complete(path: Path, sweep=SMALL) -> list[dict]:
    tasks, _ = sweep.tasks(H200)
    keys = keys_of(path)
    assert len(keys) == len(set(keys)), "a row was written twice"
    assert set(keys) == {t.key for t in tasks}, "rows lost or extra"
    rows = sw.read_results(path).rows
    for row in rows:
        assert sw.check_row(row) == [], row
    return rows


def test_several_workers_write_every_row_once_with_its_device(cluster, tmp_path) -> None:
    _, client = cluster
    out = tmp_path / "r.jsonl"
    counts = dist.run_distributed(SMALL, engine(client, 0.02), out=out, log=lambda s: None)
    rows = assert_complete(out)
    assert counts["ok"] == len(rows) == len(SMALL.tasks(H200)[0]) == 24
    devices = {r["gpu"]["uuid"] for r in rows}
    assert len(devices) >= 2, "rows should come from several workers"
    assert all(r["gpu"]["device_index"] is not None and r["gpu"]["key"] == "h200" for r in rows)
    assert len({r["run_id"] for r in rows}) == 1
    # one seed per size, the same on every worker; cuBLAS time per (size, worker)
    for size in {(r["M"], r["N"], r["K"]) for r in rows}:
        assert len({r["seed"] for r in rows if (r["M"], r["N"], r["K"]) == size and r["rung"]}) == 1


def test_resume_runs_only_what_is_missing(cluster, tmp_path) -> None:
    _, client = cluster
    out = tmp_path / "r.jsonl"
    first = dist.run_distributed(SMALL, engine(client, run={"limit": 10}), out=out, log=lambda s: None)
    assert first["ok"] == 10 and len(keys_of(out)) == 10
    with out.open("a") as fh:       # a driver killed while writing a line
        fh.write('{"schema": "gemmscope.measurement", "M": 6')
    second = dist.run_distributed(SMALL, engine(client), out=out, log=lambda s: None)
    assert second["skipped"] == 10 and second["ok"] == 24 - 10
    assert_complete(out)
    third = dist.run_distributed(SMALL, engine(client), out=out, log=lambda s: None)
    assert third == {"skipped": 24}


def test_a_worker_killed_mid_sweep_loses_no_row(cluster, tmp_path) -> None:
    _, client = cluster
    out = tmp_path / "r.jsonl"
    pids = sorted(client.run(os.getpid).values())
    killed = []

    def kill_when_rows_appear() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if out.exists() and len(out.read_bytes().splitlines()) >= 4:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
                return
            time.sleep(0.01)

    t = threading.Thread(target=kill_when_rows_appear)
    t.start()
    dist.run_distributed(SMALL, engine(client, 0.05), out=out, log=lambda s: None)
    t.join()
    assert killed, "the sweep ended before the kill"
    assert_complete(out)
    client.wait_for_workers(3, timeout=120)     # the nanny restarted it


def test_a_driver_killed_mid_sweep_resumes_from_the_file(cluster, tmp_path) -> None:
    c, client = cluster
    out = tmp_path / "stress.jsonl"
    cmd = [sys.executable, "-m", "tools.dask_kill_stress", "driver", "--scheduler", c.scheduler_address,
           "--out", str(out), "--delay", "0.05"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and len(out.read_bytes().splitlines()) >= 15:
            break
        time.sleep(0.01)
    assert proc.poll() is None, f"the driver ended before the kill: {proc.communicate()}"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = len(keys_of(out))
    assert 15 <= before < 108
    again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    counts = json.loads(again.stdout.strip().splitlines()[-1])
    assert counts["skipped"] == before and counts["ok"] == 108 - before
    res = check_file(out)
    assert res["lost"] == res["duplicated"] == res["extra"] == res["invalid"] == 0 and res["rows"] == 108


def test_a_lost_cuda_context_records_its_row_and_restarts_the_worker(cluster, tmp_path) -> None:
    _, client = cluster
    out = tmp_path / "r.jsonl"
    bad = "02:BM=16,BN=16,BK=16"
    assert bad in {t.config.key for t in SMALL.tasks(H200)[0]}
    logs: list[str] = []
    counts = dist.run_distributed(SMALL, engine(client, fake={"lose_on": bad}), out=out, log=logs.append)
    rows = assert_complete(out)
    lost = [r for r in rows if r["config_key"] == bad]
    assert {r["status"] for r in lost} == {"launch_error"} and len(lost) == 3
    assert counts["launch_error"] == 3 and counts["ok"] == 21
    assert any("restarting the worker" in s for s in logs)
    client.wait_for_workers(3, timeout=120)


def _mixed(client) -> dict:
    """The first worker pretends to have an A100."""
    name = str(sorted(str(w["name"]) for w in client.scheduler_info()["workers"].values())[0])
    return {"fake": {"key_on_worker": ((name, "a100"),)}}


def test_gpu_key_leaves_workers_of_another_model_out(cluster, tmp_path) -> None:
    _, client = cluster
    logs: list[str] = []
    out = tmp_path / "r.jsonl"
    dist.run_distributed(SMALL, engine(client, gpu_key="h200", **_mixed(client)), out=out, log=logs.append)
    rows = assert_complete(out)
    assert {r["gpu"]["key"] for r in rows} == {"h200"}
    assert any("not --gpu h200: not used" in s for s in logs)


def test_each_gpu_model_measures_the_sweep_into_its_own_file(cluster, tmp_path, monkeypatch) -> None:
    _, client = cluster
    with pytest.raises(dist.EngineError, match="2 models"):        # one --out for two GPUs: refused
        dist.run_distributed(SMALL, engine(client, **_mixed(client)), out=tmp_path / "x.jsonl", log=lambda s: None)
    assert not (tmp_path / "x.jsonl").exists()
    monkeypatch.setattr(sw, "RESULTS_DIR", tmp_path)
    dist.run_distributed(SMALL, engine(client, **_mixed(client)), log=lambda s: None)
    h200 = assert_complete(tmp_path / "h200" / "small.jsonl")
    a100 = sw.read_results(tmp_path / "a100" / "small.jsonl").rows
    assert {r["gpu"]["key"] for r in h200} == {"h200"} and {r["gpu"]["key"] for r in a100} == {"a100"}
    assert len({r["gpu"]["uuid"] for r in a100}) == 1 and len({r["gpu"]["uuid"] for r in h200}) == 2
    want = {t.key for t in SMALL.tasks(load_gpu("a100"))[0]}
    assert sorted(keys_of(tmp_path / "a100" / "small.jsonl")) == sorted(want)


def test_measure_tasks_returns_rows_in_task_order(cluster) -> None:
    _, client = cluster
    tasks = list(reversed(SMALL.tasks(H200)[0]))[:12]
    rows = dist.measure_tasks(tasks, engine(client, sweep="tune"), log=lambda s: None)
    assert [(r["config_key"], r["M"], r["N"], r["K"]) for r in rows] == [t.key for t in tasks]
    assert all(sw.check_row(r) == [] and r["sweep"] == "tune" for r in rows)
    assert dist.measure_tasks([], engine(client)) == []


def test_workers_without_a_gpu_exit_3(cluster, tmp_path, capsys) -> None:
    c, _ = cluster
    try:
        import cupy  # noqa: F401
        pytest.skip("cupy is installed here: the workers might have a GPU")
    except ImportError:
        pass
    rc = sw.main(["ladder", "--scheduler", c.scheduler_address, "--out", str(tmp_path / "r.jsonl")])
    assert rc == 3
    assert "no Dask worker has a usable GPU" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["ladder", "--gpus", "0,x"], "--gpus '0,x'"),
    (["ladder", "--gpus", "0,0"], "distinct device ids"),
    (["ladder", "--gpus", "all", "--scheduler", "tcp://127.0.0.1:1"], "not both"),
])
def test_bad_engine_arguments_exit_2(argv, message, capsys) -> None:
    assert sw.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_an_unreachable_scheduler_is_one_clear_error(tmp_path) -> None:
    eng = dist.EngineOptions(scheduler="tcp://127.0.0.1:9", connect_s=2)
    with pytest.raises(dist.EngineError, match="cannot connect"):
        dist.run_distributed(SMALL, eng, out=tmp_path / "r.jsonl", log=lambda s: None)


def test_bus_ids_of_nvidia_smi_and_cuda_compare_equal() -> None:
    assert dist._normal_bus_id("00000000:18:00.0") == dist._normal_bus_id("0000:18:00.0") == "0:18:00.0"
    assert dist._normal_bus_id(None) is None


def test_local_gpu_cluster_pins_one_device_first_per_worker() -> None:
    """--gpus 0,1: one worker process per device, each with its device first in CUDA_VISIBLE_DEVICES
    (dask_cuda.LocalCUDACluster, or the same layout with plain Dask where dask_cuda is not installed)."""
    from distributed import Client
    logs: list[str] = []
    with dist.local_gpu_cluster([0, 1], logs.append) as cluster, Client(cluster) as client:
        client.wait_for_workers(2, timeout=120)
        seen = sorted(client.run(lambda: (os.environ.get("CUDA_VISIBLE_DEVICES"),
                                          __import__("multiprocessing").current_process().daemon)).values())
    assert seen == [("0,1", False), ("1,0", False)]


def test_dask_measure_is_tunes_measure_hook(cluster) -> None:
    """experiments.tune's measure(tasks, backend, opts, problems=, log=, on_result=) on the workers."""
    _, client = cluster
    tasks = SMALL.tasks(H200)[0][:10]
    seen = []
    with dist.DaskMeasure(engine(client), log=lambda s: None) as measure:
        assert measure.backend.spec.key == "h200"
        out = measure(tasks, measure.backend, sw.RunOptions(seed=4),
                      on_result=lambda t, m, c: seen.append((t, m.status, measure.backend.gpu_block()["uuid"])))
    assert [t for t, _, _ in out] == tasks and len(seen) == 10
    assert all(m.status == "ok" and c.status == "ok" for _, m, c in out)
    assert len({u for _, _, u in seen}) >= 1 and all(s == "ok" for _, s, _ in seen)
    try:
        from experiments import tune as tn
    except ImportError:
        return
    import inspect
    assert {"problems", "log", "on_result"} <= set(inspect.signature(tn.measure_tasks).parameters)


def test_tune_runs_on_the_workers(cluster, tmp_path) -> None:
    tn = pytest.importorskip("experiments.tune", reason="experiments.tune not in this checkout")
    _, client = cluster
    cfgs = tn.space(H200, (4,))[:40]
    out = tmp_path / "tune.jsonl"
    with dist.DaskMeasure(engine(client), log=lambda s: None) as measure:
        res = tn.tune(measure.backend, (256, 256, 256), cfgs, out, budget=6, opts=sw.RunOptions(seed=2),
                      log=lambda s: None, measure=measure)
    rows = sw.read_results(out).rows
    assert res.measured_now == len(rows) == 6 and res.winner is not None
    assert all(sw.check_row(r) == [] and r["gpu"]["key"] == "h200" and "uuid" in r["gpu"] for r in rows)


@dataclass(frozen=True)
class PidFakeGPU(FakeGPU):
    """The fake GPU, each config at its own rate (so the tuner's refinement depends on what it measures), and
    each measurement saying which worker process made it (``attributes["pid"]``): the truth a row's ``gpu``
    block is checked against."""

    def __call__(self) -> "_PidBackend":
        return _PidBackend(self)


class _PidBackend(FakeBackend):
    def _ok(self, cfg, p, rate):
        import dataclasses
        import zlib
        if not cfg.rung:
            return super()._ok(cfg, p, rate)
        m = super()._ok(cfg, p, rate * (1 + (zlib.crc32(cfg.key.encode()) % 7) / 10))
        return dataclasses.replace(m, attributes={**m.attributes, "pid": os.getpid()})


def test_tune_cli_with_gpus_measures_on_two_workers_the_configs_one_gpu_would(tmp_path, monkeypatch, capsys) -> None:
    """python -m experiments.tune --gpus 0,1: the top configs on two fake GPU workers; every row names the
    worker that measured it, and the configs are those a one-GPU run measures."""
    from functools import partial
    tn = pytest.importorskip("experiments.tune", reason="experiments.tune not in this checkout")
    argv = ["--size", "256", "256", "256", "--rungs", "4", "--budget", "6", "--seed", "2", "--gpu", "h200"]
    one = tmp_path / "one.jsonl"
    monkeypatch.setattr(sw, "CupyBackend", PidFakeGPU(0.0))
    assert tn.main(argv + ["--out", str(one)]) == 0
    monkeypatch.setattr(dist, "EngineOptions", partial(dist.EngineOptions, backend=PidFakeGPU(0.05)))
    many = tmp_path / "many.jsonl"
    assert tn.main(argv + ["--gpus", "0,1", "--out", str(many)]) == 0
    assert "winner at 256x256x256:" in capsys.readouterr().out
    rows_one, rows = sw.read_results(one).rows, sw.read_results(many).rows
    assert len(rows) == 6 and all(sw.check_row(r) == [] for r in rows)
    assert sorted(r["config_key"] for r in rows) == sorted(r["config_key"] for r in rows_one)
    assert {r["seed"] for r in rows} == {r["seed"] for r in rows_one} == {2}
    for r in rows:      # each row's gpu block is the device (worker) that measured it
        assert r["gpu"]["uuid"] == f"GPU-fake-{r['attributes']['pid']}", r["label"]
    assert len({r["gpu"]["uuid"] for r in rows}) == 2, "both workers should have measured"
    assert {r["gpu"]["cuda_visible_devices"] for r in rows} == {"0,1", "1,0"}


@pytest.mark.parametrize("argv, message", [
    (["--gpus", "0,x"], "--gpus '0,x'"),
    (["--gpus", "1,1", "--dry-run"], "distinct device ids"),
    (["--gpus", "all", "--scheduler", "tcp://127.0.0.1:1"], "not both"),
    (["--scheduler", "tcp://127.0.0.1:9", "--min-workers", "0"], "--min-workers"),
])
def test_tune_bad_engine_arguments_exit_2(argv, message, capsys) -> None:
    tn = pytest.importorskip("experiments.tune", reason="experiments.tune not in this checkout")
    assert tn.main(["--size", "64", "64", "64"] + argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
