"""Kill Dask workers and the sweep's driver at random points; check that no row is lost or duplicated.

    python -m tools.dask_kill_stress [--kills 24] [--workers 3] [--delay 0.05] [--seed S]

Runs on the CPU with a fake GPU (every row takes ``--delay`` seconds). A local Dask cluster (scheduler and
``--workers`` worker processes under nannies, which restart a killed worker) stays up; a driver process
(``python -m tools.dask_kill_stress driver``, the same code path as ``experiments.sweep --scheduler``)
runs a sweep against it into a results file. At random moments the script SIGKILLs either a worker
process or the driver (which is then started again, resuming from the file), until ``--kills`` kills
are done; each time a sweep completes, its file is checked (every (config, size) exactly once, every row
valid) and a new sweep round starts. Prints the totals and exits 1 if a row was lost or duplicated.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]

# the sweep every round runs: 5 rungs' classic configs x 12 sizes (108 rows)
STRESS_SWEEP = {"description": "kill-stress sweep (fake GPU)",
                "group": [{"rungs": [0, 1, 2, 3, 4], "classic": True,
                           "sizes": [64, 96, [32, 16, 8], 128, [200, 100, 50], 160, [48, 64, 80],
                                     [100, 60, 30], 112, [17, 33, 65], [256, 8, 64], 72]}]}


@dataclass(frozen=True)
class FakeGPU:
    """A backend factory for Dask workers without a GPU: every config 'runs' ``delay_s`` at 10 TFLOP/s.

    ``lose_on``: the config key whose launch kills the CUDA context (DeviceLost); ``key_on_worker``:
    ``{worker name: spec key}`` for workers that pretend to have another GPU."""

    delay_s: float = 0.02
    lose_on: str | None = None
    key_on_worker: tuple[tuple[str, str], ...] = ()

    def __call__(self) -> "FakeBackend":
        return FakeBackend(self)


class FakeBackend:
    """The CupyBackend interface (see experiments/sweep.py), without a GPU."""

    def __init__(self, cfg: FakeGPU) -> None:
        from model.spec import load_gpu  # noqa: PLC0415
        self.cfg = cfg
        key = "h200"
        if cfg.key_on_worker:
            from distributed.worker import Worker  # noqa: PLC0415 - the one worker of this process
            names = {str(w.name) for w in list(Worker._instances)}
            key = next((k for n, k in cfg.key_on_worker if n in names), key)
        self.spec = load_gpu(key)

    def device_identity(self) -> dict:
        return {"device_index": os.getpid() % 1000, "uuid": f"GPU-fake-{os.getpid()}", "pci_bus_id": None}

    def preflight(self) -> None:
        pass

    def gpu_block(self) -> dict:
        import socket  # noqa: PLC0415
        return {"name": self.spec.name, "key": self.spec.key, "cc": "9.0", "sm_count": 132, "clock_hz": 1.98e9,
                "clock_now_hz": None, "mem_clock_now_hz": None, "max_clock_hz": None, "power_w": None,
                "temperature_c": None, "driver_version": 13000, "cuda_runtime_version": 13000,
                "nvrtc_version": "13.0", "cupy_version": "fake", "hostname": socket.gethostname()}

    def precompile(self, cfgs, workers, say):
        time.sleep(0.001 * len(cfgs))
        return {}

    def problem(self, M, N, K, seed):
        return SimpleNamespace(M=M, N=N, K=K, seed=seed)

    def _ok(self, cfg, p, rate):
        from gpu.launcher import Measurement, error_bound  # noqa: PLC0415
        t = 2.0 * p.M * p.N * p.K / rate
        times = tuple(t * (1 + 0.01 * i) for i in range(12))
        return Measurement(cfg, p.M, p.N, p.K, "ok", seed=p.seed, rel_error=1e-7, error_bound=error_bound(p.K),
                           verified=True, l2_policy="flush", warmup=2, times_s=times,
                           grid=(1, 1, 1) if cfg.rung else None, block=(256, 1, 1) if cfg.rung else None,
                           dynamic_smem_bytes=0 if cfg.rung else None,
                           attributes={"num_regs": 32} if cfg.rung else None,
                           occupancy_driver=2 if cfg.rung else None, occupancy_model=2 if cfg.rung else None)

    def cublas(self, p, **opts):
        from gpu.launcher import CUBLAS  # noqa: PLC0415
        time.sleep(self.cfg.delay_s)
        return self._ok(CUBLAS, p, 40e12)

    def run(self, cfg, p, **opts):
        from gpu.errors import DeviceLost  # noqa: PLC0415
        from gpu.launcher import Measurement, error_bound  # noqa: PLC0415
        time.sleep(self.cfg.delay_s)
        if cfg.key == self.cfg.lose_on:
            m = Measurement(cfg, p.M, p.N, p.K, "launch_error", reason="illegal address (CUDA context lost)",
                            seed=p.seed, error_bound=error_bound(p.K), l2_policy="flush")
            raise DeviceLost("context lost", m)
        return self._ok(cfg, p, 10e12)

    def free(self, p) -> None:
        pass


def stress_sweep():
    from experiments.sweep import parse_sweep  # noqa: PLC0415
    return parse_sweep(STRESS_SWEEP, "stress")


def check_file(path: Path) -> dict:
    """Rows expected by the stress sweep vs. rows in ``path``: lost, duplicated, invalid, extra."""
    from experiments.sweep import check_row, read_results  # noqa: PLC0415
    from model.spec import load_gpu  # noqa: PLC0415
    tasks, _ = stress_sweep().tasks(load_gpu("h200"))
    want = {t.key for t in tasks}
    rows = read_results(path).rows
    keys = [(r["config_key"], r["M"], r["N"], r["K"]) for r in rows]
    return {"expected": len(want), "rows": len(rows), "lost": len(want - set(keys)),
            "duplicated": len(keys) - len(set(keys)), "extra": len(set(keys) - want),
            "invalid": sum(1 for r in rows if check_row(r)),
            "devices": len({r["gpu"].get("uuid") for r in rows})}


def driver(args) -> int:
    """One driver: the sweep on the scheduler's workers, with the fake GPU."""
    from experiments.distributed import EngineOptions, run_distributed  # noqa: PLC0415
    from experiments.sweep import RunOptions  # noqa: PLC0415
    engine = EngineOptions(scheduler=args.scheduler, backend=FakeGPU(args.delay), run=RunOptions(seed=7),
                           wait_s=600)
    counts = run_distributed(stress_sweep(), engine, out=Path(args.out), log=lambda s: None)
    print(json.dumps(counts), flush=True)
    return 0 if not counts.get("pending") else 1


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def start_driver(address: str, out: Path, delay: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tools.dask_kill_stress", "driver", "--scheduler", address,
                             "--out", str(out), "--delay", str(delay)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stress(args) -> int:
    import dask  # noqa: PLC0415
    from distributed import Client, LocalCluster  # noqa: PLC0415
    rng = random.Random(args.seed)
    dask.config.set({"distributed.scheduler.worker-ttl": None})
    tmp = Path(tempfile.mkdtemp(prefix="dask-kill-stress-"))
    totals = {"worker_kills": 0, "driver_kills": 0, "rounds": 0, "expected": 0, "rows": 0, "lost": 0,
              "duplicated": 0, "extra": 0, "invalid": 0, "driver_starts": 0}
    t0 = time.monotonic()
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=50)
    client = Client(cluster)
    try:
        address = cluster.scheduler_address
        kills = 0
        while kills < args.kills:
            totals["rounds"] += 1
            out = tmp / f"round{totals['rounds']}.jsonl"
            while True:                             # until this round's sweep is complete
                proc = start_driver(address, out, args.delay)
                totals["driver_starts"] += 1
                rows_at_start = _lines(out)
                killed_driver = False
                while kills < args.kills and proc.poll() is None:
                    deadline = time.monotonic() + rng.uniform(args.min_gap, args.max_gap)
                    while time.monotonic() < deadline and proc.poll() is None:
                        time.sleep(0.01)
                    if proc.poll() is not None:
                        break
                    if rng.random() < args.driver_share:
                        if _lines(out) == rows_at_start:
                            continue                # not measuring yet: kill it mid-sweep, later
                        proc.send_signal(signal.SIGKILL)
                        proc.wait()
                        kills += 1
                        totals["driver_kills"] += 1
                        killed_driver = True
                        break                       # start the driver again: it resumes from the file
                    try:
                        pids = client.run(os.getpid, on_error="ignore")
                    except Exception:  # noqa: BLE001 - a worker restarting
                        pids = {}
                    if len(pids) >= max(2, args.workers - 1):   # never the last one
                        os.kill(rng.choice(sorted(pids.values())), signal.SIGKILL)
                        kills += 1
                        totals["worker_kills"] += 1
                if killed_driver:
                    continue
                stdout, stderr = proc.communicate()
                if proc.returncode != 0:
                    print(f"driver failed (exit {proc.returncode}):\n{stderr[-3000:]}", file=sys.stderr)
                    return 2
                break
            res = check_file(out)
            for k in ("expected", "rows", "lost", "duplicated", "extra", "invalid"):
                totals[k] += res[k]
            print(f"round {totals['rounds']}: {res}  (kills so far {kills})", flush=True)
    finally:
        try:                                # a nanny whose worker never came back can hang the close
            client.close(timeout=10)
            cluster.close(timeout=10)
        except Exception:  # noqa: BLE001
            pass
    totals["seconds"] = round(time.monotonic() - t0, 1)
    print(json.dumps(totals))
    bad = totals["lost"] or totals["duplicated"] or totals["extra"] or totals["invalid"]
    print(f"{totals['worker_kills']} worker kills + {totals['driver_kills']} driver kills over "
          f"{totals['rounds']} sweeps of {totals['expected'] // max(1, totals['rounds'])} rows: "
          f"{totals['lost']} rows lost, {totals['duplicated']} duplicated, {totals['invalid']} invalid"
          + (" FAILED" if bad else ""))
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.dask_kill_stress", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    d = sub.add_parser("driver", help="(internal) one sweep driver against --scheduler")
    d.add_argument("--scheduler", required=True)
    d.add_argument("--out", required=True)
    d.add_argument("--delay", type=float, default=0.02)
    ap.add_argument("--kills", type=int, default=24, help="kills in all (workers and driver) [24]")
    ap.add_argument("--workers", type=int, default=3, help="Dask worker processes [3]")
    ap.add_argument("--delay", type=float, default=0.05, help="fake seconds per row [0.05]")
    ap.add_argument("--driver-share", type=float, default=0.4, help="share of kills that hit the driver [0.4]")
    ap.add_argument("--min-gap", type=float, default=0.2, help="shortest wait between kills, s [0.2]")
    ap.add_argument("--max-gap", type=float, default=1.5, help="longest wait between kills, s [1.5]")
    ap.add_argument("--seed", type=int, default=None, help="random seed of the kill schedule")
    args = ap.parse_args(argv)
    if args.cmd == "driver":
        return driver(args)
    from experiments.distributed import dask_missing  # noqa: PLC0415
    if dask_missing():
        print(f"error: {dask_missing()}", file=sys.stderr)
        return 2
    if args.kills < 1 or args.workers < 1 or args.delay <= 0 or not 0 <= args.driver_share <= 1 \
            or not 0 < args.min_gap <= args.max_gap:
        print("error: need --kills >= 1, --workers >= 1, --delay > 0, 0 <= --driver-share <= 1, "
              "0 < --min-gap <= --max-gap", file=sys.stderr)
        return 2
    if args.seed is None:
        args.seed = random.randrange(2**31)
    print(f"kill schedule seed {args.seed}", flush=True)
    return stress(args)


if __name__ == "__main__":
    sys.exit(main())
