"""Tests for model/registry.py: the tiling ladder, config parsing, validity rules and launch geometry.
No GPU needed."""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

import pytest

from model.errors import ConfigError
from model.registry import (
    RULES,
    RUNGS,
    KernelConfig,
    classic_configs,
    geometry,
    grid,
    grid_configs,
    is_valid,
    min_registers,
    n_blocks,
    rung,
    validate,
    validate_size,
    violations,
)
from model.spec import list_gpus, load_gpu

REPO = Path(__file__).resolve().parent.parent
KERNEL_DIR = REPO / "gpu" / "kernels"

# The register-tiling grid of the brief: 4 x 4 x 3 x 4 x 4 = 768 combinations
REG_GRID = dict(BM=[32, 64, 128, 256], BN=[32, 64, 128, 256], BK=[8, 16, 32], TM=[2, 4, 8, 16], TN=[2, 4, 8, 16])


def cfg4(**kw) -> KernelConfig:
    p = dict(BM=128, BN=128, BK=8, TM=8, TN=8)
    p.update(kw)
    return KernelConfig.make(4, **p)


def limit_of(cfg: KernelConfig, gpu=None) -> str:
    with pytest.raises(ConfigError) as ei:
        validate(cfg, gpu)
    assert str(ei.value)
    return ei.value.limit


# --------------------------------------------------------------------------------------------------
# Rungs
# --------------------------------------------------------------------------------------------------


def test_ladder_numbers_and_names() -> None:
    assert sorted(RUNGS) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    assert [RUNGS[i].slug for i in range(13)] == [
        "cublas", "naive", "smem_tiling", "reg1d", "reg2d", "float4", "double_buffer", "warptile",
        "async_pipeline", "bank_aware", "lean_pipeline", "steady_loop", "vector_reduce"]
    assert RUNGS[7].file == "07_warptile.cu" and RUNGS[7].kernel == "sgemm_07_warptile"
    assert RUNGS[8].file == "08_async_pipeline.cu" and RUNGS[8].kernel == "sgemm_08_async"
    assert RUNGS[9].file == "09_bank_aware.cu" and RUNGS[9].kernel == "sgemm_09_bank"
    assert RUNGS[10].file == "10_lean_pipeline.cu" and RUNGS[10].kernel == "sgemm_10_lean"
    assert RUNGS[11].file == "11_steady_loop.cu" and RUNGS[11].kernel == "sgemm_11_steady"
    assert RUNGS[12].file == "12_vector_reduce.cu" and RUNGS[12].kernel == "sgemm_12_vred"
    assert RUNGS[0].file is None and RUNGS[0].kernel is None
    assert RUNGS[4].file == "04_reg2d.cu" and RUNGS[4].kernel == "sgemm_04_reg2d"
    assert RUNGS[6].file == "06_double_buffer.cu" and RUNGS[6].kernel == "sgemm_06_dbuf"
    assert RUNGS[4].label == "04 2D register tiling"


@pytest.mark.parametrize("name", [4, "4", "04", "reg2d", "04_reg2d", " REG2D "])
def test_rung_lookup(name) -> None:
    assert rung(name).number == 4


def test_rung_lookup_by_kernel_suffix() -> None:
    assert rung("dbuf").number == 6 and rung("06_dbuf").number == 6
    assert rung("smem").number == 2 and rung("smem_tiling").number == 2
    assert rung("cublas").number == 0


@pytest.mark.parametrize("name", [13, -1, "13", "nope", ""])
def test_unknown_rung(name) -> None:
    with pytest.raises(ConfigError) as ei:
        rung(name)
    assert ei.value.limit == "rung"
    assert "04_reg2d" in str(ei.value)  # lists the known rungs


@pytest.mark.parametrize("number", [n for n in RUNGS if n != 0])
def test_kernel_file_exists_and_names_kernel(number: int) -> None:
    r = RUNGS[number]
    path = KERNEL_DIR / r.file
    if not path.is_file():
        pytest.skip(f"gpu/kernels/{r.file} is missing (rung {number:02d})")
    text = path.read_text()
    # the templated __global__ function is defined in the file, with the rung's template parameters
    assert re.search(rf"__global__\s+void\s+(__launch_bounds__\([^;{{]*?\)\s+)?{r.kernel}\s*\(", text), r.kernel
    flat = re.sub(r"\s+", " ", re.sub(r"\n\s*//", " ", text))   # a declaration may wrap (in code or a comment)
    assert f"template<int {', int '.join(r.params)}> {r.kernel}" in flat or \
        f"template <int {', int '.join(r.params)}>" in flat


