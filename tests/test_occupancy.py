"""Tests for model/occupancy.py: blocks per SM, hand-worked against the CUDA occupancy calculator's rules
(reference gpu-specs-and-cupy.md §A3) with the arithmetic in comments. No GPU needed."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import sympy as sp

from model.errors import ConfigError
from model.occupancy import (
    LIMIT_ORDER,
    Occupancy,
    blocks_per_sm_array,
    carveout_bytes,
    derive_thread_limit,
    occupancy,
)
from model.spec import list_gpus, load_gpu

KiB = 1024


@pytest.fixture(scope="module")
def rtx4060():
    return load_gpu("rtx4060")


@pytest.fixture(scope="module")
def h200():
    return load_gpu("h200")


# --------------------------------------------------------------------------------------------------
# Thread (warp) limit: the seed's block-size argument
# --------------------------------------------------------------------------------------------------


def test_rtx4060_256_threads(rtx4060) -> None:
    # 256 threads = 8 warps; 48 warps/SM // 8 = 6 blocks (the 24-block limit does not bind)
    # -> 6 x 256 = 1536 active threads, 1536 - 1536 = 0 idle
    o = occupancy(rtx4060, 256)
    assert isinstance(o, Occupancy)
    assert o.warps_per_block == 8
    assert o.blocks_per_sm == 6
    assert o.limiter == "threads" and o.limiters == ("threads",)
    assert o.active_threads == 1536 and o.active_warps == 48
    assert o.idle_threads == 0
    assert o.fraction == 1.0
    assert o.limits == {"threads": 6, "blocks": 24, "registers": None, "shared_memory": None}


def test_rtx4060_1024_threads(rtx4060) -> None:
    # 1024 threads = 32 warps; 48 // 32 = 1 block -> 1024 active, 1536 - 1024 = 512 idle (1536/1024 = 1.5)
    o = occupancy(rtx4060, 1024)
    assert o.blocks_per_sm == 1
    assert o.limiter == "threads"
    assert o.active_threads == 1024
    assert o.idle_threads == 512
    assert o.fraction == pytest.approx(1024 / 1536)


def test_h200_256_and_1024(h200) -> None:
    # H200: 64 warps/SM. 256 threads = 8 warps -> 64 // 8 = 8 blocks; 1024 threads = 32 warps -> 2 blocks.
    # Both fill all 2048 thread slots.
    o = occupancy(h200, 256)
    assert (o.blocks_per_sm, o.limiter, o.active_threads, o.idle_threads) == (8, "threads", 2048, 0)
    o = occupancy(h200, 1024)
    assert (o.blocks_per_sm, o.limiter, o.active_threads, o.idle_threads) == (2, "threads", 2048, 0)


def test_partial_warp_rounds_up(rtx4060) -> None:
    # 33 threads occupy 2 warps: 48 // 2 = 24 blocks, which also equals the 24-block limit -> both bind,
    # 'threads' reported first
    o = occupancy(rtx4060, 33)
    assert o.warps_per_block == 2
    assert o.blocks_per_sm == 24
    assert o.limiters == ("threads", "blocks") and o.limiter == "threads"


def test_blocks_limit_binds(h200) -> None:
    # 32 threads = 1 warp: 64 // 1 = 64 by warps, but at most 32 resident blocks on CC 9.0
    o = occupancy(h200, 32)
    assert o.blocks_per_sm == 32
    assert o.limiter == "blocks"
    assert o.active_threads == 1024 and o.idle_threads == 1024


# --------------------------------------------------------------------------------------------------
# Register limit
# --------------------------------------------------------------------------------------------------


def test_registers_bind_h200(h200) -> None:
    # 128 regs/thread x 32 = 4096 regs per warp (already a multiple of 256);
    # 65536 / 4 sub-partitions = 16384 regs each; 16384 // 4096 = 4 warps per sub-partition
    # -> 16 warps per SM; 256 threads = 8 warps -> 16 // 8 = 2 blocks (warps alone would allow 8)
    o = occupancy(h200, 256, registers=128)
    assert o.regs_per_warp == 4096
    assert o.limits["registers"] == 2
    assert o.blocks_per_sm == 2
    assert o.limiter == "registers" and o.limiters == ("registers",)
    assert o.active_warps == 16 and o.active_threads == 512


def test_register_rounding(h200) -> None:
    # 33 regs x 32 = 1056 -> round up to a multiple of 256 -> 1280 per warp;
    # 16384 // 1280 = 12 warps per sub-partition -> 48 per SM -> 48 // 8 = 6 blocks of 256 threads
    o = occupancy(h200, 256, registers=33)
    assert o.regs_per_warp == 1280
    assert o.blocks_per_sm == 6
    assert o.limiter == "registers"
    # 32 regs x 32 = 1024, exactly 4 x 256: 16384 // 1024 = 16 -> 64 warps -> 8 blocks: threads and registers tie
    o = occupancy(h200, 256, registers=32)
    assert o.regs_per_warp == 1024
    assert o.blocks_per_sm == 8
    assert o.limiters == ("threads", "registers")


def test_48_warp_gpus_need_40_registers_for_full_occupancy(rtx4060) -> None:
    # reference §A1: 16384 regs per sub-partition / 12 warps = 1365 -> round down to 1280 = 40 x 32.
    # 128-thread blocks (4 warps):
    #   40 regs: 1280 per warp; 16384 // 1280 = 12 warps/sub-partition -> 48 warps -> 12 blocks -> 48 warps (full)
    #   41 regs: 1312 -> 1536 per warp; 16384 // 1536 = 10 -> 40 warps -> 10 blocks -> 40 warps (83.3 %)
    o40 = occupancy(rtx4060, 128, registers=40)
    assert o40.regs_per_warp == 1280
    assert o40.active_warps == 48 == rtx4060.max_warps_per_sm
    assert o40.blocks_per_sm == 12
    assert o40.limiters == ("threads", "registers")
    o41 = occupancy(rtx4060, 128, registers=41)
    assert o41.regs_per_warp == 1536
    assert o41.active_warps == 40 < 48
    assert o41.blocks_per_sm == 10
    assert o41.limiter == "registers"
    assert o41.idle_threads == 1536 - 10 * 128 == 256


@pytest.mark.parametrize("key", ["a100", "h100", "h200"])
def test_64_warp_gpus_need_32_registers(key: str) -> None:
    # reference §A1: 16384 / 16 warps = 1024 = 32 x 32 regs. 32 regs -> 64 warps; 33 -> 1280/warp -> 12*4 = 48 warps
    g = load_gpu(key)
    assert occupancy(g, 128, registers=32).active_warps == 64
    assert occupancy(g, 128, registers=33).active_warps == 48


# --------------------------------------------------------------------------------------------------
# Shared-memory limit and carveout
# --------------------------------------------------------------------------------------------------


def test_shared_memory_binds_h200(h200) -> None:
    # 48 KiB = 49152 B + 1024 reserved = 50176, already a multiple of 128 -> 50176 B per block;
    # default carveout = the maximum 233472 B; 233472 // 50176 = 4 blocks (4 x 50176 = 200704)
    # 128 threads = 4 warps would allow 16 -> shared memory binds
    o = occupancy(h200, 128, smem_bytes=48 * KiB)
    assert o.smem_alloc_bytes_per_block == 50176
    assert o.smem_carveout_bytes == 233472
    assert o.limits["shared_memory"] == 4
    assert o.blocks_per_sm == 4
    assert o.limiter == "shared_memory"


def test_shared_memory_rounding(rtx4060) -> None:
    # 8192 B (rung 04 128x128x8: (128*8 + 8*128) * 4) + 1024 = 9216 = 72 x 128 -> 9216;
    # 102400 // 9216 = 11 blocks
    o = occupancy(rtx4060, 256, smem_bytes=8192)
    assert o.smem_alloc_bytes_per_block == 9216
    assert o.limits["shared_memory"] == 11
    # 1 B + 1024 = 1025 -> rounded up to 1152 (9 x 128); 102400 // 1152 = 88
    o = occupancy(rtx4060, 128, smem_bytes=1)
    assert o.smem_alloc_bytes_per_block == 1152
    assert o.limits["shared_memory"] == 88


def test_no_shared_memory_no_limit(rtx4060) -> None:
    o = occupancy(rtx4060, 256)
    assert o.limits["shared_memory"] is None
    assert o.smem_alloc_bytes_per_block is None and o.smem_carveout_bytes is None


def test_carveout_steps(h200, rtx4060) -> None:
    # H200 steps (KiB): 0, 8, 16, 32, 64, 100, 132, 164, 196, 228
    # default preference = the SM maximum 228 KiB = 233472
    assert carveout_bytes(h200, 50176) == 233472
    # preference 0: smallest step holding one 50176 B block is 64 KiB = 65536
    assert carveout_bytes(h200, 50176, 0) == 65536
    # exactly on a step: 65536 -> 65536
    assert carveout_bytes(h200, 65536, 0) == 65536
    # 9216 B block, preference 0 -> 16 KiB = 16384
    assert carveout_bytes(h200, 9216, 0) == 16384
    # preference between steps (100000 B) rounds up to 100 KiB = 102400
    assert carveout_bytes(h200, 50176, 100_000) == 102400
    # a preference above every step falls back to the maximum
    assert carveout_bytes(rtx4060, 9216, 10**6) == 102400
    # RTX 4060 steps (KiB): 0, 8, 16, 32, 64, 100; 40000 B -> 64 KiB
    assert carveout_bytes(rtx4060, 40000, 0) == 65536


def test_carveout_preference_changes_blocks(h200) -> None:
    # 48 KiB blocks (50176 B allocated): preference 0 -> 64 KiB carveout -> 65536 // 50176 = 1 block;
    # preference 100 KiB -> 102400 // 50176 = 2 blocks; default (228 KiB) -> 4 blocks
    assert occupancy(h200, 128, smem_bytes=48 * KiB, carveout_preference_bytes=0).blocks_per_sm == 1
    o = occupancy(h200, 128, smem_bytes=48 * KiB, carveout_preference_bytes=100 * KiB)
    assert o.smem_carveout_bytes == 102400 and o.blocks_per_sm == 2
    assert occupancy(h200, 128, smem_bytes=48 * KiB).blocks_per_sm == 4


def test_largest_block_fits_exactly(rtx4060) -> None:
    # opt-in limit 101376 B: 101376 + 1024 = 102400 = the whole 100 KiB carveout -> exactly 1 block
    o = occupancy(rtx4060, 256, smem_bytes=101376)
    assert o.smem_alloc_bytes_per_block == 102400
    assert o.blocks_per_sm == 1 and o.limiter == "shared_memory"


def test_reserved_shared_memory_counts_with_zero_smem(h200) -> None:
    o = occupancy(h200, 64, smem_bytes=0, carveout_preference_bytes=0)
    assert o.blocks_per_sm == 8
    assert o.limiter == "shared_memory"


# --------------------------------------------------------------------------------------------------
# Blocks that cannot launch
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "threads, registers, smem, limit",
    [
        (1025, None, 0, "threads_per_block"),       # > 1024 threads per block
        (2048, None, 0, "threads_per_block"),
        (0, None, 0, "threads_per_block"),          # not a positive thread count
        (-32, None, 0, "threads_per_block"),
        (128, 256, 0, "registers_per_thread"),      # > 255 registers per thread
        (128, 0, 0, "registers_per_thread"),        # 0 registers is not a register count
        # 1024 threads x 65 regs: 65*32 = 2080 -> 2304 per warp x 32 warps = 73728 > 65536 per block
        (1024, 65, 0, "registers_per_block"),
        # 1024 threads x 255 regs: 8160 -> 8192 per warp x 32 = 262144 > 65536
        (1024, 255, 0, "registers_per_block"),
        # RTX 4060 opt-in limit 101376 B: one byte more -> roundup(102401, 128) = 102528 > 101376 + 1024
        (256, None, 101377, "shared_memory_per_block"),
        (256, None, 200 * KiB, "shared_memory_per_block"),
        (256, None, -1, "shared_memory_per_block"),
    ],
)
def test_invalid_blocks_raise(rtx4060, threads, registers, smem, limit) -> None:
    with pytest.raises(ConfigError) as ei:
        occupancy(rtx4060, threads, registers, smem)
    assert ei.value.limit == limit
    assert str(ei.value)


def test_register_block_limit_boundary(rtx4060) -> None:
    # 1024 threads x 64 regs: 2048 per warp x 32 warps = 65536 = the per-block limit: allowed, 1 block
    o = occupancy(rtx4060, 1024, registers=64)
    assert o.regs_per_warp == 2048
    assert o.blocks_per_sm == 1


def test_register_block_check_rounds_warps_to_4(h200) -> None:
    # The hardware check rounds warps up to a multiple of 4 (warp_alloc_granularity) before comparing
    # with the 65536 registers per block. 416 threads = 13 warps -> 16 allocated.
    # 136 regs: 136*32 = 4352 (a multiple of 256) per warp; 4352 x 13 = 56576 would fit, but
    # 4352 x 16 = 69632 > 65536 -> rejected.
    with pytest.raises(ConfigError) as ei:
        occupancy(h200, 416, registers=136)
    assert ei.value.limit == "registers_per_block"
    # 128 regs: 4096 x 16 = 65536 -> allowed; 16384 // 4096 = 4 warps/sub-partition -> 16 warps -> 16 // 13 = 1
    assert occupancy(h200, 416, registers=128).blocks_per_sm == 1
    # 96 threads = 3 warps -> 4 allocated; 255 regs -> 8160 -> 8192/warp x 4 = 32768 <= 65536: fine;
    # 16384 // 8192 = 2 warps per sub-partition -> 8 warps -> 8 // 3 = 2 blocks
    o = occupancy(h200, 96, registers=255)
    assert o.regs_per_warp == 8192 and o.blocks_per_sm == 2


# --------------------------------------------------------------------------------------------------
# Results: rendering and JSON
# --------------------------------------------------------------------------------------------------


def test_explain_and_json(h200) -> None:
    o = occupancy(h200, 256, registers=128, smem_bytes=8192)
    text = o.explain()
    for name in LIMIT_ORDER:
        assert name in text
    assert "registers" in text and "<- binds" in text
    assert "2 blocks/SM" in text and "512 of 2048" in text
    d = json.loads(json.dumps(o.to_json()))
    assert d["blocks_per_sm"] == 2 and d["limiter"] == "registers"
    assert d["idle_threads"] == 1536 and d["occupancy"] == pytest.approx(0.25)


def test_occupancy_is_frozen(h200) -> None:
    o = occupancy(h200, 256)
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.blocks_per_sm = 3  # type: ignore[misc]


def test_fraction_counts_warps(rtx4060) -> None:
    o = occupancy(rtx4060, 48)
    assert o.active_warps == 48
    assert o.fraction == 1.0


# --------------------------------------------------------------------------------------------------
# Vectorised version
# --------------------------------------------------------------------------------------------------


def _scalar(gpu, t: int, r: int, s: int) -> int:
    """occupancy() with the array function's conventions: registers 0 = unknown, invalid -> 0 blocks."""
    try:
        return occupancy(gpu, t, r or None, s).blocks_per_sm
    except ConfigError:
        return 0


