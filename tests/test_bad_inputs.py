"""Every CLI entry point refuses bad input with ONE line naming the problem and exit status 2, before any
work: no traceback, nothing on stdout. The cases run in-process (fast); a few need a subprocess (a missing
optional package, a broken spec file in gpus/)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import analyze
from experiments import predict as exp_predict
from experiments import sweep as sw
from tools import calibrate, compiler_facts, sim_vs_ncu

ROOT = Path(__file__).resolve().parent.parent
H200 = ROOT / "experiments" / "results" / "h200"
NCU = str(H200 / "ncu.jsonl")
LADDER = str(H200 / "ladder.jsonl")
FIXTURE = str(ROOT / "tests" / "fixtures" / "mini_h200.jsonl")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("bad")
    (d / "bin.jsonl").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe" * 20)
    (d / "empty.jsonl").write_text("")
    (d / "malformed.jsonl").write_text('{"schema": "gemmscope.measurement", "schema_version": 1,\n')
    (d / "notes.txt").write_text("my notes\nno newline at the end")
    (d / "bin.toml").write_bytes(b"\xff\xfe\x00\x01" * 10)
    (d / "preds.jsonl").write_text("")
    (d / "taken.jsonl").write_text("exists\n")
    (d / "adir").mkdir()
    return {p.name: str(p) for p in d.iterdir()} | {"dir": str(d)}


def A(*argv):
    return (analyze.main, list(argv))


# (entry point, argv) with placeholders {name} for the files above. Each must exit 2 with one line.
CASES = [
    # analyze.py predict
    A("predict", "--size", "1000000000000", "1", "1"),
    A("predict", "--size", "0", "4096", "4096"),
    A("predict", "--size", "a", "b", "c"),
    A("predict", "--size", "100000", "100000", "100000"),            # over the RTX 4060's 8 GiB
    A("predict", "--gpu", "h200", "--config", "reg2d", "--size", "2000000", "2000000", "8"),   # over 141 GiB
    A("predict", "--config", "reg2d:BM=64,BM=128"),
    A("predict", "--regs", "300", "--config", "reg2d"),
    A("predict", "--regs", "64"),                                     # --regs without --config
    A("predict", "--regs", "0", "--config", "reg2d"),
    A("predict", "--config", "nosuch"),
    A("predict", "--config", "reg2d:BM=abc"),
    A("predict", "--config", "reg2d:XX=4"),
    A("predict", "--config", "reg2d:BM=65"),
    A("predict", "--config", "cublas"),
    A("predict", "--gpu", "nope"),
    A("predict", "--model", "magic"),
    A("predict", "--config", "naive", "--size", "3000000", "1", "1"),       # grid y: 93750 blocks > 65535
    # occupancy
    A("occupancy", "--threads", "0"),
    A("occupancy", "--threads", "2048"),
    A("occupancy", "--threads", "256", "--regs", "0"),
    A("occupancy", "--threads", "256", "--smem", "-1"),
    A("occupancy", "--threads", "256", "--smem", "10000000"),
    A("occupancy"),
    A("occupancy", "--threads", "x"),
    # derive, explain
    A("derive", "--gpu", "nope"),
    A("explain", "--config", "reg2d", "--size", "10000000000000", "2", "2"),
    A("explain", "--config", "reg2d", "--size", "65536", "65536", "65536"),
    A("explain"),
    A("explain", "--config", "reg2d", "--gpu", "/nonexistent/gpu.toml"),
    A("explain", "--config", "reg2d:BM=64,BM=64"),
    # compare
    A("compare", "{bin.jsonl}"),
    A("compare", "{empty.jsonl}"),
    A("compare", NCU),
    A("compare", "/nonexistent/data"),
    A("compare", "{malformed.jsonl}"),
    A("compare", "--predictions", "/nonexistent.jsonl"),
    A("compare", "--predictions", "{bin.jsonl}"),
    A("compare", "--predictions", LADDER, FIXTURE),
    A("compare", "--predictions", "{preds.jsonl}", FIXTURE),
    # plot, report, no such command
    A("plot", "nosuch"),
    A("plot", "occupancy", "--out", "x.txt"),
    A("plot", "sizes", "{bin.jsonl}"),
    A("plot", "scatter", FIXTURE, "--out", "{notes.txt}/x.png"),
    A("plot", "occupancy", "--gpu", "nope"),
    A("plot", "occupancy", "--out", "{adir}"),
    A("report", "--out", "{notes.txt}"),
    A("report", "{bin.jsonl}"),
    A("nosuchcommand"),
    # experiments.sweep
    (sw.main, ["ladder", "--dry-run", "--limit", "-1"]),
    (sw.main, ["ladder", "--dry-run", "--limit", "0"]),
    (sw.main, ["--summary", "/nonexistent.jsonl"]),
    (sw.main, ["--summary", "{bin.jsonl}"]),
    (sw.main, ["--summary", NCU]),
    (sw.main, ["--summary", "{empty.jsonl}"]),
    (sw.main, ["nosuch", "--dry-run"]),
    (sw.main, ["ladder", "--dry-run", "--sizes", "0"]),
    (sw.main, ["ladder", "--dry-run", "--gpu", "nope"]),
    (sw.main, ["ladder", "--dry-run", "--workers", "0"]),
    (sw.main, ["ladder", "--dry-run", "--time-limit", "-5"]),
    (sw.main, ["ladder", "--dry-run", "--reps", "5"]),
    (sw.main, ["{bin.toml}", "--dry-run"]),
    (sw.main, ["ladder", "--dry-run", "--out", "{notes.txt}"]),       # --out that is not a results file
    (sw.main, ["ladder", "--dry-run", "--out", LADDER]),             # rows of the H200, a dry run on the RTX 4060
    # experiments.predict
    (exp_predict.main, ["nosuch"]),
    (exp_predict.main, ["ladder", "--gpu", "nope"]),
    (exp_predict.main, ["ladder", "--out", "{taken.jsonl}"]),
    (exp_predict.main, ["ladder", "--model", "x"]),
    # tools.calibrate
    (calibrate.main, ["{bin.jsonl}"]),
    (calibrate.main, ["--out", "x.txt"]),
    (calibrate.main, ["/nonexistent"]),
    (calibrate.main, ["{empty.jsonl}"]),
    # tools.sim_vs_ncu
    (sim_vs_ncu.main, [LADDER]),
    (sim_vs_ncu.main, ["{bin.jsonl}"]),
    (sim_vs_ncu.main, ["/nonexistent.jsonl"]),
    (sim_vs_ncu.main, ["--plan", "nope"]),
    (sim_vs_ncu.main, ["{empty.jsonl}"]),
    # tools.compiler_facts (argument checks run before the optional toolchain is touched)
    (compiler_facts.main, ["--arch", "sm9"]),
    (compiler_facts.main, ["--configs", "nope"]),
    (compiler_facts.main, ["--jobs", "0"]),
    (compiler_facts.main, ["--out", "facts.txt"]),
]


def _ids():
    out = []
    for fn, argv in CASES:
        out.append(f"{fn.__module__.split('.')[-1]}:{' '.join(argv)[:60]}")
    return out


def test_at_least_forty_cases() -> None:
    assert len(CASES) >= 40


@pytest.mark.parametrize(("fn", "argv"), CASES, ids=_ids())
def test_bad_input_is_one_line_and_exit_2(fn, argv, files, capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)                       # nothing may be written where the tests run
    for k, v in files.items():
        argv = [a.replace("{" + k + "}", v) for a in argv]
    try:
        rc = fn(argv)
    except SystemExit as e:                           # argparse usage errors
        rc = e.code
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2, (rc, err)
    assert len(lines) == 1, err
    assert "Traceback" not in err and "error" in lines[0]
    assert out == "", out                             # before any work: nothing printed
    assert not any(tmp_path.iterdir()), list(tmp_path.iterdir())


def test_memory_refusal_names_the_figures(capsys) -> None:
    assert analyze.main(["predict", "--size", "100000", "100000", "100000"]) == 2
    err = capsys.readouterr().err
    assert "GiB" in err and "8.0 GiB" in err and "RTX 4060" in err


def test_compiler_facts_without_its_optional_packages() -> None:
    code = ("import sys; sys.modules['cuda'] = None; sys.modules['cuda.bindings'] = None\n"
            "from tools.compiler_facts import main\nsys.exit(main(['--configs', 'classic', '-q']))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "requirements-facts.txt" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_broken_spec_file_affects_only_commands_that_use_it() -> None:
    broken = ROOT / "gpus" / "zz_broken_test.toml"
    broken.write_text('schema_version = 1\nkey = "zz_broken_test"\nname = "half edited"\n[chip]\nsm_count = {')
    try:
        r = subprocess.run([sys.executable, "analyze.py", "compare", "--json", FIXTURE], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["n"] > 0
        r = subprocess.run([sys.executable, "analyze.py", "predict", "--gpu", "zz_broken_test"], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 2 and "zz_broken_test.toml" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    finally:
        broken.unlink()


def test_rows_that_are_not_json_lines_text_are_a_data_error(files) -> None:
    from analysis.data import DataError, load
    with pytest.raises(DataError, match="not a JSON Lines text file"):
        load([files["bin.jsonl"]])