# --------------------------------------------------------------------------------------------------
# KernelConfig: construction, parsing, formats
# --------------------------------------------------------------------------------------------------


def test_make_orders_params_by_template() -> None:
    c = KernelConfig.make("reg2d", TN=4, TM=8, BK=16, BN=64, BM=128)
    assert c.params == (("BM", 128), ("BN", 64), ("BK", 16), ("TM", 8), ("TN", 4))
    assert c.p == {"BM": 128, "BN": 64, "BK": 16, "TM": 8, "TN": 4}


@pytest.mark.parametrize(
    "rung_id, params",
    [
        (4, dict(BM=128, BN=128, BK=8, TM=8)),                     # missing TN
        (4, dict(BM=128, BN=128, BK=8, TM=8, TN=8, XX=1)),         # unknown XX
        (1, dict(BX=32, BY=32)),                                    # missing COALESCED
        (0, dict(BM=1)),                                            # cuBLAS takes none
    ],
)
def test_make_missing_or_unknown(rung_id, params) -> None:
    with pytest.raises(ConfigError) as ei:
        KernelConfig.make(rung_id, **params)
    assert ei.value.limit == "parameters"


def test_direct_construction_checks_names_and_types() -> None:
    with pytest.raises(ConfigError) as ei:
        KernelConfig(4, (("BM", 128),))
    assert ei.value.limit == "parameters" and "missing BN, BK, TM, TN" in str(ei.value)
    with pytest.raises(ConfigError) as ei:  # wrong order is a different template
        KernelConfig(3, (("BN", 64), ("BM", 64), ("BK", 8), ("TM", 8)))
    assert ei.value.limit == "parameters"
    for bad in (128.0, "128", True, None):
        with pytest.raises(ConfigError) as ei:
            KernelConfig(4, (("BM", bad), ("BN", 128), ("BK", 8), ("TM", 8), ("TN", 8)))
        assert ei.value.limit == "parameters"


@pytest.mark.parametrize("bad", [128.7, True, "x"])
def test_make_rejects_non_integers(bad) -> None:
    with pytest.raises(ConfigError) as ei:
        cfg4(BM=bad)
    assert ei.value.limit == "parameters"


def test_parse() -> None:
    c = KernelConfig.parse("reg2d:BM=64,BN=32,BK=16,TM=4,TN=2")
    assert c.key == "04:BM=64,BN=32,BK=16,TM=4,TN=2"
    # missing parameters take the first classic config's values; keys are case-insensitive
    c = KernelConfig.parse("04:bm=64")
    assert c.p == {"BM": 64, "BN": 128, "BK": 8, "TM": 8, "TN": 8}
    assert KernelConfig.parse("naive") == KernelConfig.make(1, BX=32, BY=32, COALESCED=1)
    assert KernelConfig.parse("naive:COALESCED=0").p == {"BX": 32, "BY": 32, "COALESCED": 0}
    assert KernelConfig.parse("cublas") == KernelConfig(0, ())
    assert KernelConfig.parse(" reg1d : BM=32 , ").p["BM"] == 32


@pytest.mark.parametrize("cfg", classic_configs(), ids=lambda c: c.key)
def test_parse_key_round_trip(cfg: KernelConfig) -> None:
    assert KernelConfig.parse(cfg.key) == cfg
    assert KernelConfig.from_json(cfg.to_json()) == cfg
    assert hash(KernelConfig.parse(cfg.key)) == hash(cfg)


@pytest.mark.parametrize(
    "text, limit",
    [
        ("reg2d:BM", "parameters"),            # no '='
        ("reg2d:BM=x", "parameters"),          # not an integer
        ("reg2d:BM=1.5", "parameters"),
        ("reg2d:XX=4", "parameters"),          # unknown parameter
        ("nosuch:BM=4", "rung"),               # unknown rung
    ],
)
def test_parse_errors(text: str, limit: str) -> None:
    with pytest.raises(ConfigError) as ei:
        KernelConfig.parse(text)
    assert ei.value.limit == limit


