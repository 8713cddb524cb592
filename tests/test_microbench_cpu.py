"""experiments/microbench.py without a GPU: the [timing] TOML emitter round-trips through the spec loader,
stored results rebuild their table, bad command lines exit 2 before any work."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from experiments import microbench as mb
from model.spec import GPU_DIR, TIMING_REQUIRED, load_gpu, parse_gpu

REPO = Path(__file__).resolve().parent.parent
SPEC_4060 = (GPU_DIR / "rtx4060.toml").read_text(encoding="utf-8").split("\n[timing]")[0]

# what microbench.run would report on an RTX 4060 (plausible numbers; not a measurement)
PARAMS = {
    "sustained_clock_hz": 2.61e9,
    "l1_latency_cycles": 41.3,
    "shared_latency_cycles": 29.9,
    "l2_latency_cycles": 251.2,
    "dram_latency_cycles": 612.7,
    "shared_bandwidth_bytes_per_s": 7.81e12,
    "l2_bandwidth_bytes_per_s": 1.71e12,
    "dram_read_bandwidth_bytes_per_s": 2.51e11,
    "dram_copy_bandwidth_bytes_per_s": 2.38e11,
    "launch_overhead_s": 2.9e-6,
    "l2_reduction_bytes_per_s": 1.1e12,
    "dram_reduction_bytes_per_s": 2.1e11,
    "fp32_flop_per_s": 1.55e13,
    "ffma_latency_cycles": 4.02,
    "l2_latency_spread_cycles": 17.0,
    "dram_latency_spread_cycles": 120.0,
    "dram_page_bytes": 1024.0,
    "batch_wait_per_load_cycles": 1.5,
}


def with_timing(toml_block: str) -> dict:
    return tomllib.loads(SPEC_4060.rstrip("\n") + "\n\n" + toml_block)


def test_methods_cover_every_timing_field() -> None:
    assert set(mb.METHODS) == set(mb.TIMING_KEYS)
    assert set(TIMING_REQUIRED) <= set(mb.TIMING_KEYS)


def test_toml_round_trips_through_the_loader() -> None:
    name = 'NVIDIA GeForce RTX 4060 "test" \\ bench'     # quotes and backslashes must be escaped
    block = mb.timing_toml(PARAMS, name, "2026-11-30")
    assert block.startswith("[timing]")
    spec = parse_gpu(with_timing(block), "roundtrip.toml")
    assert spec.missing_timing == ()
    assert set(spec.timing) == set(PARAMS)
    for k, v in PARAMS.items():
        assert spec.timing[k] == pytest.approx(v, rel=1e-6), k
        src = spec.sources[f"timing.{k}"]
        assert src.startswith(f"experiments/microbench.py on {name}, 2026-11-30: "), src
        assert src.endswith(mb.METHODS[k])


def test_toml_keeps_the_field_order_and_skips_unknown_and_invalid() -> None:
    params = dict(PARAMS, l2_read_buffer_bytes=8 << 20, dram_latency_cycles=float("nan"))
    block = mb.timing_toml(params, "GPU", "2026-11-30")
    keys = [line.split(" = ")[0] for line in block.splitlines() if " = {" in line]
    assert keys == [k for k in mb.TIMING_KEYS if k != "dram_latency_cycles"]
    assert "l2_read_buffer_bytes" not in block
    assert "# dram_latency_cycles: no valid measurement" in block
    spec = parse_gpu(with_timing(block), "partial.toml")
    assert spec.missing_timing == ("dram_latency_cycles",)


def test_number_format_is_valid_toml() -> None:
    for x in (1, 2.0, 1.98e9, 3.2e-6, 123456789.0, 4.14):
        text = mb._toml_number(x)
        assert tomllib.loads(f"x = {text}")["x"] == pytest.approx(float(x), rel=5e-6)   # 6 significant digits
        assert isinstance(tomllib.loads(f"x = {text}")["x"], float)
    for bad in (float("nan"), float("inf"), True, "3"):
        with pytest.raises(ValueError):
            mb._toml_number(bad)  # type: ignore[arg-type]


def test_check_against_spec_reports_an_implausible_measurement(tmp_path: Path) -> None:
    spec_path = tmp_path / "rtx4060.toml"
    spec_path.write_text(SPEC_4060, encoding="utf-8")
    assert mb.check_against_spec(mb.timing_toml(PARAMS, "GPU", "2026-11-30"), spec_path) is None
    # a DRAM chase that hit L2 (the bug of the first version) is caught
    bad = dict(PARAMS, dram_latency_cycles=PARAMS["l2_latency_cycles"] - 5)
    msg = mb.check_against_spec(mb.timing_toml(bad, "GPU", "2026-11-30"), spec_path)
    assert msg is not None and "timing.dram_latency_cycles" in msg
    assert mb.check_against_spec("[timing]\n", None) is None


def test_shipped_h200_json_rebuilds_its_table() -> None:
    # the shipped [timing] table is the one written by the 2026-11-30 run, plus the L2 reduction rate of the
    # 2026-12-01 run (a field the 2026-11-30 version did not measure), plus the batch waits of experiments/batch_latency
    # (2026-12-02: its main and pitch runs, which microbench.py now runs itself)
    import gzip

    from experiments.batch_latency import timing_fields
    stored = json.loads((REPO / "experiments/results/h200/microbench-2026-11-30.json").read_text())
    block = mb.toml_from_result(stored)
    data = tomllib.loads((GPU_DIR / "h200.toml").read_text(encoding="utf-8"))
    data["timing"] = tomllib.loads(block)["timing"]
    for name in ("microbench-2026-12-01.json", "microbench-2026-12-01b.json"):    # the fields added later
        later = json.loads((REPO / "experiments/results/h200" / name).read_text())
        data["timing"].update({k: v for k, v in tomllib.loads(mb.toml_from_result(later))["timing"].items()
                               if k not in data["timing"]})
    batch = [json.loads(gzip.open(REPO / "experiments/results/h200" / f"batch_latency_{s}-2026-12-02.json.gz").read())
             for s in ("main", "pitches")]
    fields = timing_fields({"rows": batch[0]["rows"] + batch[1]["rows"]})
    data["timing"].update({k: {"value": v, "source": "experiments/batch_latency.py"} for k, v in fields.items()})
    spec = parse_gpu(data, "h200 with the rebuilt table")
    shipped = load_gpu("h200").timing
    assert spec.missing_timing == ()
    assert set(spec.timing) == set(shipped)
    assert set(shipped) - set(stored["parameters"]) == {"l2_reduction_bytes_per_s", "dram_reduction_bytes_per_s",
                                                        "l2_latency_spread_cycles", "dram_latency_spread_cycles",
                                                        "dram_page_bytes", "batch_wait_per_load_cycles"}
    for k, v in spec.timing.items():
        assert v == pytest.approx(shipped[k], rel=2e-3), k


def test_from_json_writes_the_table(tmp_path: Path) -> None:
    out = tmp_path / "t.toml"
    rc = mb.main(["--from-json", str(REPO / "experiments/results/h200/microbench.json"), "--toml", str(out)])
    assert rc == 0 and tomllib.loads(out.read_text())["timing"]["l2_latency_cycles"]["value"] == pytest.approx(287.78,
                                                                                                            rel=1e-4)


def test_result_json_of_this_version_rebuilds_with_its_methods(tmp_path: Path) -> None:
    result = {"schema": mb.SCHEMA, "schema_version": mb.SCHEMA_VERSION, "date": "2026-11-30T14:00:00+00:00",
              "device": {"name": "NVIDIA GeForce RTX 4060"}, "parameters": PARAMS,
              "methods": {k: mb.METHODS[k] for k in PARAMS}}
    block = mb.toml_from_result(result)
    spec = parse_gpu(with_timing(block), "x.toml")
    assert spec.sources["timing.dram_latency_cycles"] == mb.source_text(
        "NVIDIA GeForce RTX 4060", "2026-11-30T14:00:00+00:00", mb.METHODS["dram_latency_cycles"])


@pytest.mark.parametrize("flag", ["--out", "--toml"])
def test_refuses_to_overwrite_before_any_work(tmp_path: Path, flag: str, capsys) -> None:
    existing = tmp_path / "old.json"
    existing.write_text("{}")
    assert mb.main([flag, str(existing)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already exists" in err and str(existing) in err
    assert existing.read_text() == "{}"


def test_bad_paths_exit_2(tmp_path: Path, capsys) -> None:
    assert mb.main(["--out", str(tmp_path / "no" / "dir.json")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert mb.main(["--from-json", str(tmp_path / "missing.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert mb.main(["--from-json", str(bad)]) == 2
    assert "not JSON" in capsys.readouterr().err


def test_no_gpu_exits_2_with_one_line(tmp_path: Path, capsys, monkeypatch) -> None:
    import gpu.device

    monkeypatch.setattr(gpu.device, "gpu_available", lambda: (False, "cupy cannot be imported (test)"))
    assert mb.main(["--out", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "microbench: no usable CUDA GPU: cupy cannot be imported (test)"
    assert not (tmp_path / "m.json").exists()


def test_cuda_source_compiles_for_every_shipped_arch() -> None:
    """NVRTC from PyPI (requirements-facts.txt) compiles the microbenchmarks on the CPU; skipped without it."""
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (requirements-facts.txt) not installed")
    from tools.compiler_facts import _check, _nvrtc

    nv = _nvrtc()
    for arch in sorted({load_gpu(k).arch for k in ("a100", "rtx3090", "rtx4060", "h200")}):
        prog = _check(nv.nvrtcCreateProgram(mb.SRC.encode(), b"microbench.cu", 0, [], []), "create")
        try:
            opts = [b"-std=c++17", f"-arch={arch}".encode()]
            (err,) = nv.nvrtcCompileProgram(prog, len(opts), opts)
            n = _check(nv.nvrtcGetProgramLogSize(prog), "log size")
            log = b" " * n
            nv.nvrtcGetProgramLog(prog, log)
            assert int(err) == 0, f"{arch}: {log.decode(errors='replace')}"
        finally:
            nv.nvrtcDestroyProgram(prog)


def test_dram_chain_visits_every_page_once_in_one_cycle() -> None:
    """The DRAM chase (numpy stands in for cupy): one line per 4 KiB page, one cycle, so the 4096 timed steps of
    microbench never revisit a line (every step misses L2 after the flush)."""
    import numpy as np

    pages = (32 << 20) // 4096
    nxt, start = mb._chain(np, pages, 1024, (32 << 20) // 4, jitter_elems=1024, seed=2)
    j, seen = start, []
    for _ in range(pages):
        seen.append(j)
        j = int(nxt[j])
    assert j == start                                   # a single cycle ...
    assert len({s // 1024 for s in seen}) == pages      # ... through every 4 KiB page once
    assert all(s % 32 == 0 for s in seen)               # line-aligned (128 B = 32 uint32)
    assert len({(s % 1024) for s in seen}) > 16         # lines at varied offsets within the page
    assert pages > 16 + mb.STEPS                        # warm-up + timed steps fit in one pass
    # the L2 chain: consecutive lines of a region, random order, one cycle
    nxt, start = mb._chain(np, 1000, 32, 32000, seed=4)
    j, n = int(nxt[start]), 1
    while j != start:
        j, n = int(nxt[j]), n + 1
    assert n == 1000


@pytest.mark.parametrize("name", ["dram_fetch", "icache", "icache_cold", "icache_flush", "icache_jump", "icache_layout", "icache_loops", "icache_ramp", "icache_share", "l1_lines", "lds_patterns", "overlap", "store_patterns"])
@pytest.mark.parametrize("argv, what", [(["--iters", "0"], "--iters"), (["--iters", "-3"], "--iters"),
                                        (["--out", "experiments/results/h200/icache-2026-11-30.json"], "already exists"),
                                        (["--out", "no/such/folder/x.json"], "does not exist")])
def test_clock_microbenchmarks_refuse_bad_input_before_any_work(name, argv, what, capsys, monkeypatch) -> None:
    import importlib
    mod = importlib.import_module(f"experiments.{name}")
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    monkeypatch.setattr(mod, "run", lambda *a, **k: pytest.fail("ran before refusing"))
    assert mod.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and what in err[0] and err[0].startswith(f"{name}: ")


def test_icache_result_backs_the_fetch_constants() -> None:
    # the shipped microbenchmark run: loops up to 24 KB issue at ~1 cycle per instruction, 40 KB and more at the
    # fetch rate model.facts.INSTRUCTION_FETCH uses (within 10 %), one warp per scheduler
    import json
    from pathlib import Path
    from model.facts import INSTRUCTION_FETCH
    d = json.loads((Path(__file__).resolve().parent.parent / "experiments" / "results" / "h200"
                    / "icache-2026-11-30.json").read_text())
    assert d["schema"] == "gemmscope.icache" and "H200" in d["gpu"]
    l0, rate = INSTRUCTION_FETCH["sm_90"]
    for r in d["rows"]:
        if r["warps_per_scheduler"] != 1:
            continue
        if r["code_bytes"] <= 24 * 1024:
            assert r["cycles_per_instruction"] < 1.1
        elif r["code_bytes"] >= 40 * 1024:
            assert abs(16.0 / r["cycles_per_instruction"] - rate) / rate < 0.1
    assert l0 == 32 * 1024


def test_icache_cold_result_backs_the_code_cache_constants() -> None:
    # the shipped run (4 warps a block, one a scheduler): loops of 48-128 KB stream at the L0-miss rate of
    # INSTRUCTION_FETCH, 192 KB and more at CODE_CACHE's L2 rate (within 10 %); a relaunch of code that fits the
    # cache costs nothing on its first pass (under 3 % of an iteration, or 600 cycles at the smallest sizes)
    import json
    from pathlib import Path
    from model.facts import CODE_CACHE, INSTRUCTION_FETCH
    d = json.loads((Path(__file__).resolve().parent.parent / "experiments" / "results" / "h200"
                    / "icache_cold-2026-12-01.json").read_text())
    assert d["schema"] == "gemmscope.icache_cold" and "H200" in d["gpu"]
    cap, r_l2 = CODE_CACHE["sm_90"]
    r_l1 = INSTRUCTION_FETCH["sm_90"][1]
    for r in d["rows"]:
        if r["warps_per_block"] != 4:
            continue
        b0 = r["block0"]
        rate = r["code_bytes"] / b0["steady_iteration_cycles"]
        if 48 * 1024 <= r["code_bytes"] <= cap:
            assert abs(rate - r_l1) / r_l1 < 0.1
            if r["launch"] == 2:
                assert b0["cold_cycles"] < max(0.03 * b0["steady_iteration_cycles"], 600)
        elif r["code_bytes"] > cap:
            assert abs(rate - r_l2) / r_l2 < 0.1
    assert cap == 128 * 1024


def test_icache_cold_summary_orders_the_blocks_of_an_sm() -> None:
    from experiments.icache_cold import summarise
    # two SMs, two blocks each (given out of order); stamps: smid, global start, clock before, after each of 4 its
    stamps = [[3, 200, 0, 500, 600, 700, 800], [3, 100, 0, 900, 1000, 1100, 1200],
              [5, 100, 0, 1000, 1100, 1200, 1300], [5, 300, 0, 500, 600, 700, 800]]
    s = summarise(stamps, 4)
    assert s["block0"] == {"first_iteration_cycles": 950.0, "steady_iteration_cycles": 100.0, "cold_cycles": 850.0,
                           "sms": 2}
    assert s["block1"]["cold_cycles"] == 400.0


def test_lds_patterns_result_shows_strided_sharing_costs_like_distinct_words() -> None:
    # the shipped run, 16 warps, one FFMA per load (the pipe binds): lanes sharing words at a stride cost what 32
    # distinct words cost; sharing in runs of consecutive lanes costs what a broadcast costs
    import json
    from pathlib import Path
    d = json.loads((Path(__file__).resolve().parent.parent / "experiments" / "results" / "h200"
                    / "lds_patterns-2026-12-01.json").read_text())
    assert d["schema"] == "gemmscope.lds_patterns" and "H200" in d["gpu"]
    cyc = {r["pattern"]: r["cycles_per_iteration"] / (32 * 16) for r in d["rows"]
           if r["ffma_per_load"] == 1 and r["warps_per_block"] == 16}
    assert abs(cyc["lane%4"] - cyc["lane"]) / cyc["lane"] < 0.02 and abs(cyc["lane%8"] - cyc["lane"]) / cyc["lane"] < 0.02
    assert abs(cyc["lane/4"] - cyc["lane/32"]) / cyc["lane/32"] < 0.02
    assert cyc["lane"] > 1.7 * cyc["lane/32"]
    assert cyc["tc4"] < cyc["tr4"] < cyc["lane"]


def test_overlap_result_shows_the_load_pipe_floor() -> None:
    # the shipped run: with the loads' 4 wavefronts (32 distinct 16-byte words) and one FFMA per load the loop is
    # bound by the shared-memory pipe at about one wavefront a cycle, however many warps run
    import json
    from pathlib import Path
    d = json.loads((Path(__file__).resolve().parent.parent / "experiments" / "results" / "h200"
                    / "overlap-2026-11-30.json").read_text())
    assert d["schema"] == "gemmscope.overlap"
    for r in d["rows"]:
        if r["lanes_per_word"] == 1 and r["ffma_per_load"] == 1:
            loads = r["steps"] * r["warps_per_block"]            # LDS.128 per iteration and SM
            assert 3.8 < r["cycles_per_iteration"] / loads < 4.4


def test_clockprobe_refuses_bad_input_before_any_work(capsys, monkeypatch) -> None:
    from experiments import clockprobe
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    monkeypatch.setattr(clockprobe, "probe", lambda *a, **k: pytest.fail("ran before refusing"))
    good = "12:BM=128,BN=256,BK=8,WM=64,WN=32,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=4,SPREAD=1:512:512:16384"
    for argv, what in [(["04:BM=128:64"], "is not CONFIG_KEY:M:N:K"), (["nosuchrung:8:8:8"], "nosuchrung"),
                       (["04:BM=128,BN=128,BK=8,TM=8,TN=8:0:64:64"], "is not CONFIG_KEY:M:N:K"),
                       (["--seconds", "0", good], "--seconds"),
                       (["--out", "experiments/results/h200/clockprobe-2026-12-01.json", good], "already exists")]:
        assert clockprobe.main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and what in err[0] and err[0].startswith("clockprobe: "), err


def test_clockprobe_result_backs_one_sustained_clock_for_every_kernel() -> None:
    # the shipped run (H200, 2026-12-01): ladder kernels and cuBLAS, 1.5 s each back to back, never left the
    # 1980 MHz the spec's sustained_clock_hz holds, with no clock-event (throttle) reason and under the 700 W limit:
    # the timing model's one clock per GPU is not why some configs run slower than predicted
    import json
    from model.spec import load_gpu
    d = json.loads((Path(__file__).resolve().parent.parent / "experiments" / "results" / "h200"
                    / "clockprobe-2026-12-01.json").read_text())
    assert d["schema"] == "gemmscope.clockprobe" and "H200" in d["gpu"] and len(d["rows"]) >= 8
    clock = load_gpu("h200").timing["sustained_clock_hz"]
    for r in d["rows"]:
        assert r["status"] == "ok" and r["verified"]
        fields = [x.split(",") for x in r["smi_lines"]]
        assert len(fields) > 50
        assert all(abs(float(f[1]) * 1e6 - clock) / clock < 0.01 for f in fields)
        assert all(int(f[3], 16) == 0 for f in fields) and max(float(f[2]) for f in fields) < 700


def test_l1_lines_result_backs_the_tag_stage_constants() -> None:
    # the shipped run: streaming loads over 4-32 lines fit c0 + lines / rate within 0.15 cycles, the constants of
    # model.facts.L1_TAG; loads whose rows share one bank cost a data-stage wavefront each (32 rows: 32 cycles)
    import json
    import numpy as np
    from model.facts import L1_TAG
    d = json.loads((Path(__file__).resolve().parent.parent / "experiments" / "results" / "h200"
                    / "l1_lines-2026-12-01.json").read_text())
    assert d["schema"] == "gemmscope.l1_lines" and "H200" in d["gpu"]
    rows = [r for r in d["rows"] if r["warps_per_block"] == 32]
    st = [r for r in rows if r["mode"] == "stream" and r["pattern"] in ("A_coal8", "A_unc8", "A_unc16", "A_unc32")]
    L = np.array([r["lines"] for r in st], dtype=float)
    y = np.array([r["cycles_per_load"] for r in st])
    slope, c0 = np.polyfit(L, y, 1)
    assert (c0, 1 / slope) == pytest.approx(L1_TAG["sm_90"], abs=0.02)
    assert np.abs(y - (c0 + slope * L)).max() < 0.15
    bank = {r["pattern"]: r["cycles_per_load"] for r in rows if r["pattern"].endswith("_bank")}
    assert bank["rows32_bank"] == pytest.approx(32.0, rel=0.01) and bank["rows8_bank"] == pytest.approx(8.0, rel=0.01)


def test_dram_fetch_result_backs_the_fetch_constant() -> None:
    # the shipped run: after an L2 flush, of a line's four sectors read in turn the first and third cost DRAM's
    # latency and the second and fourth an L2 hit's: the L2 fills 64 bytes, model.facts.DRAM_FETCH_BYTES
    import json
    from model.facts import DRAM_FETCH_BYTES
    from experiments.dram_fetch import SECTORS, summarise
    d = json.loads((Path(__file__).resolve().parent.parent / "experiments" / "results" / "h200"
                    / "dram_fetch-2026-12-01.json").read_text())
    assert d["schema"] == "gemmscope.dram_fetch" and "H200" in d["gpu"]
    for r in d["rows"]:
        s = summarise(r["cycles_raw"])
        assert s == {k: r[k] for k in s}
        hit, miss = s["sector1_median_cycles"], s["sector0_median_cycles"]
        assert hit < 0.6 * miss and s["sector3_median_cycles"] < 0.6 * miss
        assert s["sector2_median_cycles"] > 0.9 * miss                  # the next 64 bytes were not fetched
        assert len(r["cycles_raw"]) == SECTORS * r["lines"]
    assert DRAM_FETCH_BYTES["sm_90"] == 64


def test_dram_fetch_chain_visits_each_line_sector_by_sector() -> None:
    from experiments.dram_fetch import SECTORS, SPACING, chain
    nxt, start = chain(64)
    seen, j = [], start
    for _ in range(64 * SECTORS):
        seen.append(j)
        j = int(nxt[j])
    assert j == start and len(set(seen)) == 64 * SECTORS
    lines = [s // (SPACING // 4) for s in seen]
    assert all(lines[i] == lines[i - i % SECTORS] for i in range(len(seen)))      # four steps per line
    assert [s % (SPACING // 4) for s in seen[:SECTORS]] == [0, 8, 16, 24]         # sectors 0, 1, 2, 3 in turn


def test_red_beyond_l2_steady_pass_and_refusals(capsys) -> None:
    from experiments import red_beyond_l2 as rb
    assert rb.per_pass(10e-6, 40e-6) == pytest.approx(10e-6)       # (t(4) - t(1)) / 3
    assert rb.per_pass(10e-6, 10e-6) == 0.0
    assert rb.main(["--iters", "0"]) == 2
    assert "--iters must be at least 1" in capsys.readouterr().err


def _shipped(name: str) -> dict:
    import json
    return json.loads((Path(__file__).resolve().parent.parent / "experiments" / "results" / "h200" / name).read_text())


def test_icache_share_result_backs_one_code_rate_for_any_number_of_sms() -> None:
    # the shipped run: code beyond the cache streams from L2 at CODE_CACHE's rate (within 10 %) whether 1 or 132 SMs
    # fetch at once, so model.timing charges the first round's fetch per scheduler, not shared between SMs
    from model.facts import CODE_CACHE
    cap, r_l2 = CODE_CACHE["sm_90"]
    d = _shipped("icache_share-2026-12-01.json")
    assert d["schema"] == "gemmscope.icache_share" and "H200" in d["gpu"]
    beyond = [r for r in d["rows"] if r["code_bytes"] > cap and r["launch"] == 2]
    assert {r["blocks"] for r in beyond} >= {1, 4, 33, 132}
    for r in beyond:
        assert abs(r["bytes_per_cycle_per_scheduler"] - r_l2) / r_l2 < 0.1


def test_icache_flush_result_shows_the_cache_keeps_code_across_an_l2_flush() -> None:
    # the shipped run: 96 KB of code stays in the SM's instruction cache across another kernel and the sweeps' L2
    # flush (first pass within 3 % of a later one); 192 KB does not fit, and after the flush its first pass reads the
    # code from DRAM, more than twice as slow as after a relaunch (from L2), a little slower still on 1-8 SMs
    d = _shipped("icache_flush-2026-12-01.json")
    assert d["schema"] == "gemmscope.icache_flush" and "H200" in d["gpu"]
    rows = {(r["code_bytes"] // 1024, r["blocks"], r["protocol"]): r for r in d["rows"]}
    for (kb, b, proto), r in rows.items():
        if kb == 96:
            assert r["cold_cycles"] < 0.03 * r["steady_iteration_cycles"]       # no slower than a later pass
        elif proto == "l2_flush":
            assert r["first_iteration_cycles"] > 1.9 * rows[(kb, b, "relaunch")]["first_iteration_cycles"]
    assert rows[(192, 1, "l2_flush")]["first_iteration_cycles"] > 1.05 * rows[(192, 132, "l2_flush")]["first_iteration_cycles"]


def test_icache_jump_result_shows_code_jumped_over_costs_about_one_miss() -> None:
    # the shipped run: a 24 KB loop behind 48-192 KB of code no block runs (a SASS of up to 217 KB, beyond the 128 KB
    # cache) keeps its place in the SM's instruction cache across launches and the L2 flush: its first pass costs at
    # most a few hundred cycles more than a later one, as with nothing jumped over
    d = _shipped("icache_jump-2026-12-01.json")
    assert d["schema"] == "gemmscope.icache_jump" and "H200" in d["gpu"]
    assert max(r["skipped_bytes"] for r in d["rows"]) + max(r["loop_bytes"] for r in d["rows"]) > 128 * 1024
    for r in d["rows"]:
        assert r["cold_cycles"] < 400 and r["cold_cycles"] < 0.25 * r["steady_iteration_cycles"]


def test_icache_loops_result_shows_two_loops_behind_a_jump_refetched_every_launch() -> None:
    # the shipped run: two 35 KB loops stay in the SM's instruction cache across launches and the L2 flush (their first
    # pass refills only the L0: under 2k cycles more than a later one), but behind 80 KB of code jumped over (rung 11's
    # classic layout) they are fetched again on every launch, from DRAM after the flush (over 10k cycles each)
    d = _shipped("icache_loops-2026-12-01.json")
    assert d["schema"] == "gemmscope.icache_loops" and "H200" in d["gpu"]
    rows = {(r["loop_bytes"] // 1024, r["skipped_bytes"] // 1024, r["protocol"]): r for r in d["rows"]}
    for proto in ("relaunch", "l2_flush"):
        for loop in ("a", "b"):
            assert rows[(35, 0, proto)][loop]["cold_cycles"] < 2000
            assert rows[(35, 80, proto)][loop]["cold_cycles"] > 2 * rows[(35, 0, proto)][loop]["cold_cycles"]
        assert min(rows[(35, 80, "l2_flush")][x]["cold_cycles"] for x in "ab") > 10000


def test_first_and_steady_reads_each_loop_from_its_own_stamps() -> None:
    from experiments.icache_cold import first_and_steady
    from experiments.icache_loops import per_loop
    # two blocks; stamps: smid, clock before loop a, after each of its 4 iterations, after each of loop b's 4
    stamps = [[0, 0, 900, 1000, 1100, 1200, 1700, 1800, 1900, 2000],
              [1, 0, 700, 800, 900, 1000, 1300, 1400, 1500, 1600]]
    assert first_and_steady(stamps, 4, 1) == {"first_iteration_cycles": 800.0, "steady_iteration_cycles": 100.0,
                                              "cold_cycles": 700.0}
    loops = per_loop(stamps, 4)
    assert loops["a"]["cold_cycles"] == 700.0
    assert loops["b"] == {"first_iteration_cycles": 400.0, "steady_iteration_cycles": 100.0, "cold_cycles": 300.0}


def test_launches_after_runs_the_action_before_each_timed_launch_only(monkeypatch) -> None:
    # two warm-up launches with no action, then every timed launch right after its action; the stamps come back
    # per launch and per block (a fake cupy records the order)
    import sys
    import types
    import numpy as np
    from experiments.icache_cold import launches_after
    events = []

    class Buf:
        def __init__(self, n):
            self.a = np.zeros(n, dtype=np.int64)

        def get(self):
            return self.a

    fake = types.SimpleNamespace(zeros=lambda n, dtype=None: Buf(n), int64=np.int64,
                                 cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(
                                     deviceSynchronize=lambda: events.append("sync"))))
    monkeypatch.setitem(sys.modules, "cupy", fake)

    def launch(st):
        events.append("launch")
        st.a[:] = np.arange(st.a.size) + 10 * events.count("launch")

    out = launches_after(launch, 2, 3, lambda: events.append("before"), 2)
    assert events == ["launch", "launch", "before", "launch", "sync", "before", "launch", "sync"]
    assert out == [[[30, 31, 32], [33, 34, 35]], [[40, 41, 42], [43, 44, 45]]]


def test_icache_layout_result_shows_two_loops_ending_past_120_kb_refetched_and_one_loop_never() -> None:
    # the shipped scan (fifteenth session): one 35 KB loop stays in the SM's instruction cache wherever it lies; two
    # 35 KB loops stay when they end by 111 KB and are fetched again on every launch when they end at 127 KB or later
    # (from DRAM after the L2 flush: over 7k cycles each); code jumped over after the loops evicts nothing
    d = _shipped("icache_layout-2026-12-01.json")
    assert d["schema"] == "gemmscope.icache_layout" and "H200" in d["gpu"]
    rows = {(r["loop_bytes"] // 1024, r["skipped_before_bytes"] // 1024, r["loops"], r["skipped_after_bytes"] // 1024,
             r["protocol"]): r for r in d["rows"]}
    for (kb, before, loops, after, proto), r in rows.items():
        colds = [r[x]["cold_cycles"] for x in "ab" if x in r]
        if loops == 1 or (kb == 35 and before <= 40):
            assert max(colds) < 2000, (kb, before, loops, after, proto)
        if kb == 35 and loops == 2 and before >= 56 and proto == "l2_flush":
            assert min(colds) > 7000, (kb, before, proto)


def test_icache_layout_cases_compile_options_and_refuse_bad_cases() -> None:
    from experiments.icache_layout import CASES, options
    assert len(set(CASES)) == len(CASES)
    assert options((35, 64, 2, 0)) == ("-DNBODY=2240", "-DNSKIP=4096", "-DNLOOPS=2", "-DNSKIP2=0")
    for bad in ((0, 0, 2, 0), (35, -8, 2, 0), (35, 0, 3, 0), (35, 0, 2, -1)):
        with pytest.raises(ValueError, match="bad case"):
            options(bad)


def test_store_patterns_result_backs_the_store_path_constants() -> None:
    # the shipped run on four SMs: a warp-level store costs about a cycle a line plus a cycle a sector
    # (model.facts.STORE_PATH, within 4 cycles on every pattern), and 4-byte lanes cost what 16-byte ones over the
    # same sectors do; on every SM the L2 paces the stores (the patterns of 16 or more sectors 1.5-1.8 times slower)
    from model.facts import STORE_PATH
    d = _shipped("store_patterns-2026-12-01b.json")
    assert d["schema"] == "gemmscope.store_patterns" and "H200" in d["gpu"]
    c_line, c_sector = STORE_PATH["sm_90"]
    four = {r["pattern"]: r for r in d["rows"] if r["blocks"] == 4}
    every = {r["pattern"]: r for r in d["rows"] if r["blocks"] == d["sms"]}
    assert len(four) == len(every) == 8
    for r in four.values():
        assert abs(c_line * r["lines"] + c_sector * r["sectors"] - r["cycles_per_warp_store"]) < 4.0, r["pattern"]
    assert four["tile16_elem"]["cycles_per_warp_store"] == pytest.approx(four["tile16_vec"]["cycles_per_warp_store"], rel=0.05)
    for name, r in every.items():
        if r["sectors"] >= 16:
            assert r["cycles_per_warp_store"] > 1.4 * four[name]["cycles_per_warp_store"], name


def test_store_pattern_spans_count_lines_and_sectors() -> None:
    from experiments.store_patterns import PATTERNS, span
    by = {p[0]: p for p in PATTERNS}
    assert span(by["line_elem"]) == (1, 4)          # 32 consecutive words
    assert span(by["rows32_elem"]) == (32, 32)      # one word in each of 32 rows
    assert span(by["tile16_vec"]) == (8, 32)        # rung 06's epilogue: two rows of 16 lanes, 32 bytes apart


def test_flag_kernel_stamps_launches_one_block_an_sm_with_the_flag_off(monkeypatch) -> None:
    # icache_jump, icache_loops and icache_layout launch their kernels through it: blocks x warps threads, the full
    # dynamic shared memory (one block an SM), arguments (out, stamps, a, b, iters, flag = 0) - the code the kernels
    # jump over runs only when flag is set; two warm-ups, then the timed launches after the protocol's action
    import sys
    import types
    import numpy as np
    from experiments.icache_cold import SHARED_BYTES, flag_kernel_stamps
    calls = []

    class Buf:
        def __init__(self, n):
            self.a = np.zeros(n, dtype=np.int64)

        def get(self):
            return self.a

    fake = types.SimpleNamespace(zeros=lambda n, dtype=None: Buf(n), int64=np.int64, float32=float, int32=int,
                                 cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(deviceSynchronize=lambda: None)))
    monkeypatch.setitem(sys.modules, "cupy", fake)

    class Kernel:
        max_dynamic_shared_size_bytes = 0

        def __call__(self, grid, block, args, shared_mem=0):
            calls.append((grid, block, args[2:], shared_mem, self.max_dynamic_shared_size_bytes))
            args[1].a[:] = len(calls)

    out = flag_kernel_stamps(Kernel(), 3, 4, 5, 2, "relaunch", 2)
    assert len(calls) == 4 and len(out) == 2 and out[1] == [[4, 4]] * 3
    for grid, block, rest, shm, attr in calls:
        assert grid == (3,) and block == (128,) and rest == (0.999, 0.001, 5, 0)
        assert shm == attr == SHARED_BYTES


def _shipped(name: str) -> dict:
    import json
    return json.loads((Path(__file__).resolve().parent.parent / "experiments" / "results" / "h200" / name).read_text())


def test_the_l1_tag_bank_hash_reproduces_every_all_hit_load_measured() -> None:
    # model.facts.L1_TAG_BANKS (sm_90) against the shipped l1_pairs runs (427 loads of 2, 4 and 8 lines, 1-160 lines
    # and one or two powers of two up to 2^17 lines apart; every load a hit) and the l1_stride rerun (33 loads of 8-32
    # rows 447-1031 words apart, its buffer's address recorded): a load costs the most lines one of the four banks
    # looks up (0.01 cycles of loop overhead); a changed column, or another bank count, fails it
    import numpy as np
    from model.facts import L1_TAG_BANKS
    from model.simulate import tag_bank_max
    cols = L1_TAG_BANKS["sm_90"]
    checked = 0
    for name in ("l1_pairs2-2026-12-02.json", "l1_pairs_bits-2026-12-02.json"):
        d = _shipped(name)
        assert "H200" in d["gpu"]
        for r in d["rows"]:
            if r["warps_per_block"] != 32:
                continue
            rows_per_load = 32 // r["lanes_per_row"]
            lane_row = np.arange(32) // r["lanes_per_row"]
            # load s of the loop reads word 32 s + row (32 D + 1): line s + row D
            words = 32 * np.arange(16)[:, None] + lane_row[None, :] * r["row_words"]
            cost = tag_bank_max(words, np.ones_like(words, dtype=bool), cols).mean()
            assert r["cycles_per_load"] - 0.01 == pytest.approx(cost, abs=0.02), (name, rows_per_load, r["lines_apart"])
            checked += 1
    d = _shipped("l1_stride_rerun-2026-12-02.json")
    err = []
    for r in d["rows"]:
        if r["warps_per_block"] != 32 or r["mode"] != "hit":
            continue
        lane_row = np.arange(32) // r["lanes_per_row"]
        words = r["base_address"] // 4 + r["step_words"] * np.arange(16)[:, None] + lane_row[None, :] * r["row_words"]
        cost = tag_bank_max(words, np.ones_like(words, dtype=bool), cols).mean()
        err.append(r["cycles_per_load"] - 0.01 - cost)
    err = np.abs(np.array(err))
    assert checked == 427 and len(err) == 33
    assert err.max() < 0.1 and err.mean() < 0.02     # 32-row loads cost 9.2-13.4 cycles: the hash, not a trend


def test_batch_latency_issues_every_load_of_a_batch_between_its_clock_stamps() -> None:
    """experiments.batch_latency times the wait for n loads in flight together: in the SASS of every batch size, width
    and load, the n loads come right after the first clock read, with nothing between them (the rows at immediate
    offsets: no address arithmetic), and before the first add and the second clock read (ptxas at -O3 issues some
    after the first add, which waits for the first load: hence -O1, experiments.batch_latency.OPTIONS)."""
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (requirements-facts.txt) not installed")
    import tempfile
    from experiments.batch_latency import ISSUE_CYCLES, OPTIONS, SIZES, SRC
    from tools.compiler_facts import _check, _nvrtc, disassemble

    nv = _nvrtc()
    todo = [(n, 1, 4224, "nc") for n in SIZES] + [(n, w, 135168, c) for n in (5, max(SIZES)) for w in (0, 4)
                                                   for c in ("nc", "cg")]
    for n, width, pitch, cache in todo:
        prog = _check(nv.nvrtcCreateProgram(SRC.encode(), b"batch_latency.cu", 0, [], []), "create")
        try:
            opts = [b"-arch=sm_90", *(o.encode() for o in (f"-DN={n}", f"-DWIDTH={width}", f"-DPITCH={pitch}",
                                                          f"-DCACHE={cache}", *OPTIONS))]
            (err,) = nv.nvrtcCompileProgram(prog, len(opts), opts)
            assert int(err) == 0
            size = _check(nv.nvrtcGetCUBINSize(prog), "size")
            cubin = b" " * size
            nv.nvrtcGetCUBIN(prog, cubin)
        finally:
            nv.nvrtcDestroyProgram(prog)
        with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
            f.write(cubin)
            f.flush()
            (ins, _), = [v for k, v in disassemble(f.name).items() if "batch_wait" in k]
        ops = ["CLOCK" if "SR_CLOCK" in i.operands else i.op.split(".")[0] for i in ins]
        first = ops.index("CLOCK")
        window = ops[first + 1: ops.index("CLOCK", first + 1)]
        assert window[:n] == ["LDG"] * n and "LDG" not in window[n:], (n, width, cache, window)
        assert window[n] == "FADD", (n, width, cache, window)
        # the loads issue ISSUE_CYCLES apart (their control codes' stall counts), as timing_fields takes them
        stalls = [i.stall for i in ins[first + 1: first + n]]
        assert stalls == [ISSUE_CYCLES] * (n - 1), (n, width, cache, stalls)


def test_batch_latency_fields_reproduce_the_dram_batches_they_were_not_fitted_on() -> None:
    """The H200's batch-wait fields (gpus/h200.toml) from the shipped runs: the spreads and per-load cycles from the
    main run (the per-load cycles fitted on its L2 rows), the DRAM page from the pitch run; the main run's DRAM
    batches of 1-14 lines, not fitted, within 4 % of the model; the page the best of the candidates by a margin."""
    import gzip

    from experiments.batch_latency import check_fields, page_fit, timing_fields
    runs = [json.loads(gzip.open(REPO / "experiments/results/h200" / f"batch_latency_{s}-2026-12-02.json.gz").read())
            for s in ("main", "pitches")]
    fields = timing_fields(runs[0])
    checks = check_fields(runs[0], fields)
    assert len(checks) == 10 and all(abs(model / measured - 1) < 0.04 for _, measured, model in checks), checks
    page, score = page_fit(runs[1], fields)
    assert page == 1024 and sorted(score.values())[1] > score[1024] + 0.004
    shipped = load_gpu("h200").timing
    assert shipped["dram_page_bytes"] == page
    for k, v in fields.items():
        assert shipped[k] == pytest.approx(v, rel=1e-4), k