@pytest.mark.parametrize("key", list_gpus())
def test_blocks_per_sm_array_matches_scalar(key: str) -> None:
    g = load_gpu(key)
    rng = np.random.default_rng(12345)
    n = 3000
    threads = rng.integers(0, 1100, n)                      # includes 0 and > 1024 (invalid)
    regs = rng.integers(0, 256, n)                         # 0 = unknown; 1..255 valid per thread
    smem = rng.integers(0, g.shared_bytes_per_block_optin + 4 * KiB, n)   # includes over-limit
    smem[rng.random(n) < 0.3] = 0
    regs[rng.random(n) < 0.2] = 0
    # pin some edge cases
    threads[:6] = [0, 1, 32, 1024, 1025, 992]
    regs[:6] = [0, 255, 64, 64, 32, 66]
    smem[:6] = [0, g.shared_bytes_per_block_optin, g.shared_bytes_per_block_optin + 1, 0, 0, 0]
    got = blocks_per_sm_array(g, threads, regs, smem)
    assert got.shape == (n,)
    want = np.array([_scalar(g, int(t), int(r), int(s)) for t, r, s in zip(threads, regs, smem)])
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(threads[i], regs[i], smem[i], got[i], want[i]) for i in bad[:5]]
    # the grid really covers invalid and valid cases
    assert (want == 0).sum() > 50 and (want > 0).sum() > 1000