def test_key_name_expression_label() -> None:
    c = cfg4()
    assert c.key == "04:BM=128,BN=128,BK=8,TM=8,TN=8"
    assert c.name_expression == "sgemm_04_reg2d<128,128,8,8,8>"
    assert c.label == "04 reg2d 128x128x8 8x8"
    n = KernelConfig.make(1, BX=32, BY=8, COALESCED=1)
    assert n.key == "01:BX=32,BY=8,COALESCED=1"
    assert n.name_expression == "sgemm_01_naive<32,8,1>"
    assert n.label == "01 naive 32x8"
    assert KernelConfig.make(1, BX=32, BY=8, COALESCED=0).label == "01 naive 32x8 uncoalesced"
    assert KernelConfig.make(2, BM=16, BN=16, BK=16).label == "02 smem 16x16x16"
    assert KernelConfig.make(3, BM=64, BN=64, BK=8, TM=8).label == "03 reg1d 64x64x8 TM=8"
    assert KernelConfig.make(3, BM=64, BN=64, BK=8, TM=8).name_expression == "sgemm_03_reg1d<64,64,8,8>"
    assert KernelConfig.make(5, BM=64, BN=128, BK=8, TM=4, TN=8).label == "05 float4 64x128x8 4x8"
    assert KernelConfig.make(6, BM=64, BN=128, BK=8, TM=4, TN=8).name_expression == "sgemm_06_dbuf<64,128,8,4,8>"
    c0 = KernelConfig(0)
    assert (c0.key, c0.name_expression, c0.label) == ("00:", None, "00 cuBLAS")


def test_to_json() -> None:
    assert cfg4().to_json() == {"rung": 4, "name": "reg2d",
                                "params": {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8}}


# --------------------------------------------------------------------------------------------------
# Geometry and grid
# --------------------------------------------------------------------------------------------------


def test_geometry() -> None:
    # rung 04 128x128x8 8x8: 128*128/(8*8) = 256 threads; (128*8 + 8*128)*4 = 8192 B dynamic shared memory
    g = geometry(cfg4())
    assert (g.threads, g.block, g.smem_bytes, g.dynamic_smem_bytes, g.static_smem_bytes) == (256, (256, 1, 1), 8192, 8192, 0)
    assert g.outputs_per_thread == 64 and g.stages == 1
    # min registers: 64 accumulators + 8 + 8 operands + 8 = 88
    assert min_registers(g) == 88
    # rung 06 doubles the shared memory: 2 x 8192 = 16384
    g6 = geometry(KernelConfig.make(6, BM=128, BN=128, BK=8, TM=8, TN=8))
    assert (g6.smem_bytes, g6.stages) == (16384, 2)
    # rung 02 16x16x16: 256 threads in a (BN, BM) block, static (16*16 + 16*16)*4 = 2048 B
    g2 = geometry(KernelConfig.make(2, BM=16, BN=16, BK=16))
    assert (g2.threads, g2.block, g2.static_smem_bytes, g2.dynamic_smem_bytes) == (256, (16, 16, 1), 2048, 0)
    # rung 03 64x64x8 TM=8: 64*64/8 = 512 threads, TN = 1
    g3 = geometry(KernelConfig.make(3, BM=64, BN=64, BK=8, TM=8))
    assert (g3.threads, g3.TN, g3.smem_bytes) == (512, 1, (64 * 8 + 8 * 64) * 4)
    # naive: the block (BX, BY) is the tile; coalesced puts BX along N
    gn = geometry(KernelConfig.make(1, BX=32, BY=8, COALESCED=1))
    assert (gn.BM, gn.BN, gn.BK, gn.threads, gn.uses_shared) == (8, 32, 1, 256, False)
    gu = geometry(KernelConfig.make(1, BX=32, BY=8, COALESCED=0))
    assert (gu.BM, gu.BN) == (32, 8)


