"""How long the command line takes (a script, not a test: speed belongs here, not in timed unit tests).

    python benchmarks/bench_cli.py [--repeats 3] [--check] [--only NAME ...]

Runs each command ``--repeats`` times as a fresh process from the repository root and prints the median
wall time and the median CPU time (user + system of the child: what the command itself costs, whatever
else the machine is doing) against its goal: ``python analyze.py`` (the report) <= 5 s, every other
subcommand <= 1 s, on the project's 2-core machine. Also times the cross-validated predictions of every
shipped H200 row in-process (what ``compare`` and the report pay; the old ``test_predictions_are_fast``).
``--check`` exits 1 when a median wall time misses its goal.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
FIXTURE = "tests/fixtures/mini_h200.jsonl"


def commands(tmp: str) -> list[tuple[str, list[str], float]]:
    a = [PY, "analyze.py"]
    return [
        ("report (python analyze.py)", a + ["report", "--out", f"{tmp}/report"], 5.0),
        ("derive", a + ["derive"], 1.0),
        ("occupancy", a + ["occupancy", "--threads", "256"], 1.0),
        ("predict (ladder)", a + ["predict"], 1.0),
        ("predict --config", a + ["predict", "--config", "reg2d"], 1.0),
        ("predict --model roofline", a + ["predict", "--model", "roofline"], 1.0),
        ("explain", a + ["explain", "--config", "reg2d"], 1.0),
        ("compare (H200 data)", a + ["compare"], 1.0),
        ("compare (fixture)", a + ["compare", FIXTURE], 1.0),
        ("compare --predictions", a + ["compare", "--predictions", "experiments/predictions/edge_dev.jsonl"], 1.0),
        ("plot occupancy", a + ["plot", "occupancy", "--out", f"{tmp}/o.png"], 1.0),
        ("plot roofline", a + ["plot", "roofline", "--out", f"{tmp}/r.png"], 1.0),
        ("plot scatter", a + ["plot", "scatter", "--out", f"{tmp}/s.png"], 1.0),
        ("sweep --dry-run", [PY, "-m", "experiments.sweep", "ladder", "--dry-run"], 1.0),
        ("a bad input", a + ["predict", "--size", "0", "1", "1"], 1.0),
    ]


def time_one(argv: list[str]) -> tuple[float, float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, r.returncode


def bench_predictions(repeats: int) -> tuple[float, int]:
    sys.path.insert(0, str(ROOT))
    from analysis.data import load
    from model.simulate import simulate
    from model.spec import load_gpu
    from model.timing import predict_rows, profile
    rows = [r for r in load(None) if r.rung >= 1]
    gpu = load_gpu("h200")
    times = []
    for _ in range(repeats):
        profile.cache_clear()
        simulate.cache_clear()
        t0 = time.process_time()
        predict_rows(gpu, [r.config for r in rows], [r.size for r in rows], [r.num_regs for r in rows],
                     cross_validated=True)
        times.append(time.process_time() - t0)
    return statistics.median(times), len(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--check", action="store_true", help="exit 1 when a median wall time misses its goal")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="commands whose name contains one of these")
    args = ap.parse_args(argv)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; median of {args.repeats} runs")
    print(f"{'command':30s} {'wall s':>8s} {'CPU s':>8s} {'goal s':>7s}  verdict")
    missed = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, cmd, goal in commands(tmp):
            if args.only and not any(s in name for s in args.only):
                continue
            runs = [time_one(cmd) for _ in range(args.repeats)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            ok = wall <= goal
            if not ok:
                missed.append(name)
            print(f"{name:30s} {wall:8.2f} {cpu:8.2f} {goal:7.1f}  {'ok' if ok else 'SLOW'}"
                  f"{'' if all(r[2] in (0, 2) for r in runs) else '  (command failed)'}", flush=True)
    if not args.only:
        t, n = bench_predictions(args.repeats)
        print(f"cross-validated predictions of {n} H200 rows, caches cleared: {t:.2f} s CPU (median)")
    if missed:
        print(f"over the goal: {', '.join(missed)}")
    return 1 if (args.check and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
