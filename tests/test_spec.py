"""Tests for model/spec.py and the shipped gpus/*.toml files (no GPU needed)."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

import pytest

from model.spec import (GPU_DIR, TIMING_FIELDS, TIMING_REQUIRED, GPUSpec, SpecError, list_gpus, load_gpu,
                        match_device, parse_gpu)

SHIPPED = ["a100", "a100_40gb", "a100_pcie", "a100_pcie_40gb", "h100", "h200", "rtx3090", "rtx4060",
           "rtx4060_laptop", "rtx4090", "rtxa6000"]
KiB = 1024


def rel(actual: float, expected: float) -> float:
    return abs(actual - expected) / expected


# --------------------------------------------------------------------------------------------------
# Shipped files
# --------------------------------------------------------------------------------------------------


def test_list_gpus_finds_every_shipped_file() -> None:
    assert list_gpus() == SHIPPED


@pytest.mark.parametrize("key", SHIPPED)
def test_every_shipped_file_loads(key: str) -> None:
    spec = load_gpu(key)
    assert spec.key == key
    assert Path(spec.path) == (GPU_DIR / f"{key}.toml").resolve()
    assert spec.arch == f"sm_{spec.cc_major}{spec.cc_minor}"
    assert spec.device_names and all(spec.device_names)
    # every number in [chip] and [sm] has a non-empty source
    with (GPU_DIR / f"{key}.toml").open("rb") as fh:
        raw = tomllib.load(fh)
    for section in ("chip", "sm", "measured"):
        for field in raw.get(section, {}):
            assert spec.sources[f"{section}.{field}"].strip()
    # per-CC invariants shared by all boards (reference §A1 "All:" line)
    assert spec.registers_per_sm == 65536
    assert spec.max_registers_per_thread == 255
    assert spec.register_alloc_unit == 256
    assert spec.shared_alloc_unit == 128
    assert spec.shared_reserved_per_block == 1024
    assert spec.shared_bytes_per_block == 48 * KiB == 49152
    assert spec.sub_partitions == 4
    # opt-in limit is the max carveout minus the 1 KiB reserved for the system
    assert spec.shared_bytes_per_block_optin == spec.shared_bytes_per_sm - 1 * KiB


def test_rtx4060() -> None:
    g = load_gpu("rtx4060")
    assert g.compute_capability == "8.9"
    assert g.sm_count == 24
    # 1536 threads/SM = 4 schedulers x 12 warps x 32 threads
    assert g.max_threads_per_sm == 1536 == g.sub_partitions * g.warps_per_scheduler * g.warp_size
    assert g.warps_per_scheduler == 12
    assert g.max_warps_per_sm == 48
    assert g.max_blocks_per_sm == 24
    # 100 KiB = 102400 B per SM; 99 KiB = 101376 B per block with opt-in
    assert g.shared_bytes_per_sm == 102400
    assert g.shared_bytes_per_block_optin == 101376
    assert g.shared_carveout_steps_bytes == tuple(k * KiB for k in (0, 8, 16, 32, 64, 100))
    # peak FP32 = 2 x 24 SMs x 128 lanes x 2.46e9 Hz = 15.114e12 FLOP/s
    assert rel(g.peak_fp32_flop_per_s, 15.11e12) < 1e-3
    # the reference argues for 272 GB/s (17 Gbps x 128 bit / 8) and 24 MB L2, not the 4060 Ti's 288 / 32
    assert g.dram_bandwidth_bytes_per_s == 272e9
    assert g.l2_bytes == 24 * 2**20 == 25165824
    assert "4060 Ti" in g.sources["chip.dram_bandwidth_bytes_per_s"]
    assert "4060 Ti" in g.sources["chip.l2_bytes"]
    assert g.copy_bandwidth_bytes_per_s is None and not g.cublas_sgemm_flop_per_s


_BATCH_FIELDS = ("l2_latency_spread_cycles", "dram_latency_spread_cycles", "dram_page_bytes", "batch_wait_per_load_cycles")


def test_h200() -> None:
    g = load_gpu("h200")
    assert g.compute_capability == "9.0"
    assert g.sm_count == 132
    assert g.max_threads_per_sm == 2048  # 4 schedulers x 16 warps x 32 threads
    assert g.warps_per_scheduler == 16
    assert g.max_blocks_per_sm == 32
    assert g.shared_bytes_per_sm == 233472  # 228 KiB
    assert g.shared_bytes_per_block_optin == 232448  # 227 KiB
    assert g.l1_shared_bytes == 256 * KiB
    assert g.l2_bytes == 62914560  # 60 MiB, device attribute L2CacheSize
    assert g.dram_bandwidth_bytes_per_s == 4.8e12
    # peak FP32 = 2 x 132 x 128 x 1.98e9 = 66.908e12 FLOP/s
    assert rel(g.peak_fp32_flop_per_s, 66.9e12) < 1e-3
    # measured: copy 4.24 TB/s = 88 % of 4.8 TB/s; cuBLAS 50.8 TFLOP/s at 8192^3 = 76 % of peak
    assert g.copy_bandwidth_bytes_per_s == 4.24e12
    assert dict(g.cublas_sgemm_flop_per_s) == {1024: 29.4e12, 2048: 47.7e12, 4096: 50.5e12, 8192: 50.8e12}
    assert list(g.cublas_sgemm_flop_per_s) == [1024, 2048, 4096, 8192]
    assert "2026-11" in g.sources["measured.copy_bandwidth_bytes_per_s"]
    assert g.cublas_sgemm_flop_per_s[8192] < g.peak_fp32_flop_per_s
    # [timing] from experiments/microbench.py: FFMA within 5 % of nominal, shared within 5 % of
    # 132 SMs x 128 B x 1.98 GHz = 33.45 TB/s; every entry sourced to the microbenchmark
    assert 0.9 * 66.9e12 < g.timing["fp32_flop_per_s"] <= 66.9e12
    assert 0.9 * 33.45e12 < g.timing["shared_bandwidth_bytes_per_s"] <= 33.45e12
    assert all(("batch_latency" if k in _BATCH_FIELDS else "microbench") in g.sources[f"timing.{k}"]
               for k in g.timing if k != "sustained_clock_hz")
    # the clock under load: nvidia-smi read 1980 MHz during every sweep row
    assert g.timing["sustained_clock_hz"] == pytest.approx(1.98e9, rel=1e-3)
    assert "clock64" in g.sources["timing.sustained_clock_hz"]


def test_a100() -> None:
    g = load_gpu("a100")
    assert g.fp32_lanes_per_sm == 64
    assert g.sm_count == 108
    # peak FP32 = 2 x 108 x 64 x 1.41e9 = 19.49e12 FLOP/s (datasheet 19.5)
    assert rel(g.peak_fp32_flop_per_s, 19.5e12) < 5e-3
    assert g.shared_bytes_per_sm == 164 * KiB == 167936
    assert g.max_blocks_per_sm == 32


@pytest.mark.parametrize(
    ("key", "tflops"),
    [
        ("rtx4090", 82.6),  # 2 x 128 x 128 x 2.52e9  = 82.58e12
        ("rtxa6000", 38.71),  # 2 x 84 x 128 x 1.80e9  = 38.71e12
        ("rtx3090", 35.58),  # 2 x 82 x 128 x 1.695e9 = 35.58e12
        ("h100", 66.9),  # 2 x 132 x 128 x 1.98e9 = 66.91e12
    ],
)
def test_peak_fp32_matches_quoted(key: str, tflops: float) -> None:
    assert rel(load_gpu(key).peak_fp32_flop_per_s, tflops * 1e12) < 1e-3


def test_blocks_per_sm_by_cc() -> None:
    # S1 Table 27 / S5: 8.0 -> 32, 8.6 -> 16, 8.9 -> 24, 9.0 -> 32
    assert {k: load_gpu(k).max_blocks_per_sm for k in SHIPPED} == {
        "a100": 32, "a100_40gb": 32, "a100_pcie": 32, "a100_pcie_40gb": 32, "h100": 32, "h200": 32,
        "rtx3090": 16, "rtx4060": 24, "rtx4060_laptop": 24, "rtx4090": 24, "rtxa6000": 16,
    }


def test_spec_is_frozen_and_sources_separate() -> None:
    g = load_gpu("h200")
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.sm_count = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        g.sources["chip.sm_count"] = "x"  # type: ignore[index]
    assert g.source_of("sm_count") == g.sources["chip.sm_count"]
    assert g.source_of("max_threads_per_sm") == g.sources["sm.max_threads"]
    assert isinstance(hash(g), int)


# --------------------------------------------------------------------------------------------------
# Loading by key / path
# --------------------------------------------------------------------------------------------------


def test_load_by_key_variants_and_path() -> None:
    g = load_gpu("h200")
    assert load_gpu("H200") is g
    assert load_gpu(GPU_DIR / "h200.toml") is g  # cached on the resolved path
    assert load_gpu(str(GPU_DIR / "h200.toml")) is g
    assert load_gpu("RTX-4060").key == "rtx4060"
    assert load_gpu("RTX A6000").key == "rtxa6000"


def test_unknown_key_lists_known_keys() -> None:
    with pytest.raises(SpecError, match="v100") as exc:
        load_gpu("v100")
    for key in SHIPPED:
        assert key in str(exc.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="nope.toml"):
        load_gpu(tmp_path / "nope.toml")


# --------------------------------------------------------------------------------------------------
# match_device
# --------------------------------------------------------------------------------------------------


def test_match_device() -> None:
    assert match_device("NVIDIA H200", 9, 0, 132).key == "h200"  # type: ignore[union-attr]
    assert match_device("nvidia h200", 9, 0, 132).key == "h200"  # type: ignore[union-attr]
    assert match_device("NVIDIA H100 80GB HBM3", 9, 0, 132).key == "h100"  # type: ignore[union-attr]
    assert match_device("NVIDIA GeForce RTX 4060", 8, 9, 24).key == "rtx4060"  # type: ignore[union-attr]
    # the RTX 4060 Ti (AD106, 34 SMs) contains "RTX 4060" but its SM count differs
    assert match_device("NVIDIA GeForce RTX 4060 Ti", 8, 9, 34) is None
    # name matches, compute capability or SM count does not
    assert match_device("NVIDIA H200", 9, 0, 114) is None
    assert match_device("NVIDIA H200", 8, 0, 132) is None
    assert match_device("Tesla V100-SXM2-16GB", 7, 0, 80) is None
    assert match_device("", 9, 0, 132) is None


# --------------------------------------------------------------------------------------------------
# Malformed files: each SpecError names the file and the field
# --------------------------------------------------------------------------------------------------

BASE = (GPU_DIR / "rtx4060.toml").read_text(encoding="utf-8")


def write_variant(tmp_path: Path, pattern: str, replacement: str, name: str = "bad.toml") -> Path:
    """Copy rtx4060.toml with one regex substitution (which must apply exactly once)."""
    text, n = re.subn(pattern, replacement, BASE, count=1, flags=re.MULTILINE)
    assert n == 1, f"pattern {pattern!r} did not match"
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def expect_error(path: Path, field: str, *fragments: str) -> str:
    with pytest.raises(SpecError) as exc:
        load_gpu(path)
    msg = str(exc.value)
    assert path.name in msg
    assert f"'{field}'" in msg, msg
    for fragment in fragments:
        assert fragment in msg, msg
    return msg


def test_unmodified_copy_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "copy.toml"
    path.write_text(BASE, encoding="utf-8")
    assert load_gpu(path).sm_count == 24


@pytest.mark.parametrize(
    ("pattern", "replacement", "field", "fragment"),
    [
        # missing field
        (r"^max_threads = .*\n", "", "sm.max_threads", "missing"),
        (r"^l2_bytes = .*\n", "", "chip.l2_bytes", "missing"),
        # negative / zero / wrong type
        (r"^max_threads = \{ value = 1536", "max_threads = { value = -3", "sm.max_threads",
         "must be a positive integer, got -3"),
        (r"^sm_count = \{ value = 24", "sm_count = { value = 0", "chip.sm_count", "positive integer"),
        (r"^sm_count = \{ value = 24", "sm_count = { value = 24.0", "chip.sm_count", "positive integer"),
        (r"^sm_count = \{ value = 24", "sm_count = { value = true", "chip.sm_count", "positive integer"),
        (r"^boost_clock_hz = \{ value = 2.46e9", "boost_clock_hz = { value = -2.46e9", "chip.boost_clock_hz",
         "positive"),
        (r"^boost_clock_hz = \{ value = 2.46e9", "boost_clock_hz = { value = nan", "chip.boost_clock_hz",
         "positive finite"),
        (r"^shared_carveout_steps_bytes = \{ value = \[[^]]*\]", "shared_carveout_steps_bytes = { value = []",
         "sm.shared_carveout_steps_bytes", "non-empty"),
        # missing / empty source, bare number
        (r"^(sm_count = \{ value = 24), source = \"[^\"]*\"", r"\1", "chip.sm_count", "has no source"),
        (r"^(sm_count = \{ value = 24), source = \"[^\"]*\"", r'\1, source = " "', "chip.sm_count",
         "has no source"),
        (r"^max_blocks = .*$", "max_blocks = 24", "sm.max_blocks", "has no source"),
        (r"^(max_blocks = \{ value = 24), ", r'\1, sorce = "typo", ', "sm.max_blocks", "unknown key"),
        # schema version
        (r"^schema_version = 1$", "schema_version = 2", "schema_version", "must be 1, got 2"),
        (r"^schema_version = 1\n", "", "schema_version", "missing"),
        # unknown fields (typos)
        (r"^\[sm\].*$", '[sm]\nmax_thread = { value = 1536, source = "typo" }', "sm.max_thread", "unknown"),
        (r"^\[chip\]$", '[chip]\nsm_cont = { value = 24, source = "typo" }', "chip.sm_cont", "unknown"),
        (r"^arch = ", 'archh = "sm_89"\narch = ', "archh", "unknown"),
        # inconsistent values
        (r"^max_warps = \{ value = 48", "max_warps = { value = 40", "sm.max_warps",
         "40) x chip.warp_size (32) != sm.max_threads (1536)"),
        (r"^sub_partitions = \{ value = 4", "sub_partitions = { value = 5", "sm.sub_partitions", "divide"),
        (r"^shared_bytes_per_block_optin = \{ value = 101376", "shared_bytes_per_block_optin = { value = 233472",
         "sm.shared_bytes_per_block_optin", "> sm.shared_bytes (102400)"),
        (r"65536, 102400\]", "65536, 98304]", "sm.shared_carveout_steps_bytes", "largest step 98304"),
        (r"\[0, 8192, 16384", "[0, 16384, 8192", "sm.shared_carveout_steps_bytes", "ascending"),
        (r'^arch = "sm_89"', 'arch = "sm_86"', "arch", "sm_89"),
    ],
)
def test_malformed_file(
    tmp_path: Path, pattern: str, replacement: str, field: str, fragment: str
) -> None:
    path = write_variant(tmp_path, pattern, replacement)
    expect_error(path, field, fragment)


def test_bad_measured_entry(tmp_path: Path) -> None:
    path = write_variant(
        tmp_path,
        r"\Z",
        '\n[measured]\ncublas_sgemm_flop_per_s = { value = { "big" = 1e12 }, source = "x" }\n',
    )
    expect_error(path, "measured.cublas_sgemm_flop_per_s", "positive integer sizes")


def test_invalid_toml_names_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("schema_version = = 1\n", encoding="utf-8")
    with pytest.raises(SpecError, match="broken.toml: invalid TOML"):
        load_gpu(path)


def test_key_format() -> None:
    # keys are file stems: lowercase letters, digits and '_' only
    data = tomllib.loads(BASE)
    data["key"] = "RTX 4060"
    with pytest.raises(SpecError, match=r"x\.toml: field 'key'"):
        parse_gpu(data, "x.toml")


# --------------------------------------------------------------------------------------------------
# parse_gpu on dicts
# --------------------------------------------------------------------------------------------------


def test_parse_gpu_dict_with_timing_and_no_measured() -> None:
    data = tomllib.loads(BASE)
    data["timing"] = {"dram_latency_cycles": {"value": 500, "source": "made up for the test"}}
    spec = parse_gpu(data, "mem.toml")
    assert isinstance(spec, GPUSpec)
    assert spec.path == "mem.toml"
    assert spec.timing == {"dram_latency_cycles": 500.0}
    assert spec.sources["timing.dram_latency_cycles"] == "made up for the test"
    assert spec.copy_bandwidth_bytes_per_s is None
    assert dict(spec.cublas_sgemm_flop_per_s) == {}


def test_parse_gpu_missing_section() -> None:
    data = tomllib.loads(BASE)
    del data["sm"]
    with pytest.raises(SpecError, match=r"mem\.toml: field 'sm' missing"):
        parse_gpu(data, "mem.toml")


# --------------------------------------------------------------------------------------------------
# [timing]
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", SHIPPED)
def test_every_shipped_spec_has_a_complete_sourced_timing_table(key: str) -> None:
    g = load_gpu(key)
    assert g.missing_timing == ()
    assert set(TIMING_REQUIRED) <= set(g.timing)
    for k in g.timing:
        assert len(g.sources[f"timing.{k}"].strip()) > 20, (key, k)   # a real source, not a tag
    # the clock under load is within the validator's window and peak FP32 at it is below the rated peak x 1.1
    assert 0.25 * g.boost_clock_hz <= g.timing["sustained_clock_hz"] <= 1.1 * g.boost_clock_hz
    assert g.timing["l1_latency_cycles"] < g.timing["l2_latency_cycles"] < g.timing["dram_latency_cycles"]
    assert g.timing["dram_copy_bandwidth_bytes_per_s"] <= g.dram_bandwidth_bytes_per_s


def test_no_other_gpu_borrows_the_h200_measurements() -> None:
    h200 = load_gpu("h200").timing
    for key in SHIPPED:
        if key == "h200":
            continue
        g = load_gpu(key)
        for k, v in g.timing.items():
            assert "microbench.py on" not in g.sources[f"timing.{k}"], (key, k)
            if k == "sustained_clock_hz" and v == g.boost_clock_hz:
                continue    # the H100's rated 1980 MHz is also the H200's: the board's own vendor figure
            assert k not in h200 or v != h200[k], f"{key} timing.{k} equals the H200's measured {v}"


def test_timing_fields_schema() -> None:
    keys = [f.key for f in TIMING_FIELDS]
    assert len(keys) == len(set(keys))
    assert set(TIMING_REQUIRED) == {
        "sustained_clock_hz", "l1_latency_cycles", "l2_latency_cycles", "dram_latency_cycles",
        "shared_latency_cycles", "shared_bandwidth_bytes_per_s", "l2_bandwidth_bytes_per_s",
        "dram_read_bandwidth_bytes_per_s", "dram_copy_bandwidth_bytes_per_s", "launch_overhead_s"}
    assert {"fp32_flop_per_s", "ffma_latency_cycles"} <= set(keys) - set(TIMING_REQUIRED)
    for f in TIMING_FIELDS:   # the unit is in the name
        suffix = {"cycles": "_cycles", "Hz": "_hz", "B/s": "_bytes_per_s", "s": "_s", "FLOP/s": "_flop_per_s",
                  "B": "_bytes"}[f.unit]
        assert f.key.endswith(suffix), f.key


def test_the_a6000_and_3090_share_ga102_cycle_figures() -> None:
    # sibling chips: latencies in cycles are the same; clocks and bandwidths are each board's own
    a, b = load_gpu("rtxa6000"), load_gpu("rtx3090")
    for k in ("l1_latency_cycles", "shared_latency_cycles", "l2_latency_cycles", "dram_latency_cycles"):
        assert a.timing[k] == b.timing[k]
    assert a.timing["sustained_clock_hz"] == 1.8e9 and b.timing["sustained_clock_hz"] == 1.695e9
    # shared bandwidth = SMs x 128 B x clock
    assert a.timing["shared_bandwidth_bytes_per_s"] == pytest.approx(84 * 128 * 1.8e9, rel=1e-3)


def test_new_specs() -> None:
    lap, desk = load_gpu("rtx4060_laptop"), load_gpu("rtx4060")
    assert lap.sm_count == desk.sm_count == 24 and lap.compute_capability == "8.9"
    assert lap.boost_clock_hz == 2.37e9 and "115 W" in lap.sources["chip.boost_clock_hz"]
    assert lap.l2_bytes == 32 * 2**20 and lap.dram_bandwidth_bytes_per_s == 256e9
    # the laptop's CUDA name contains the desktop's: the exact name wins
    assert match_device("NVIDIA GeForce RTX 4060 Laptop GPU", 8, 9, 24).key == "rtx4060_laptop"  # type: ignore[union-attr]
    assert match_device("NVIDIA GeForce RTX 4060", 8, 9, 24).key == "rtx4060"  # type: ignore[union-attr]
    a40, pcie, pcie40 = load_gpu("a100_40gb"), load_gpu("a100_pcie"), load_gpu("a100_pcie_40gb")
    assert a40.dram_bandwidth_bytes_per_s == pcie40.dram_bandwidth_bytes_per_s == 1.555e12
    assert pcie.dram_bandwidth_bytes_per_s == 1.935e12 and "80GB" in pcie.name and "PCIe" in pcie.name
    for g in (a40, pcie, pcie40):
        assert g.sm_count == 108 and g.fp32_lanes_per_sm == 64 and g.l2_bytes == 41943040
        assert rel(g.peak_fp32_flop_per_s, 19.5e12) < 5e-3
    assert match_device("NVIDIA A100-SXM4-40GB", 8, 0, 108).key == "a100_40gb"  # type: ignore[union-attr]
    assert match_device("NVIDIA A100 80GB PCIe", 8, 0, 108).key == "a100_pcie"  # type: ignore[union-attr]
    assert match_device("NVIDIA A100-PCIE-40GB", 8, 0, 108).key == "a100_pcie_40gb"  # type: ignore[union-attr]
    assert match_device("NVIDIA A100-SXM4-80GB", 8, 0, 108).key == "a100"  # type: ignore[union-attr]


TIMING_BASE = BASE.split("\n[timing]")[0]   # rtx4060 without its [timing] table


def timing_variant(tmp_path: Path, lines: str, name: str = "t.toml") -> Path:
    path = tmp_path / name
    path.write_text(TIMING_BASE.rstrip("\n") + "\n\n[timing]\n" + lines + "\n", encoding="utf-8")
    return path


def test_a_spec_without_timing_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "half.toml"
    path.write_text(TIMING_BASE, encoding="utf-8")
    g = load_gpu(path)
    assert dict(g.timing) == {} and g.missing_timing == TIMING_REQUIRED
    # a half-written table loads too; the rest is reported missing
    g = load_gpu(timing_variant(tmp_path, 'l2_latency_cycles = { value = 270, source = "x" }'))
    assert g.timing == {"l2_latency_cycles": 270.0}
    assert "l2_latency_cycles" not in g.missing_timing and len(g.missing_timing) == len(TIMING_REQUIRED) - 1


@pytest.mark.parametrize(
    ("line", "field", "fragment"),
    [
        ('l2_latency_cycle = { value = 270, source = "typo" }', "timing.l2_latency_cycle", "unknown"),
        ('l2_latency_cycles = { value = "270", source = "x" }', "timing.l2_latency_cycles", "positive finite"),
        ('l2_latency_cycles = { value = -270, source = "x" }', "timing.l2_latency_cycles", "positive finite"),
        ('l2_latency_cycles = { value = true, source = "x" }', "timing.l2_latency_cycles", "positive finite"),
        ('l2_latency_cycles = { value = 270 }', "timing.l2_latency_cycles", "has no source"),
        ("l2_latency_cycles = 270", "timing.l2_latency_cycles", "has no source"),
        # plausibility: latencies 1..2000 cycles (a value in ns or s is a unit error)
        ('dram_latency_cycles = { value = 5000, source = "x" }', "timing.dram_latency_cycles", "implausible"),
        ('l1_latency_cycles = { value = 3.3e-8, source = "seconds, not cycles" }', "timing.l1_latency_cycles",
         "implausible"),
        # a bandwidth in GB/s instead of B/s
        ('dram_read_bandwidth_bytes_per_s = { value = 245, source = "x" }', "timing.dram_read_bandwidth_bytes_per_s",
         "implausible"),
        ('launch_overhead_s = { value = 3.0, source = "microseconds?" }', "timing.launch_overhead_s", "implausible"),
        # clock: at most 1.1 x boost (2.46 GHz)
        ('sustained_clock_hz = { value = 2.8e9, source = "x" }', "timing.sustained_clock_hz", "1.1 x"),
        ('sustained_clock_hz = { value = 2460, source = "MHz, not Hz" }', "timing.sustained_clock_hz", "implausible"),
        # above what the hardware can do
        ('dram_copy_bandwidth_bytes_per_s = { value = 400e9, source = "x" }',
         "timing.dram_copy_bandwidth_bytes_per_s", "hardware ceiling"),
        ('shared_bandwidth_bytes_per_s = { value = 2e13, source = "x" }', "timing.shared_bandwidth_bytes_per_s",
         "hardware ceiling"),
        ('fp32_flop_per_s = { value = 2e13, source = "x" }', "timing.fp32_flop_per_s", "hardware ceiling"),
        # a chase that hit the level above
        ('l2_latency_cycles = { value = 270, source = "x" }\ndram_latency_cycles = { value = 260, source = "x" }',
         "timing.dram_latency_cycles", "not above timing.l2_latency_cycles"),
        ('l1_latency_cycles = { value = 300, source = "x" }\nl2_latency_cycles = { value = 270, source = "x" }',
         "timing.l2_latency_cycles", "not above timing.l1_latency_cycles"),
    ],
)
def test_bad_timing_field_refused_naming_it(tmp_path: Path, line: str, field: str, fragment: str) -> None:
    expect_error(timing_variant(tmp_path, line, name="badtiming.toml"), field, fragment)


def test_timing_table_of_wrong_type() -> None:
    data = tomllib.loads(TIMING_BASE)
    data["timing"] = "fast"
    with pytest.raises(SpecError, match=r"t\.toml: field 'timing' must be a table"):
        parse_gpu(data, "t.toml")