@pytest.mark.parametrize(
    "cfg, expected",
    [
        # 128x128 tiles on M = 1000, N = 3001: x = ceil(3001/128) = 24 (23.4), y = ceil(1000/128) = 8 (7.8)
        (KernelConfig.make(4, BM=128, BN=128, BK=8, TM=8, TN=8), (24, 8, 1)),
        (KernelConfig.make(6, BM=64, BN=128, BK=8, TM=4, TN=8), (24, 16, 1)),      # ceil(1000/64) = 16
        (KernelConfig.make(3, BM=64, BN=64, BK=8, TM=8), (47, 16, 1)),             # ceil(3001/64) = 47
        (KernelConfig.make(2, BM=16, BN=16, BK=16), (188, 63, 1)),                 # 187.6 -> 188, 62.5 -> 63
        # naive coalesced, block (32, 8): x over N = ceil(3001/32) = 94, y over M = ceil(1000/8) = 125
        (KernelConfig.make(1, BX=32, BY=8, COALESCED=1), (94, 125, 1)),
        # naive uncoalesced, block (32, 8): x over M = ceil(1000/32) = 32 (31.25), y over N = ceil(3001/8) = 376
        (KernelConfig.make(1, BX=32, BY=8, COALESCED=0), (32, 376, 1)),
        (KernelConfig(0), (0, 0, 0)),
    ],
    ids=lambda x: x.key if isinstance(x, KernelConfig) else None,
)
def test_grid_non_multiple(cfg: KernelConfig, expected) -> None:
    M, N = 1000, 3001
    assert grid(cfg, M, N) == expected
    assert n_blocks(cfg, M, N) == math.prod(expected)
    if cfg.rung:
        # the grid covers the output exactly once with at most one partial tile per dimension
        g = geometry(cfg)
        gx, gy, _ = expected
        if cfg.rung == 1 and not cfg.p["COALESCED"]:
            (rows, tile_rows), (cols, tile_cols) = (gx * g.block[0], g.block[0]), (gy * g.block[1], g.block[1])
        else:
            (rows, tile_rows), (cols, tile_cols) = (gy * g.BM, g.BM), (gx * g.BN, g.BN)
        assert 0 <= rows - M < tile_rows and 0 <= cols - N < tile_cols


def test_grid_exact_multiple() -> None:
    # 4096 / 128 = 32 exactly: 32 x 32 = 1024 blocks
    assert grid(cfg4(), 4096, 4096) == (32, 32, 1)
    assert n_blocks(cfg4(), 4096, 4096) == 1024


# --------------------------------------------------------------------------------------------------
# Validity rules
# --------------------------------------------------------------------------------------------------


def test_rules_have_unique_limits() -> None:
    limits = [r.limit for r in RULES]
    assert len(limits) == len(set(limits))


def test_bm_not_divisible_by_tm() -> None:
    # 100 % 8 = 4
    assert limit_of(cfg4(BM=100)) == "BM % TM == 0"
    assert limit_of(KernelConfig.make(3, BM=60, BN=64, BK=8, TM=8)) == "BM % TM == 0"


def test_bn_not_divisible_by_tn() -> None:
    assert limit_of(cfg4(BN=100)) == "BN % TN == 0"


def test_too_many_threads() -> None:
    # 128*128/(4*2) = 2048 threads > 1024
    assert limit_of(cfg4(TM=4, TN=2)) == "threads_per_block"
    # rung 02 64x64: 4096 threads
    assert limit_of(KernelConfig.make(2, BM=64, BN=32, BK=8)) == "threads_per_block"
    # naive 64x32 block: 2048 threads
    assert limit_of(KernelConfig.make(1, BX=64, BY=32, COALESCED=1)) == "threads_per_block"


def test_not_whole_warps() -> None:
    # 32*32/(8*8) = 16 threads: half a warp
    assert limit_of(cfg4(BM=32, BN=32)) == "warp_multiple"
    # rung 02 has no such rule: 8x8 = 64 threads is fine, and so is 12x12 = 144 (4.5 warps)
    assert is_valid(KernelConfig.make(2, BM=12, BN=12, BK=4))


def test_registers_per_thread() -> None:
    # 16x16 micro-tile: 256 + 16 + 16 + 8 = 296 > 255 registers
    assert limit_of(cfg4(BM=256, BN=256, TM=16, TN=16)) == "registers_per_thread"


