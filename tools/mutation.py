"""Mutation check: plant plausible bugs one at a time and see whether the tests catch them.

    python -m tools.mutation [--only ID ...] [--list] [--jobs N] [--json FILE]

Each mutant is (id, file, the exact old snippet, the new snippet, the tests to run). The repository is
copied once to a temporary folder (nothing in your checkout is touched); for each mutant the snippet is
replaced there, the named tests run (``pytest -x -q``), and the file restored. Outcomes:

* **killed**   - a test failed: the bug is caught;
* **survived** - every test passed: the tests cannot see this bug;
* **stale**    - the old snippet is not in the file (exactly once): the code moved on; re-target it.

Mutants marked ``retarget`` sit in ``model/timing.py``, which is being rewritten: expect them to go stale
and re-target them after that lands. The score is killed / (killed + survived).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]
    why: str
    retarget: bool = False


SWEEP_T = ("tests/test_sweep_safety.py", "tests/test_sweep_cpu.py")
GATE_T = ("tests/test_correctness_gate.py", "tests/test_mutants.py")

MUTANTS: tuple[Mutant, ...] = (
    # ---- sweep writer and reader -------------------------------------------------------------------
    Mutant("sweep-no-flush", "experiments/sweep.py", "        self._fh.flush()\n        os.fsync(self._fh.fileno())\n",
           "        os.fsync(self._fh.fileno())\n", SWEEP_T, "rows sit in a buffer: a crash loses them"),
    Mutant("sweep-no-fsync", "experiments/sweep.py", "        self._fh.flush()\n        os.fsync(self._fh.fileno())\n",
           "        self._fh.flush()\n", SWEEP_T, "rows not on disk when the machine dies"),
    Mutant("sweep-no-lock", "experiments/sweep.py", "        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)\n",
           "        fh.fileno()\n", SWEEP_T, "two sweeps write one file"),
    Mutant("sweep-cut-complete-row", "experiments/sweep.py", "    if results.unterminated:\n        with",
           "    if False:\n        with", SWEEP_T, "a complete last row left without its newline"),
    Mutant("sweep-cut-any-tail", "experiments/sweep.py",
           "elif _is_row_start(tail) and (rows or tail.lstrip().startswith(b'{\"schema\"')):", "elif True:",
           SWEEP_T, "a file that is not a results file is cut"),
    Mutant("sweep-mix-gpus", "experiments/sweep.py", "        if key != gpu_key:\n", "        if False:\n", SWEEP_T,
           "rows of two GPUs in one file"),
    Mutant("sweep-skip-failed-not-final", "experiments/sweep.py",
           "        if row.get(\"status\") in FINAL_STATUSES:\n", "        if row.get(\"status\") == \"ok\":\n", SWEEP_T,
           "failed configs re-run on every resume"),
    # ---- launcher: verification and timing ---------------------------------------------------------
    Mutant("launcher-no-recheck", "gpu/launcher.py", "        rel2, why2 = check_output(problem)\n",
           "        rel2, why2 = rel, why\n", GATE_T, "output not verified after the timed repetitions"),
    Mutant("launcher-no-l2-flush", "gpu/launcher.py",
           "    flush = flusher(l2_bytes).flush if l2_policy == \"flush\" else None\n", "    flush = None\n", GATE_T,
           "repetitions hit a warm L2"),
    Mutant("launcher-no-poison", "gpu/launcher.py", "        problem.C.fill(np.nan)\n", "        pass\n", GATE_T,
           "a stale correct C passes for a kernel that wrote nothing"),
    Mutant("launcher-no-element-check", "gpu/launcher.py", "    if n_over:\n", "    if False:\n", GATE_T,
           "one wrong element passes"),
    Mutant("launcher-loose-element-bound", "gpu/launcher.py", "    return abs_product * gamma + K * SMALLEST_NORMAL_FP32",
           "    return abs_product * gamma * 1000 + K * SMALLEST_NORMAL_FP32", GATE_T, "per-element bound 1000x loose"),
    Mutant("launcher-frobenius-loose", "gpu/launcher.py", "ERROR_BOUND_PER_SQRT_K = 2e-6", "ERROR_BOUND_PER_SQRT_K = 2e-3",
           ("tests/test_sweep_cpu.py",), "Frobenius bound 1000x loose"),
    # ---- model: occupancy, intensity, roofline, simulator -----------------------------------------
    Mutant("occupancy-no-register-rounding", "model/occupancy.py",
           "        regs_per_warp = _roundup(registers * gpu.warp_size, gpu.register_alloc_unit)\n",
           "        regs_per_warp = registers * gpu.warp_size\n", ("tests/test_occupancy.py",),
           "registers allocated per thread, not per 256-register unit"),
    Mutant("occupancy-no-reserved-smem", "model/occupancy.py",
           "        smem_alloc = _roundup(smem_bytes + gpu.shared_reserved_per_block, gpu.shared_alloc_unit)\n",
           "        smem_alloc = _roundup(smem_bytes, gpu.shared_alloc_unit)\n", ("tests/test_occupancy.py",),
           "the 1 KiB reserved per block forgotten"),
    Mutant("intensity-drop-writes", "model/intensity.py", "    naive_writes = M * N\n", "    naive_writes = 0 * M * N\n", ("tests/test_intensity.py",),
           "C's writes dropped from the naive intensity"),
    Mutant("roofline-plain-no-cap", "model/roofline.py",
           "    return min(gpu.peak_fp32_flop_per_s, gpu.dram_bandwidth_bytes_per_s * intensity)",
           "    return gpu.dram_bandwidth_bytes_per_s * intensity", ("tests/test_mutants.py", "tests/test_roofline.py"),
           "the plain roofline not capped by the FP32 peak"),
    Mutant("simulate-sector-64", "model/simulate.py", "SECTOR_BYTES = 32\n", "SECTOR_BYTES = 64\n",
           ("tests/test_simulate.py",), "32-byte sectors counted as 64"),
    Mutant("simulate-16-banks", "model/simulate.py", "BANKS = 32\n", "BANKS = 16\n", ("tests/test_simulate.py",),
           "16 shared-memory banks"),
    # ---- model/timing.py (being rewritten: re-target after the merge) --------------------------------
    Mutant("timing-swap-ab-traffic", "model/timing.py",
           "l2_bytes = a_bytes * gn * fr[:, 0] + b_bytes * gm * fr[:, 1] + 32.0 * pa.store_sectors * blocks",
           "l2_bytes = a_bytes * gm * fr[:, 0] + b_bytes * gn * fr[:, 1] + 32.0 * pa.store_sectors * blocks",
           ("tests/test_mutants.py", "tests/test_timing_structure.py"),
           "A and B re-read counts swapped in the L2 bytes"),
    Mutant("timing-drop-c-write", "model/timing.py",
           "l2_bytes = a_bytes * gn * fr[:, 0] + b_bytes * gm * fr[:, 1] + 32.0 * pa.store_sectors * blocks",
           "l2_bytes = a_bytes * gn * fr[:, 0] + b_bytes * gm * fr[:, 1]",
           ("tests/test_mutants.py", "tests/test_timing_structure.py"), "C's write dropped from the L2 bytes"),
    Mutant("timing-floor-k-tiles", "model/timing.py", "    nk = -(-(-(-K // pa.k_tile)) // S)",
           "    nk = -(-(K // pa.k_tile) // S)", ("tests/test_mutants.py", "tests/test_timing_structure.py", "tests/test_timing.py"),
           "K tiles floored"),
    Mutant("timing-no-partial-wave", "model/timing.py",
           "    sm_cycles = (nk * (full * t_full + np.where(rem > 0, t_rem, 0.0))",
           "    sm_cycles = (nk * (full * t_full)", ("tests/test_accuracy.py", "tests/test_timing.py"),
           "the partly filled last wave costs nothing"),
    Mutant("timing-latency-ignored", "model/timing.py",
           "    lg = np.where(pa.barriers > 0, prm.latency_scale * r.l2_latency_cycles,",
           "    lg = 0.0 * np.where(pa.barriers > 0, prm.latency_scale * r.l2_latency_cycles,",
           ("tests/test_accuracy.py",), "global-load latency never exposed"),
    Mutant("timing-bank-conflicts-ignored", "model/timing.py",
           "    Z = np.maximum(t1 - pa.instr, 0.0) + own + spills + bank",
           "    Z = np.maximum(t1 - pa.instr, 0.0) + own + spills", ("tests/test_timing_structure.py",),
           "register-bank conflicts never delay a warp"),
    Mutant("timing-dram-no-c-writeback", "model/timing.py",
           "    dram_bytes = dram_reads + dram_writes",
           "    dram_bytes = dram_reads", ("tests/test_mutants.py", "tests/test_timing_structure.py"),
           "C's write-back dropped from the DRAM bytes"),
    Mutant("timing-l2-one-partition", "model/timing.py",
           "_L2_PARTITIONS = {\"sm_80\": 2, \"sm_90\": 2}", "_L2_PARTITIONS = {}",
           ("tests/test_timing_structure.py",), "the L2 keeps A and B at its full size (partitions ignored)"),
    Mutant("timing-dram-c-not-allocated", "model/timing.py",
           "    cw = c_all * length / nb                                  # C written by each wave",
           "    cw = 1e-9 * c_all * length / nb                                  # C written by each wave",
           ("tests/test_timing_structure.py",), "C's stores take no room in L2 between waves"),
    # ---- analysis ------------------------------------------------------------------------------------
    Mutant("compare-within-exclusive", "analysis/compare.py", "\"within_10\": float(np.mean(ape <= 0.10 + _EPS)),",
           "\"within_10\": float(np.mean(ape < 0.10 - _EPS)),", ("tests/test_compare.py",),
           "a prediction exactly 10 % off not counted within 10 %"),
    Mutant("compare-sign-flipped", "analysis/compare.py", "    return (pred - meas) / meas",
           "    return (meas - pred) / meas", ("tests/test_compare.py",), "optimistic and pessimistic swapped"),
    Mutant("compare-spearman-ties", "analysis/compare.py", "    return 0.5 * (count[dense] + count[dense - 1] + 1)",
           "    return count[dense].astype(float)", ("tests/test_mutants.py",), "ties ranked by their last position"),
    Mutant("data-oldest-wins", "analysis/data.py", "        if k not in best or (r.date, i) >= best[k][:2]:",
           "        if k not in best or (r.date, i) <= best[k][:2]:", ("tests/test_mutants.py", "tests/test_compare.py"),
           "an old repeat of a measurement replaces the newest"),
    Mutant("report-fast-slow-swapped", "analysis/report.py",
           "    fast, slow = (p16, p32) if p16.time_s <= p32.time_s else (p32, p16)",
           "    fast, slow = (p32, p16) if p16.time_s <= p32.time_s else (p16, p32)", ("tests/test_report.py",),
           "the report names the slower block as faster"),
    Mutant("cli-size-unchecked", "analysis/cli.py", "    if mem is not None and need > mem[0]:",
           "    if mem is not None and need > 1000 * mem[0]:", ("tests/test_bad_inputs.py",),
           "sizes larger than the GPU's memory accepted"),
)


def _copy_repo(dst: Path) -> None:
    ignore = shutil.ignore_patterns(".git", "__pycache__", ".pytest_cache", "reports", "*.pyc")
    shutil.copytree(ROOT, dst, ignore=ignore, dirs_exist_ok=True)


def run_mutant(m: Mutant, repo: Path, timeout_s: float) -> dict:
    path = repo / m.file
    text = path.read_text(encoding="utf-8")
    if text.count(m.old) != 1:
        return {"id": m.id, "outcome": "stale", "seconds": 0.0,
                "detail": f"old snippet found {text.count(m.old)} times in {m.file}"}
    path.write_text(text.replace(m.old, m.new), encoding="utf-8")
    t0 = time.monotonic()
    try:
        r = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *m.tests],
                           cwd=repo, capture_output=True, text=True, timeout=timeout_s,
                           env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        outcome = "survived" if r.returncode == 0 else "killed"
        tail = (r.stdout.strip().splitlines() or [""])[-1]
    except subprocess.TimeoutExpired:
        outcome, tail = "killed", f"timed out after {timeout_s:.0f} s"
    finally:
        path.write_text(text, encoding="utf-8")
    return {"id": m.id, "outcome": outcome, "seconds": round(time.monotonic() - t0, 1), "detail": tail}


def main(argv=None) -> int:
    from analysis.cli import BadInput, Parser, positive_int, run
    ap = Parser(prog="python -m tools.mutation", description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", metavar="ID", help="run only these mutants")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--jobs", type=positive_int, default=1, help="mutants in parallel (each in its own copy) [1]")
    ap.add_argument("--timeout", type=positive_int, default=600, help="seconds per mutant's tests [600]")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = ap.parse_args(argv)

    def body() -> int:
        chosen = list(MUTANTS)
        if args.only:
            known = {m.id for m in MUTANTS}
            bad = [i for i in args.only if i not in known]
            if bad:
                raise BadInput(f"unknown mutant(s) {', '.join(bad)}; see --list")
            chosen = [m for m in MUTANTS if m.id in args.only]
        if args.list:
            for m in chosen:
                print(f"{m.id:32s} {m.file:24s} {m.why}" + ("  [re-target after the timing rewrite]" if m.retarget else ""))
            return 0
        results = []
        with tempfile.TemporaryDirectory(prefix="gemmscope-mut-") as tmp:
            repos = []
            for j in range(min(args.jobs, len(chosen))):
                d = Path(tmp) / f"r{j}"
                _copy_repo(d)
                repos.append(d)
            groups = [chosen[j::len(repos)] for j in range(len(repos))]

            def work(j):
                out = []
                for m in groups[j]:
                    res = run_mutant(m, repos[j], args.timeout)
                    print(f"{res['outcome']:8s} {m.id:32s} {res['seconds']:6.1f} s  {res['detail'][:70]}", flush=True)
                    out.append(res)
                return out

            with ThreadPoolExecutor(len(repos)) as ex:
                for out in ex.map(work, range(len(repos))):
                    results.extend(out)
        killed = sum(r["outcome"] == "killed" for r in results)
        survived = [r["id"] for r in results if r["outcome"] == "survived"]
        stale = [r["id"] for r in results if r["outcome"] == "stale"]
        scored = killed + len(survived)
        score = killed / scored if scored else float("nan")
        print(f"\n{len(results)} mutants: {killed} killed, {len(survived)} survived, {len(stale)} stale; "
              f"score {100 * score:.0f} % (killed / (killed + survived))")
        if survived:
            print("survived: " + ", ".join(survived))
        if stale:
            print("stale (re-target): " + ", ".join(stale))
        if args.json:
            Path(args.json).write_text(json.dumps({"results": results, "score": score}, indent=2) + "\n")
        return 0
    return run(body)


if __name__ == "__main__":
    sys.exit(main())
