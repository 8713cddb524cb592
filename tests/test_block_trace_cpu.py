"""experiments/block_trace.py without a GPU: the probe goes into every kernel of the ladder at its first statement
(and compiles, where NVRTC is installed), the summary counts blocks per SM and the refill, bad input exits 2."""

from __future__ import annotations

import pytest

from experiments import block_trace as bt
from gpu.launcher import kernel_source
from model.registry import KernelConfig


def test_probe_opens_every_global_function_of_every_case() -> None:
    for key, *_ in bt.CASES:
        src = kernel_source(KernelConfig.parse(key))
        out = bt.instrument(src)
        assert out.count("GsBlockProbe gs_probe_;") == src.count("__global__")
        # the probe is the first statement of the kernel body, and the kernel's own text is otherwise unchanged
        i = out.index("__global__")
        j = out.index("{", i)
        assert out[j + 1:].startswith(" GsBlockProbe gs_probe_;")
        assert out.replace(bt.PROBE, "").replace(" GsBlockProbe gs_probe_;", "") == src


def test_probe_refuses_a_source_without_a_kernel() -> None:
    with pytest.raises(bt.ProbeError):
        bt.instrument("__device__ int f() { return 1; }")


def test_probed_sources_compile() -> None:
    cf = pytest.importorskip("tools.compiler_facts")
    try:
        nv = cf._nvrtc()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"NVRTC not installed (requirements-facts.txt): {exc}")
    for key in dict.fromkeys(k for k, *_ in bt.CASES):
        cfg = KernelConfig.parse(key)
        prog = cf._check(nv.nvrtcCreateProgram(bt.instrument(kernel_source(cfg)).encode(), b"k.cu", 0, [], []), "c")
        try:
            cf._check(nv.nvrtcAddNameExpression(prog, cfg.name_expression.encode()), "n")
            opts = [o.encode() for o in cf.nvrtc_options("sm_90")]
            (err,) = nv.nvrtcCompileProgram(prog, len(opts), opts)
            assert int(err) == 0, cfg.label
        finally:
            nv.nvrtcDestroyProgram(prog)


def test_summary_counts_the_refill() -> None:
    # 4 SMs, 2 slots each: 8 blocks of the first wave (0..100 ns), then 3 refill blocks, two of them on SM 1
    first = [(sm, 0, 100 + sm) for sm in range(4) for _ in range(2)]
    refill = [(1, 101, 200), (1, 102, 205), (3, 104, 190)]
    s = bt.summarise(first + refill, 4)
    assert s["blocks"] == 11 and s["even_blocks"] == 3 and s["busiest_sm_blocks"] == 4
    assert s["first_wave_blocks"] == 8 and s["refill_blocks"] == 3
    assert s["refill_sms"] == 2 and s["refill_most_on_one_sm"] == 2
    assert s["blocks_per_sm_histogram"] == {"2": 2, "3": 1, "4": 1}


def test_bad_case_exits_2_before_any_work(capsys, tmp_path) -> None:
    rc = bt.main(["--out", str(tmp_path / "x.json"), "--case", "06:BM=64,BN=64,BK=8,TM=8,TN=8", "0", "64", "64"])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("block_trace:")


def test_report_of_the_shipped_result_and_bad_report_input(capsys, tmp_path) -> None:
    import gzip
    import json
    from pathlib import Path
    f = Path(__file__).resolve().parent.parent / "experiments" / "results" / "h200" / "block_trace-2026-12-02.json.gz"
    table = bt.report(json.load(gzip.open(f)))
    lines = table.splitlines()
    assert len([x for x in lines if x.startswith("| 12 vred")]) == 5
    assert "| 6848x4x3328 | 864 | 2 | 9, 8, 8, 8, 8 | 7 | 8 |" in table and "264 of 264" in table
    assert lines[-1].startswith("Where the two deals differ: nearer the random order 10, nearer the even deal 6")
    assert bt.main(["--report", str(f)]) == 0 and "6848x4x3328" in capsys.readouterr().out
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"schema": "gemmscope.dispatch", "rows": []}))
    for arg in (str(bad), str(tmp_path / "missing.json")):
        assert bt.main(["--report", arg]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("block_trace: --report")


def test_launch_stats_of_a_planted_launch() -> None:
    # 2 SMs x 2 slots; SM 0's blocks end 10 ns apart, SM 1's 2 ns apart; the later blocks take SM 1's freed slots
    rec = [(0, 0, 100), (0, 0, 110), (1, 0, 90), (1, 0, 92), (1, 91, 200), (1, 93, 210)]
    st = bt.launch_stats(rec, 2)
    assert st["resident"] == 2 and st["refill_checked"] == 2 and st["refill_on_first_freed"] == 2
    assert st["one_sm_end_spread_ns"] == 6.0