def test_registers_per_block() -> None:
    # 8x16 micro-tile in a 256x256 tile: 512 threads x (128 + 8 + 16 + 8 = 160) = 81920 > 65536
    assert limit_of(cfg4(BM=256, BN=256, TM=8, TN=16)) == "registers_per_block"


def test_float4_alignment() -> None:
    # rung 05 with TM = 2: 128-bit loads need TM % 4 == 0
    c = KernelConfig.parse("05:TM=2")
    assert c.p == {"BM": 128, "BN": 128, "BK": 8, "TM": 2, "TN": 8}
    assert limit_of(c) == "float4_alignment"
    assert limit_of(KernelConfig.make(6, BM=128, BN=128, BK=6, TM=8, TN=8)) == "float4_alignment"
    # the same TM = 2 is fine on rung 04 (128*128/16 = 1024 threads)
    assert is_valid(cfg4(TM=2))


def test_static_shared_memory_rung_02() -> None:
    # 32x32x64: (32*64 + 64*32)*4 = 16384 B fine; 32x32x256: 65536 B > 49152 static limit
    assert is_valid(KernelConfig.make(2, BM=32, BN=32, BK=64))
    assert limit_of(KernelConfig.make(2, BM=32, BN=32, BK=256)) == "static_shared_memory_per_block"


def test_shared_memory_per_block_on_gpu() -> None:
    rtx, h = load_gpu("rtx4060"), load_gpu("h200")
    # rung 06 BM=BN=256, BK=32: 2 stages x (256*32 + 32*256) x 4 B = 131072 B > 101376 (RTX 4060 opt-in).
    # With the 8x8 micro-tile this config also breaks registers_per_block first (1024 threads x 88 registers
    # = 90112 > 65536; no TM, TN in {2..16} makes a 256x256 tile valid, see test_grid_config_counts), so
    # look at the full violation list:
    big = KernelConfig.make(6, BM=256, BN=256, BK=32, TM=8, TN=8)
    found = {rule.limit: msg for rule, msg in violations(big, rtx)}
    assert "shared_memory_per_block" in found
    assert "smem_bytes=131072" in found["shared_memory_per_block"]
    assert "rtx4060.shared_bytes_per_block_optin=101376" in found["shared_memory_per_block"]
    # rung 06 128x128x64: 2 x (128*64 + 64*128) x 4 = 131072 B, 256 threads x 88 regs = 22528 fine:
    # shared memory is the first (only) violation on the RTX 4060 and fits the H200's 232448
    c = KernelConfig.make(6, BM=128, BN=128, BK=64, TM=8, TN=8)
    assert limit_of(c, rtx) == "shared_memory_per_block"
    assert is_valid(c, h)
    assert is_valid(c)  # no GPU given: GPU rules are not checked
    # rung 04 128x128x64 needs only 65536 B: fits both
    assert is_valid(cfg4(BK=64), rtx)


def test_validate_returns_config_and_reports_first_violation() -> None:
    c = cfg4()
    assert validate(c) is c
    # BM=100, TM=8 and 100*128/64 = 200 threads (not a warp multiple): the first rule in RULES order wins
    bad = cfg4(BM=100)
    assert [r.limit for r, _ in violations(bad)] == ["BM % TM == 0", "warp_multiple"]
    assert limit_of(bad) == "BM % TM == 0"


@pytest.mark.parametrize(
    "cfg",
    [
        KernelConfig.make(1, BX=0, BY=32, COALESCED=1),
        KernelConfig.make(2, BM=16, BN=-16, BK=16),
        KernelConfig.make(4, BM=0, BN=128, BK=8, TM=8, TN=8),
        KernelConfig.make(4, BM=128, BN=128, BK=-8, TM=8, TN=8),
    ],
    ids=lambda c: c.key,
)
def test_non_positive_params(cfg: KernelConfig) -> None:
    assert limit_of(cfg) == "positive"


@pytest.mark.parametrize("kw", [dict(TM=0), dict(TN=0)])
def test_zero_micro_tile_is_a_config_error(kw) -> None:
    assert limit_of(cfg4(**kw)) == "positive"


