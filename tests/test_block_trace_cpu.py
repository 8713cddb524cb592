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
