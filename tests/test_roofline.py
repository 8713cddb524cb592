"""Tests for model/roofline.py: invariants of the roofline-with-occupancy prediction, hand-worked cases,
the vectorised path against the single-config path, and the GPU spec figures behind them. No GPU needed."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import numpy as np
import pytest

from model.errors import ConfigError
from model.registry import VECTOR_REDUCTION, KernelConfig, classic_configs, grid_configs, n_blocks
from model.roofline import ROOFS, Prediction, plain_roofline, predict, predict_many
from model.spec import list_gpus, load_gpu

GPUS = list_gpus()
# every classic config that runs on every shipped GPU (rung 12's vector reductions need Hopper: tested below)
MODELLED = [c for c in classic_configs() if c.rung != 0 and c.rung not in VECTOR_REDUCTION]
SIZES = [(4096, 4096, 4096), (1000, 3001, 257), (1, 1, 1), (8192, 128, 4096), (129, 4095, 33)]
# a spread of register-tiling configs beyond the classic ones
EXTRA = [KernelConfig.parse(s) for s in (
    "04:BM=64,BN=64,BK=32,TM=4,TN=4", "04:BM=256,BN=128,BK=16,TM=16,TN=8", "04:BM=32,BN=64,BK=8,TM=2,TN=2",
    "05:BM=64,BN=128,BK=16,TM=8,TN=4", "06:BM=128,BN=256,BK=8,TM=8,TN=16", "03:BM=128,BN=64,BK=16,TM=8",
    "02:BM=16,BN=32,BK=8", "01:BX=8,BY=32,COALESCED=0")]
CONFIGS = MODELLED + EXTRA


def test_test_configs_are_valid() -> None:
    # every config used below is valid on every shipped GPU, so the invariant loops skip nothing
    for key in GPUS:
        gpu = load_gpu(key)
        for c in CONFIGS:
            predict(gpu, c, 64, 64, 64)


@pytest.mark.parametrize("key", ["h100", "h200"])
def test_split_k_blocks_and_work_on_hopper(key: str) -> None:
    # rung 12's classic is split-K 16: the plain roofline launches S blocks per output tile, each K/S deep
    gpu = load_gpu(key)
    cfg = classic_configs([12])[0]
    p = predict(gpu, cfg, 512, 512, 16384)
    assert p.blocks == n_blocks(cfg, 512, 512) == 16 * 16
    fp32 = next(r for r in p.roofs if r.name == "fp32")
    assert fp32.work == pytest.approx(2.0 * 512 * 512 * 16384)


def rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


@pytest.fixture(scope="module")
def h200():
    return load_gpu("h200")


@pytest.fixture(scope="module")
def rtx4060():
    return load_gpu("rtx4060")


# --------------------------------------------------------------------------------------------------
# GPU figures the roofs use
# --------------------------------------------------------------------------------------------------


def test_gpu_peaks(rtx4060, h200) -> None:
    # RTX 4060: 2 FLOP x 24 SMs x 128 lanes x 2.46e9 Hz = 15.114e12 FLOP/s (reference: 15.11 TFLOPS)
    assert rtx4060.peak_fp32_flop_per_s == pytest.approx(2 * 24 * 128 * 2.46e9, rel=1e-12)
    assert rel(rtx4060.peak_fp32_flop_per_s, 15.11e12) < 1e-3
    assert rtx4060.dram_bandwidth_bytes_per_s == 272e9 and rtx4060.copy_bandwidth_bytes_per_s is None
    # H200: 2 x 132 x 128 x 1.98e9 = 66.9e12; DRAM 4.8e12 datasheet, 4.24e12 measured copy
    assert h200.peak_fp32_flop_per_s == pytest.approx(66.908e12, rel=1e-4)
    assert h200.dram_bandwidth_bytes_per_s == 4.8e12 and h200.copy_bandwidth_bytes_per_s == 4.24e12


# --------------------------------------------------------------------------------------------------
# Hand-worked predictions
# --------------------------------------------------------------------------------------------------


def test_h200_reg2d_4096(h200) -> None:
    cfg = KernelConfig.parse("04:BM=128,BN=128,BK=8,TM=8,TN=8")
    p = predict(h200, cfg, 4096, 4096, 4096)
    assert isinstance(p, Prediction)
    # blocks: ceil(4096/128) x ceil(4096/128) = 32 x 32 = 1024
    assert p.blocks == 1024
    # occupancy with the register floor 8*8 + 8 + 8 + 8 = 88 regs: 88*32 = 2816 per warp (11 x 256);
    # 16384 // 2816 = 5 warps per sub-partition -> 20 per SM -> 20 // 8 warps per block = 2 blocks/SM
    # (threads would allow 64 // 8 = 8; shared memory (8192 + 1024 = 9216 B) 233472 // 9216 = 25)
    assert p.occupancy.blocks_per_sm == 2 and p.occupancy.limiter == "registers"
    # waves = ceil(1024 / (132 SMs x 2)) = ceil(3.88) = 4
    assert p.waves == 4 == math.ceil(1024 / (132 * 2))
    roofs = {r.name: r for r in p.roofs}
    # fp32: ceil(1024/132) = 8 blocks per SM x 2*128*128*4096 = 134217728 FLOP each
    #       / (128 lanes x 2 x 1.98e9 = 506.88e9 FLOP/s per SM) = 1073741824 / 506.88e9 = 2.1183 ms
    assert roofs["fp32"].time_s == pytest.approx(8 * 134217728 / 506.88e9, rel=1e-12)
    assert roofs["fp32"].time_s == pytest.approx(2.1183e-3, rel=1e-4)
    # dram: 4 B x (MK x 32 + KN x 32 + MN) = 4 x 65 x 4096^2 = 4362076160 B at the measured 4.24e12 B/s
    #       = 1.0288 ms
    assert roofs["dram"].work == 4 * 65 * 4096**2 == 4362076160
    assert roofs["dram"].rate == 4.24e12
    assert roofs["dram"].time_s == pytest.approx(4362076160 / 4.24e12, rel=1e-12)
    # shared: reads 4 x 4096^3 x (1/8 + 1/8) = 68719476736 B, tile stores 4 x 1024 blocks x 512 K steps x
    #         (128*8 + 8*128) = 4294967296 B; total 73014444032 B at 132 x 32 banks x 4 B x 1.98e9
    #         = 33.454e12 B/s -> 2.1825 ms
    assert roofs["shared"].work == 68719476736 + 4294967296
    assert roofs["shared"].rate == pytest.approx(132 * 32 * 4 * 1.98e9, rel=1e-12)
    assert roofs["shared"].time_s == pytest.approx(73014444032 / (132 * 32 * 4 * 1.98e9), rel=1e-12)
    # the shared roof (2.1825 ms) is just above the fp32 roof (2.1183 ms)
    assert p.bound == "shared"
    assert p.time_s == roofs["shared"].time_s
    # 2 x 4096^3 = 137438953472 FLOP / 2.1825 ms = 62.97 TFLOP/s
    assert p.flops == 2 * 4096**3
    assert p.flop_per_s == pytest.approx(62.97e12, rel=1e-3)
    # intensities: DRAM 137438953472 / 4362076160 = 31.51 FLOP/B; shared 1.882 FLOP/B
    assert p.intensity_flop_per_byte["dram"] == pytest.approx(2 * 4096 / (4 * 65), rel=1e-12)
    assert p.intensity_flop_per_byte["shared"] == pytest.approx(137438953472 / 73014444032, rel=1e-12)


def test_rtx4060_reg2d_4096_is_dram_bound(rtx4060) -> None:
    cfg = KernelConfig.parse("04:BM=128,BN=128,BK=8,TM=8,TN=8")
    p = predict(rtx4060, cfg, 4096, 4096, 4096)
    # 1024 blocks; 2 blocks/SM (registers, as on the H200); waves = ceil(1024 / (24 x 2)) = ceil(21.3) = 22
    assert (p.blocks, p.occupancy.blocks_per_sm, p.waves) == (1024, 2, 22)
    # no measured copy bandwidth: the datasheet 272e9 is used; 4362076160 B / 272e9 = 16.037 ms
    roofs = {r.name: r for r in p.roofs}
    assert roofs["dram"].rate == 272e9
    assert roofs["dram"].time_s == pytest.approx(4362076160 / 272e9, rel=1e-12)
    # fp32: ceil(1024/24) = 43 x 134217728 / (2 x 128 x 2.46e9) = 9.164 ms; shared 73014444032 / 7.557e12 = 9.66 ms
    assert roofs["fp32"].time_s == pytest.approx(43 * 134217728 / (2 * 128 * 2.46e9), rel=1e-12)
    assert p.bound == "dram"
    # 137438953472 / 16.037 ms = 8.570 TFLOP/s
    assert p.flop_per_s == pytest.approx(8.570e12, rel=1e-3)


def test_naive_dram_counts_every_read(h200) -> None:
    # naive: every output reads 2K elements and writes 1: 4 B x (2 x 4096^3 + 4096^2) = 549822922752 B
    cfg = KernelConfig.parse("naive")
    p = predict(h200, cfg, 4096, 4096, 4096)
    roofs = {r.name: r for r in p.roofs}
    assert roofs["dram"].work == 4 * (2 * 4096**3 + 4096**2) == 549822922752
    assert roofs["shared"].work == 0 and roofs["shared"].time_s == 0
    assert p.bound == "dram"
    assert any("naive" in n for n in p.notes)


# --------------------------------------------------------------------------------------------------
# Invariants over many configs, sizes and GPUs
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", GPUS)
def test_invariants(key: str) -> None:
    gpu = load_gpu(key)
    checked = 0
    for cfg, (M, N, K) in itertools.product(CONFIGS, SIZES):
        try:
            p = predict(gpu, cfg, M, N, K)
        except ConfigError:
            continue  # a config can be invalid on a small GPU; covered by the error tests
        checked += 1
        times = {r.name: r.time_s for r in p.roofs}
        assert tuple(times) == ROOFS
        # time >= every roof, and the bound is the largest roof
        assert all(p.time_s >= t for t in times.values())
        assert p.bound == max(times, key=times.get)
        assert p.binding.time_s == max(times.values()) == p.time_s
        # never faster than the FP32 peak
        assert p.flop_per_s <= gpu.peak_fp32_flop_per_s * (1 + 1e-12)
        assert p.flops == 2.0 * M * N * K
        # blocks match the registry's launch grid; waves = ceil(blocks / (SMs x blocks per SM))
        assert p.blocks == n_blocks(cfg, M, N)
        assert p.waves == math.ceil(p.blocks / (gpu.sm_count * p.occupancy.blocks_per_sm))
        # roofs: time = work / rate, all positive except shared for the naive kernel
        for r in p.roofs:
            if r.name == "shared" and cfg.rung == 1:
                assert r.work == 0
                continue
            assert r.work > 0 and r.rate > 0
            if r.name != "fp32":  # the fp32 roof is per-SM load-balanced, not total work / total rate
                assert r.time_s == pytest.approx(r.work / r.rate, rel=1e-12)
            else:
                assert r.time_s >= r.work / r.rate * (1 - 1e-12)
    assert checked == len(CONFIGS) * len(SIZES)


def _scaled(gpu, **factors):
    changes = {}
    for name, f in factors.items():
        v = getattr(gpu, name)
        changes[name] = None if v is None else v * f
    return dataclasses.replace(gpu, **changes)


@pytest.mark.parametrize("key", ["rtx4060", "h200", "a100"])
def test_more_bandwidth_never_slower(key: str) -> None:
    gpu = load_gpu(key)
    fast = _scaled(gpu, dram_bandwidth_bytes_per_s=2.0, copy_bandwidth_bytes_per_s=2.0)
    slow = _scaled(gpu, dram_bandwidth_bytes_per_s=0.5, copy_bandwidth_bytes_per_s=0.5)
    strictly = 0
    for cfg, size in itertools.product(CONFIGS, SIZES):
        try:
            base = predict(gpu, cfg, *size)
        except ConfigError:
            continue
        t_fast, t_slow = predict(fast, cfg, *size).time_s, predict(slow, cfg, *size).time_s
        assert t_fast <= base.time_s <= t_slow
        strictly += base.bound == "dram" and t_fast < base.time_s
    assert strictly > 0  # the comparison is not vacuous: some DRAM-bound cases do speed up


@pytest.mark.parametrize("key", ["rtx4060", "h200", "a100"])
def test_higher_clock_never_slower(key: str) -> None:
    gpu = load_gpu(key)
    fast = _scaled(gpu, boost_clock_hz=1.5)
    strictly = 0
    for cfg, size in itertools.product(CONFIGS, SIZES):
        try:
            base = predict(gpu, cfg, *size)
        except ConfigError:
            continue
        t_fast = predict(fast, cfg, *size).time_s
        assert t_fast <= base.time_s
        strictly += t_fast < base.time_s
    assert strictly > 0


def test_measured_copy_bandwidth_is_used(h200) -> None:
    # with a measured copy bandwidth, the datasheet figure does not matter for predict()
    cfg = KernelConfig.parse("naive")
    more_datasheet = _scaled(h200, dram_bandwidth_bytes_per_s=10.0)
    assert predict(more_datasheet, cfg, 512, 512, 512).time_s == predict(h200, cfg, 512, 512, 512).time_s
    no_copy = dataclasses.replace(h200, copy_bandwidth_bytes_per_s=None)
    # dram time scales by 4.24 / 4.8 when falling back to the datasheet
    t_copy = predict(h200, cfg, 512, 512, 512).binding.time_s
    t_data = predict(no_copy, cfg, 512, 512, 512).binding.time_s
    assert t_data == pytest.approx(t_copy * 4.24 / 4.8, rel=1e-12)


# --------------------------------------------------------------------------------------------------
# Vectorised path
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["rtx4060", "h200"])
def test_predict_many_matches_predict(key: str) -> None:
    gpu = load_gpu(key)
    cfgs = [c for c in CONFIGS if not _invalid(c, gpu)]
    assert len(cfgs) == len(CONFIGS)
    sizes = SIZES + [(2048, 2048, 8), (333, 777, 4097)]
    out = predict_many(gpu, cfgs, sizes)
    assert out["time_s"].shape == (len(cfgs), len(sizes))
    for i, cfg in enumerate(cfgs):
        for j, (M, N, K) in enumerate(sizes):
            p = predict(gpu, cfg, M, N, K)
            assert out["time_s"][i, j] == pytest.approx(p.time_s, rel=1e-12)
            assert out["flop_per_s"][i, j] == pytest.approx(p.flop_per_s, rel=1e-12)
            assert ROOFS[int(out["bound"][i, j])] == p.bound
            assert int(out["blocks"][i, j]) == p.blocks
            assert int(out["waves"][i, j]) == p.waves
            assert int(np.broadcast_to(out["blocks_per_sm"], out["time_s"].shape)[i, j]) == \
                p.occupancy.blocks_per_sm
            roofs = {r.name: r.time_s for r in p.roofs}
            for name in ROOFS:
                assert float(np.broadcast_to(out[f"t_{name}"], out["time_s"].shape)[i, j]) == \
                    pytest.approx(roofs[name], rel=1e-12, abs=0)


def _invalid(cfg, gpu) -> bool:
    try:
        predict(gpu, cfg, 64, 64, 64)
    except ConfigError:
        return True
    return False


def test_predict_many_with_registers(h200) -> None:
    # explicit register counts change occupancy (and so waves) the same way in both paths:
    # 04 128x128 with 128 regs: 4096 per warp -> 4 warps/sub-partition -> 16 / 8 = 2 blocks;
    # with 32 regs: 1024 per warp -> 16 -> 64 / 8 = 8 blocks -> waves ceil(1024 / (132 x 8)) = 1
    cfgs = [KernelConfig.parse("04:BM=128,BN=128,BK=8,TM=8,TN=8")] * 2
    out = predict_many(h200, cfgs, [(4096, 4096, 4096)], registers=[128, 32])
    assert out["blocks_per_sm"][:, 0].tolist() == [2, 8]
    assert out["waves"][:, 0].tolist() == [4, 1]
    for regs, i in ((128, 0), (32, 1)):
        p = predict(h200, cfgs[i], 4096, 4096, 4096, registers=regs)
        assert p.occupancy.blocks_per_sm == out["blocks_per_sm"][i, 0]
        assert p.waves == out["waves"][i, 0]
        assert not p.notes  # registers given: no floor-estimate note


def test_predict_many_large_grid(h200) -> None:
    reg_grid = dict(BM=[64, 128], BN=[64, 128], BK=[8, 16], TM=[4, 8], TN=[4, 8])
    cfgs = list(grid_configs(4, h200, **reg_grid))
    sizes = [(m, m, m) for m in (256, 1024, 4096)]
    out = predict_many(h200, cfgs, sizes)
    assert out["time_s"].shape == (len(cfgs), 3)
    assert np.all(out["flop_per_s"] <= h200.peak_fp32_flop_per_s * (1 + 1e-12))
    assert np.all(np.isfinite(out["time_s"])) and np.all(out["time_s"] > 0)


# --------------------------------------------------------------------------------------------------
# The seed's plain roofline
# --------------------------------------------------------------------------------------------------


def test_plain_roofline_naive_h200(h200) -> None:
    # naive intensity: 2MNK / (4 B x (2MNK + MN)) = 2K / (4 (2K + 1)) = 8192 / 32772 = 0.249969 FLOP/B
    # x 4.8e12 B/s (datasheet) = 1.19985e12 FLOP/s, far below the 66.9e12 peak
    expected = 4.8e12 * 8192 / (4 * 8193)
    assert expected == pytest.approx(1.19985e12, rel=1e-5)
    got = plain_roofline(h200, KernelConfig.parse("naive"), 4096, 4096, 4096)
    assert got == pytest.approx(expected, rel=1e-12)
    # the uncoalesced variant has the same plain roofline (no caches, no coalescing in this model)
    assert plain_roofline(h200, KernelConfig.parse("naive:COALESCED=0"), 4096, 4096, 4096) == pytest.approx(got)


def test_plain_roofline_tiled(h200, rtx4060) -> None:
    cfg = KernelConfig.parse("04:BM=128,BN=128,BK=8,TM=8,TN=8")
    # I = 2MNK / (4 (MNK (1/128 + 1/128) + MN)) = 2K / (4 (K/64 + 1)) = 8192 / (4 x 65) = 31.508 FLOP/B
    # RTX 4060: 31.508 x 272e9 = 8.570e12 < 15.11e12 peak -> memory bound
    assert plain_roofline(rtx4060, cfg, 4096, 4096, 4096) == pytest.approx(272e9 * 8192 / 260, rel=1e-12)
    # H200: 31.508 x 4.8e12 = 151e12 > 66.9e12 peak -> the peak
    assert plain_roofline(h200, cfg, 4096, 4096, 4096) == h200.peak_fp32_flop_per_s


@pytest.mark.parametrize("key", GPUS)
def test_plain_roofline_bounds_prediction(key: str) -> None:
    # the full model only adds limits, so it is never faster than min(peak, bandwidth x intensity) ... as long
    # as it uses the datasheet bandwidth; with a measured copy bandwidth it is slower still
    gpu = load_gpu(key)
    for cfg, size in itertools.product(MODELLED, SIZES[:2]):
        try:
            p = predict(gpu, cfg, *size)
        except ConfigError:
            continue
        assert p.flop_per_s <= plain_roofline(gpu, cfg, *size) * (1 + 1e-9)


# --------------------------------------------------------------------------------------------------
# Errors and JSON
# --------------------------------------------------------------------------------------------------


def test_cublas_is_not_modelled(h200) -> None:
    with pytest.raises(ConfigError) as ei:
        predict(h200, KernelConfig(0), 4096, 4096, 4096)
    assert ei.value.limit == "rung"


@pytest.mark.parametrize(
    "cfg_text, size, registers, limit",
    [
        ("04:BM=100", (64, 64, 64), None, "BM % TM == 0"),
        ("04:TM=4,TN=2", (64, 64, 64), None, "threads_per_block"),
        ("05:TM=2", (64, 64, 64), None, "float4_alignment"),
        # 2 x (128*64 + 64*128) x 4 = 131072 B > 101376 on the RTX 4060
        ("06:BK=64", (64, 64, 64), None, "shared_memory_per_block"),
        ("04", (0, 64, 64), None, "size"),
        ("04", (64, 64, -1), None, "size"),
        ("04", (64, 64, 64), 300, "registers_per_thread"),
        # 256 threads x 255 regs: 8192 per warp x 8 warps = 65536 is fine; 1024 threads (04:TM=4,TN=4) x 128:
        # 4096 x 32 = 131072 > 65536
        ("04:TM=4,TN=4", (64, 64, 64), 128, "registers_per_block"),
    ],
)
def test_invalid_inputs_raise(rtx4060, cfg_text, size, registers, limit) -> None:
    with pytest.raises(ConfigError) as ei:
        predict(rtx4060, KernelConfig.parse(cfg_text), *size, registers=registers)
    assert ei.value.limit == limit


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.key)
def test_json(h200, cfg) -> None:
    p = predict(h200, cfg, 1000, 3001, 257)
    d = json.loads(json.dumps(p.to_json()))
    assert d["config"] == cfg.to_json() and d["label"] == cfg.label
    assert (d["M"], d["N"], d["K"]) == (1000, 3001, 257)
    assert d["bound"] == p.bound and d["time_s"] == p.time_s
    assert [r["name"] for r in d["roofs"]] == list(ROOFS)
    assert d["occupancy"]["blocks_per_sm"] == p.occupancy.blocks_per_sm
    assert d["blocks"] == p.blocks and d["waves"] == p.waves


def test_json_is_strict_for_naive(h200) -> None:
    p = predict(h200, KernelConfig.parse("naive"), 1024, 1024, 1024)
    json.dumps(p.to_json(), allow_nan=False)


def test_json_is_strict_for_tiled(h200) -> None:
    p = predict(h200, KernelConfig.parse("04"), 1024, 1024, 1024)
    json.dumps(p.to_json(), allow_nan=False)


def test_describe_names_the_numbers(h200) -> None:
    p = predict(h200, KernelConfig.parse("04"), 4096, 4096, 4096)
    text = p.binding.describe()
    # "shared: 73 GB at 33.5 TB/s = 2.18 ms  [...]"
    assert text.startswith("shared: 73 GB at 33.5 TB/s = 2.18 ms")
    assert "TM=8, TN=8" in text
    assert {r.name: r for r in p.roofs}["fp32"].describe().startswith("fp32: 137 GFLOP at 66.9 TFLOP/s = 2.12 ms")


def test_prediction_is_frozen(h200) -> None:
    p = predict(h200, KernelConfig.parse("04"), 256, 256, 256)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.time_s = 1.0  # type: ignore[misc]