def test_coalesced_flag() -> None:
    assert limit_of(KernelConfig.make(1, BX=32, BY=32, COALESCED=2)) == "coalesced_flag"


def test_threads_per_sm_rule_is_consistent_with_specs() -> None:
    # every shipped GPU allows 1024 threads per block and >= 1536 per SM: the per-SM rule never binds
    # for a config that passed threads_per_block
    for key in list_gpus():
        assert is_valid(KernelConfig.make(1, BX=32, BY=32, COALESCED=1), load_gpu(key))


# --------------------------------------------------------------------------------------------------
# Problem sizes
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [(0, 1, 1), (1, 0, 1), (1, 1, 0), (-4, 8, 8), (8, 8, -1)])
def test_validate_size_non_positive(size) -> None:
    with pytest.raises(ConfigError) as ei:
        validate_size(*size)
    assert ei.value.limit == "size"


@pytest.mark.parametrize("size", [(1.5, 8, 8), ("8", 8, 8), (8, None, 8), (True, 8, 8)])
def test_validate_size_non_integer(size) -> None:
    with pytest.raises(ConfigError) as ei:
        validate_size(*size)
    assert ei.value.limit == "size"


def test_validate_size_ok() -> None:
    import numpy as np
    assert validate_size(1, 2, 3) == (1, 2, 3)
    out = validate_size(np.int64(4096), np.int32(1000), 3001)
    assert out == (4096, 1000, 3001) and all(type(v) is int for v in out)


# --------------------------------------------------------------------------------------------------
# Config families
# --------------------------------------------------------------------------------------------------


def test_classic_configs() -> None:
    cs = classic_configs()
    # 1 cuBLAS + 3 naive + 3 smem + 1 each for rungs 03..06 + 2 warp tiling + 1 each for rungs 08..12 = 18,
    # in ladder order
    assert len(cs) == 18
    assert [c.rung for c in cs] == sorted(c.rung for c in cs)
    assert [c.key for c in classic_configs([4, 5])] == [
        "04:BM=128,BN=128,BK=8,TM=8,TN=8", "05:BM=128,BN=128,BK=8,TM=8,TN=8"]


@pytest.mark.parametrize("key", list_gpus())
def test_classic_configs_valid_on_every_gpu(key: str) -> None:
    g = load_gpu(key)
    for c in classic_configs():
        if c.rung == 12 and g.cc_major < 9:      # vector reductions: Hopper and newer
            assert [v[0].limit for v in violations(c, g)] == ["vector_reduction_arch"], c.label
            continue
        assert violations(c, g) == [], c.label


def _count_by_hand(rung_id: int) -> int:
    """Independent re-statement of the rules for the register-tiling grid (rungs 04..06).

    Every BM, BN in {32..256} is a multiple of every TM, TN in {2..16} and of 4, so only these remain:
    32 <= threads = BM*BN/(TM*TN) <= 1024 (a power of two, so a warp multiple once >= 32);
    regs = TM*TN + TM + TN + 8 <= 255 and regs * threads <= 65536; for rungs 05/06 TM, TN in {4, 8, 16}.
    BK never matters (no shared-memory limit is reached: the largest block, rung 06 256x128x32, needs
    2 x (256*32 + 32*128) x 4 = 98304 B <= 101376 B on the RTX 4060, and 256x256 tiles fail on registers)."""
    n = 0
    for bm, bn, bk, tm, tn in itertools.product(*REG_GRID.values()):
        if rung_id in (5, 6) and (tm % 4 or tn % 4):
            continue
        threads = bm * bn // (tm * tn)
        regs = tm * tn + tm + tn + 8
        if 32 <= threads <= 1024 and regs <= 255 and regs * threads <= 65536:
            n += 1
    return n