def test_blocks_per_sm_array_broadcasts(h200) -> None:
    # one block shape against three register counts: 32 -> 8, 128 -> 2 (hand-worked above), 33 -> 6
    got = blocks_per_sm_array(h200, 256, [32, 128, 33], 0)
    assert got.tolist() == [8, 2, 6]


def test_blocks_per_sm_array_rejects_too_many_registers(h200) -> None:
    with pytest.raises(ConfigError):
        occupancy(h200, 128, 300)
    assert blocks_per_sm_array(h200, [128], [300], [0]).tolist() == [0]


# --------------------------------------------------------------------------------------------------
# The seed's derivation of the per-SM thread limit
# --------------------------------------------------------------------------------------------------


def test_derive_thread_limit_rtx4060(rtx4060) -> None:
    # seed: 1 SM x 4 schedulers x 1 x 12 warps per scheduler x 32 threads = 1536
    d = derive_thread_limit(rtx4060)
    assert sp.sstr(d.product) == "1*4*1*12*32"
    assert d.threads_per_sm == 1536 == 1 * 4 * 1 * 12 * 32
    # 16x16 = 256 threads: 1536/256 = 6 blocks, 0 idle; 32x32 = 1024: 1536/1024 = 1.5 -> 1 block, 512 idle
    assert d.blocks == ((16, 256, 6, 0), (32, 1024, 1, 512))
    text = d.text()
    assert "1*4*1*12*32 = 1536" in text
    assert "1536/256 = 6 -> 6 block(s)" in text
    assert "1536/1024 = 3/2 -> 1 block(s) per SM, 512 thread slots idle" in text


def test_derive_thread_limit_h200(h200) -> None:
    # 1 x 4 x 1 x 16 x 32 = 2048; 256 threads -> 8 blocks; 1024 -> 2 blocks; nothing idle
    d = derive_thread_limit(h200)
    assert sp.sstr(d.product) == "1*4*1*16*32"
    assert d.threads_per_sm == 2048
    assert d.blocks == ((16, 256, 8, 0), (32, 1024, 2, 0))


def test_derive_thread_limit_other_sides(rtx4060) -> None:
    # 8x8 = 64 threads = 2 warps: 48 // 2 = 24 blocks = the block limit -> 1536 active, 0 idle
    d = derive_thread_limit(rtx4060, sides=(8,))
    assert d.blocks == ((8, 64, 24, 0),)


@pytest.mark.parametrize("key", list_gpus())
def test_thread_limit_product_equals_spec(key: str) -> None:
    g = load_gpu(key)
    d = derive_thread_limit(g)
    assert d.threads_per_sm == g.max_threads_per_sm
    assert int(sp.simplify(d.product)) == g.sub_partitions * g.warps_per_scheduler * g.warp_size