def test_grid_config_counts() -> None:
    # Per (TM, TN), count the (BM, BN) pairs; s = log2(BM*BN) in 10..16 with 1,2,3,4,3,2,1 pairs each,
    # t = log2(TM*TN); 32 <= threads = 2^(s-t) <= 1024 means t+5 <= s <= t+10.
    #   t=2 (2x2):            s in 10..12             -> 1+2+3           = 6
    #   t=3 (2x4, 4x2):       s in 10..13             -> 1+2+3+4         = 10 each
    #   t=4 (2x8, 8x2, 4x4):  s in 10..14             -> 13 each
    #   t=5 (2x16,16x2,4x8,8x4): s in 10..15 (58 or 52 regs x 1024 <= 65536) -> 15 each
    #   t=6 (4x16,16x4: 92 regs; 8x8: 88 regs): threads <= 65536/88 = 744 -> <= 512 -> s in 11..15 -> 14 each
    #   t=7 (8x16, 16x8: 160 regs): threads <= 409 -> <= 256 -> s in 12..15 -> 3+4+3+2 = 12 each
    #   t=8 (16x16): 296 regs > 255 -> 0
    # rung 04: 6 + 2*10 + 3*13 + 4*15 + 3*14 + 2*12 = 191 (BM, BN, TM, TN) combinations x 3 BK = 573
    # rungs 05/06 (TM, TN in {4, 8, 16}): 13 + 2*15 + 14 + 2*14 + 2*12 + 0 = 109 x 3 = 327
    rtx, h = load_gpu("rtx4060"), load_gpu("h200")
    expected = {4: 573, 5: 327, 6: 327}
    for r, n in expected.items():
        assert _count_by_hand(r) == n
        for gpu in (None, rtx, h):
            assert sum(1 for _ in grid_configs(r, gpu, **REG_GRID)) == n, (r, gpu and gpu.key)


def test_grid_config_rejections_by_reason() -> None:
    # of the 768 rung-04 combinations, the first violated rule is: threads > 1024 for 105, fewer than
    # 32 threads for 45, > 255 registers for 30 (TM = TN = 16 with >= 32 threads: 10 (BM, BN) pairs x 3 BK),
    # registers x threads > 65536 for 15; 573 pass
    from collections import Counter
    reasons: Counter = Counter()
    for values in itertools.product(*REG_GRID.values()):
        v = violations(KernelConfig(4, tuple(zip(REG_GRID, values))))
        reasons[v[0][0].limit if v else "ok"] += 1
    assert reasons == {"ok": 573, "threads_per_block": 105, "warp_multiple": 45,
                       "registers_per_thread": 30, "registers_per_block": 15}


def test_grid_config_members() -> None:
    h = load_gpu("h200")
    keys = {c.key for c in grid_configs(4, h, **REG_GRID)}
    # in: the classic 128x128x8 8x8 (256 threads, 88 regs); 64x64x32 4x4 (256 threads, 32 regs);
    #     256x128x16 16x8 (256 threads x 160 regs = 40960)
    assert "04:BM=128,BN=128,BK=8,TM=8,TN=8" in keys
    assert "04:BM=64,BN=64,BK=32,TM=4,TN=4" in keys
    assert "04:BM=256,BN=128,BK=16,TM=16,TN=8" in keys
    # out: 256x256 8x8 -> 1024 threads x 88 regs = 90112 > 65536 (registers_per_block)
    assert "04:BM=256,BN=256,BK=8,TM=8,TN=8" not in keys
    assert limit_of(KernelConfig.parse("04:BM=256,BN=256,BK=8,TM=8,TN=8")) == "registers_per_block"
    # out: 32x32 8x8 -> 16 threads (warp_multiple)
    assert "04:BM=32,BN=32,BK=8,TM=8,TN=8" not in keys
    # out: 256x256 2x2 -> 16384 threads (threads_per_block)
    assert limit_of(KernelConfig.parse("04:BM=256,BN=256,BK=8,TM=2,TN=2")) == "threads_per_block"
    # rung 05: TM = 2 is never in (float4_alignment), TM = 4 can be
    keys5 = {c.key for c in grid_configs(5, h, **REG_GRID)}
    assert not any("TM=2," in k or k.endswith("TN=2") for k in keys5)
    assert "05:BM=64,BN=64,BK=8,TM=4,TN=4" in keys5


def test_grid_configs_needs_every_parameter() -> None:
    with pytest.raises(ConfigError) as ei:
        list(grid_configs(4, BM=[128], BN=[128], BK=[8], TM=[8]))
    assert ei.value.limit == "parameters"
