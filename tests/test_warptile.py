"""Rungs 07 (warp tiling), 08 (cp.async pipeline), 09 (bank-aware operands), 10 (branch-free pipeline) and 11
(predicate-free steady loop): registry rules, launch order, K slices, the simulator's
index maps and the sweeps. No GPU needed (the GPU tests are tests/gpu/test_warptile_gpu.py)."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from experiments import sweep as sw
from model.errors import ConfigError
from model.registry import (KernelConfig, classic_configs, geometry, grid, k_slices, launch_order, n_blocks,
                            validate, violations)
from model.simulate import pipeline_depth, simulate, warp_lane_layout
from model.spec import load_gpu

H200 = load_gpu("h200")
KDIR = Path(__file__).resolve().parent.parent / "gpu" / "kernels"
CLASSIC7 = KernelConfig.parse("07:BM=128,BN=128,BK=16,WM=64,WN=32,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1")


def cfg(rung=7, **kw) -> KernelConfig:
    p = dict(CLASSIC7.p)
    if rung in (8, 9, 10, 11):
        p["STAGES"] = 3
    if rung == 11:
        p["SPREAD"] = 1
    p.update(kw)
    return KernelConfig.make(rung, **p)


def limit(c: KernelConfig, gpu=None) -> str:
    with pytest.raises(ConfigError) as ei:
        validate(c, gpu)
    return ei.value.limit


def test_geometry_of_the_classic_config() -> None:
    g = geometry(CLASSIC7)
    assert g.threads == 256 and g.block == (256, 1, 1)
    assert (g.TM, g.TN) == (8, 8) and g.warp_iters == (2, 2) and g.thread_step == (4, 4)
    assert g.dynamic_smem_bytes == 2 * (16 * 132 + 16 * 128) * 4 and g.a_row_pad == 4
    g8 = geometry(cfg(8, STAGES=4))
    assert g8.stages == 4 and g8.async_copy and g8.dynamic_smem_bytes == 4 * (16 * 132 + 16 * 128) * 4
    assert grid(cfg(SPLITK=4), 1000, 300) == (8 * 3, 1, 4) and n_blocks(cfg(SPLITK=4), 1000, 300) == 96


def test_the_source_agrees_with_the_registry() -> None:
    for f in ("07_warptile.cu", "08_async_pipeline.cu", "09_bank_aware.cu", "10_lean_pipeline.cu", "11_steady_loop.cu"):
        src = (KDIR / f).read_text()
        assert "LDA = BM + 4" in src and "grid = (gm*gn, 1, SPLITK)" in src or "grid (gm*gn, 1, SPLITK)" in src
    assert re.search(r"#error .*8\.0 or newer", (KDIR / "08_async_pipeline.cu").read_text())
    src9 = (KDIR / "09_bank_aware.cu").read_text()
    assert re.search(r"#error .*8\.0 or newer", src9)
    # the pair-swapped B store and the swapped fragment read, as the CONTRACT (and the simulator) say
    assert "&Bs[r * BN + (c ^ 1)]" in src9 and "fb[kk & 1][wj * TN + j + 1] = b.x" in src9
    src10 = (KDIR / "10_lean_pipeline.cu").read_text()
    assert re.search(r"#error .*8\.0 or newer", src10) and "bDst[it] = BK * LDA + r * BN + c" in src10
    # the loop issues its copies without a branch: no `if` between the barrier and the commit
    loop = src10[src10.index("for (int t = 0; t < numTiles; ++t)"):src10.index("sgemm_10_wait<0>();")]
    assert "if (" not in loop and "if(" not in loop
    src11 = (KDIR / "11_steady_loop.cu").read_text()
    assert re.search(r"#error .*8\.0 or newer", src11)
    # rows of A and columns of B clamped into the matrix, as the CONTRACT (and the simulator) say
    assert "min(m0 + r0 + a_row(it), M - 1)" in src11 and "min(n0 + c, BVEC ? N - 4 : N - 1)" in src11
    # the steady loop copies without a bound: its compute takes the FULL copies, the tail the checked ones
    steady = src11[src11.index("for (; t < nSteady; ++t)"):src11.index("for (; t < numTiles; ++t)")]
    assert "sgemm_11_compute<true, SPREAD" in steady and "min(" not in steady


@pytest.mark.parametrize("kw, lim", [
    (dict(WM=48), "warp_tile_divides_block"),
    (dict(WNITER=3), "warp_iterations"),
    (dict(BK=12), "warptile_vectors"),
    (dict(TM=2, TN=8), "warptile_vectors"),
    (dict(SWZ=0), "positive"),
    (dict(SPLITK=0), "positive"),
    (dict(WM=32, WN=16, WNITER=1), "threads_per_block"),               # 32 warps = 1024 threads ... + more
])
def test_rules(kw, lim) -> None:
    c = cfg(**kw)
    if lim == "threads_per_block":
        c = cfg(BM=256, BN=256, WM=32, WN=32, WNITER=1, TM=4, TN=4)     # 64 warps
    assert limit(c) == lim


def test_stages_and_arch_rules() -> None:
    assert limit(cfg(8, STAGES=1)) == "pipeline_stages" and limit(cfg(8, STAGES=5)) == "pipeline_stages"
    turing = dataclasses.replace(load_gpu("rtx4060"), cc_major=7, cc_minor=5)
    bad = violations(cfg(8), turing)
    assert [r.limit for r, _ in bad] == ["async_copy_arch"] and "8.0 or newer" in bad[0][1]
    assert [r.limit for r, _ in violations(cfg(9), turing)] == ["async_copy_arch"]
    assert [r.limit for r, _ in violations(cfg(10), turing)] == ["async_copy_arch"]
    assert limit(cfg(9, STAGES=5)) == "pipeline_stages" and limit(cfg(9, WM=48)) == "warp_tile_divides_block"
    assert violations(cfg(7), turing) == []
    assert all(violations(c, H200) == [] for c in classic_configs([7, 8, 9, 10]))


@pytest.mark.parametrize("swz", [1, 2, 3, 8])
@pytest.mark.parametrize("M, N", [(1000, 700), (128, 128), (4096, 4096), (1, 3000), (3000, 1)])
def test_launch_order_is_a_permutation_in_groups(swz, M, N) -> None:
    c = cfg(SWZ=swz, SPLITK=2)
    order = launch_order(c, M, N)
    gm, gn = -(-M // 128), -(-N // 128)
    assert order.shape == (2 * gm * gn, 3)
    for z in (0, 1):
        part = order[order[:, 2] == z]
        assert sorted(map(tuple, part[:, :2])) == [(i, j) for i in range(gm) for j in range(gn)]
    assert (order[: gm * gn, 2] == 0).all()                      # slice 0 first
    first = order[: min(swz * gn, gm * gn)]
    assert set(first[:, 0]) == set(range(min(swz, gm)))          # a group: swz block rows, column by column
    if swz == 1:
        assert [tuple(x) for x in order[:gn, :2]] == [(0, j) for j in range(gn)]
    else:
        assert [tuple(x) for x in order[:min(swz, gm), :2]] == [(i, 0) for i in range(min(swz, gm))]


def test_launch_order_of_the_older_rungs_is_row_major() -> None:
    c = KernelConfig.parse("06:BM=128,BN=64,BK=8,TM=8,TN=4")
    o = launch_order(c, 300, 200)
    assert [tuple(x) for x in o] == [(i, j, 0) for i in range(3) for j in range(4)]


@pytest.mark.parametrize("K", [1, 7, 16, 17, 100, 16384, 16385])
@pytest.mark.parametrize("S", [1, 2, 3, 16])
def test_k_slices_cover_k_in_whole_tiles(K, S) -> None:
    sl = k_slices(cfg(SPLITK=S), K)
    assert len(sl) == S and sl[0][0] == 0
    covered = [k for b, e in sl for k in range(b, e)]
    assert covered == list(range(K))
    assert all(b % 16 == 0 or b == e == K for b, e in sl)


def test_simulated_shared_accesses_are_conflict_free() -> None:
    for c in classic_configs([7, 8, 9, 10]) + [cfg(BK=8), cfg(BM=64, BN=128, WM=32, WN=64), cfg(8, BK=32), cfg(9),
                                               cfg(9, BK=32), cfg(10), cfg(10, BK=32)]:
        s = simulate(c, 2048, 2048, 2048)
        assert s.lds_bank_conflicts == 0 and s.sts_bank_conflicts == 0, c.label
        assert s.ffma_thread == 2048 ** 3
        # one LDS.128 per 4 floats of each operand fragment per kk
        g = geometry(c)
        per_tile = g.BK * (g.TM + g.TN) // 4 * (g.threads // 32)
        assert s.per_block_iteration.lds_instructions == per_tile


def test_async_copies_count_as_global_loads_and_shared_stores() -> None:
    s7, s8 = simulate(CLASSIC7, 1024, 1024, 1024), simulate(cfg(8), 1024, 1024, 1024)
    assert s7.gld_sectors == s8.gld_sectors                       # the same bytes from L2
    assert s8.gld_requests > s7.gld_requests                       # A: 4-byte copies, not LDG.128
    # per thread and tile: A 2 float4 x 4 STS, B 2 STS.128; 8 warps
    assert s7.per_block_iteration.sts_instructions == 8 * (2 * 4 + 2)
    assert pipeline_depth(cfg(8, STAGES=4))["tiles_in_flight"] == 3
    assert pipeline_depth(CLASSIC7) == {"stages": 2, "tiles_in_flight": 1, "register_staged": True,
                                       "async_copy": False}


def test_bank_aware_copies_b_element_by_element_into_swapped_pairs() -> None:
    """Rung 09 copies B with 4-byte cp.async (one per element, a warp 128 contiguous bytes) where rung 08
    uses 16-byte ones: the same sectors, four times the copy instructions, and conflict-free shared stores
    (c ^ 1 keeps the 32 lanes of a warp in 32 banks); the inner loop's shared loads do not change."""
    c8, c9 = cfg(8), cfg(9)
    s8, s9 = simulate(c8, 1024, 1024, 1024), simulate(c9, 1024, 1024, 1024)
    assert geometry(c9).b_pair_swap and not geometry(c8).b_pair_swap and geometry(c9).async_copy
    assert s9.gld_sectors == s8.gld_sectors and s9.lds_wavefronts == s8.lds_wavefronts
    b_copies8 = 16 * 128 // 4 // 32            # per block and tile: B float4s / 32 lanes = warp instructions
    assert s9.per_block_iteration.gld_requests - s8.per_block_iteration.gld_requests == 3 * b_copies8
    assert s9.sts_bank_conflicts == 0 and s9.per_block_iteration.sts_wavefronts == s8.per_block_iteration.sts_wavefronts
    # N % 4 != 0: rung 08 copies B by 4-byte elements too, but its lanes stride 16 bytes
    # (each of the 4 copies of a float4 touches all its sectors) where rung 09's lanes read 128 contiguous bytes
    o8, o9 = simulate(c8, 130, 77, 33), simulate(c9, 130, 77, 33)
    assert o9.gld_requests <= o8.gld_requests and o9.gld_sectors < o8.gld_sectors   # (warps with no live lane skip)
    assert pipeline_depth(cfg(9, STAGES=4))["tiles_in_flight"] == 3


def test_lean_pipeline_counts_as_rung_08_on_the_vector_path() -> None:
    """Rung 10 reads and writes what rung 08 does where B takes 16-byte copies; off that path (N % 4 != 0) it
    copies B by element with a warp on 32 consecutive floats: fewer sectors, conflict-free shared stores."""
    for size in [(1024, 1024, 1024), (1000, 1004, 77), (130, 80, 33)]:
        a, b = simulate(cfg(8), *size), simulate(cfg(10), *size)
        assert dataclasses.astuple(a)[1:] == dataclasses.astuple(b)[1:], size
    o8, o10 = simulate(cfg(8), 130, 77, 33), simulate(cfg(10), 130, 77, 33)
    assert o10.gld_sectors < o8.gld_sectors and o10.sts_bank_conflicts == 0 < o8.sts_bank_conflicts
    assert geometry(cfg(10)).b_element_fallback and not geometry(cfg(10)).b_pair_swap


def test_steady_loop_counts_as_rung_10_inside_the_matrix() -> None:
    """Rung 11 reads what rung 10 reads where every block lies inside A, B and C; at the edges its clamped copies
    read the last row (column group) again instead of zero-filling: more requests and sectors, never fewer."""
    for size in [(1024, 1024, 1024), (256, 256, 1000)]:
        a, b = simulate(cfg(10), *size), simulate(cfg(11), *size)
        assert dataclasses.astuple(a)[1:] == dataclasses.astuple(b)[1:], size
    for size in [(1000, 1004, 77), (130, 80, 33), (130, 77, 33)]:
        a, b = simulate(cfg(10), *size), simulate(cfg(11), *size)
        assert b.gld_requests >= a.gld_requests and b.gld_sectors > a.gld_sectors, size
        assert b.ffma_thread == a.ffma_thread and b.gst_requests == a.gst_requests
    g = geometry(cfg(11))
    assert g.clamped_copies and g.b_element_fallback and not geometry(cfg(10)).clamped_copies


@pytest.mark.parametrize("kw, lim", [
    (dict(SPREAD=0), "positive"),
    (dict(SPREAD=17), "copy_spread"),
    (dict(BM=128, BN=32, WM=32, WN=32, WNITER=1, BK=8), "uniform_copies"),   # 64 float4s of B, 128 threads
])
def test_steady_loop_rules(kw, lim) -> None:
    c = cfg(11, **kw)
    with pytest.raises(ConfigError) as ei:
        validate(c)
    assert ei.value.limit == lim


def test_split_k_counts() -> None:
    one, two = simulate(CLASSIC7, 512, 512, 16384), simulate(cfg(SPLITK=4), 512, 512, 16384)
    assert one.ffma_thread == two.ffma_thread == 512 * 512 * 16384
    # every slice adds all of C, with scalar atomics (4 instructions per float4 store)
    assert two.global_store_bytes_requested == 4 * one.global_store_bytes_requested
    assert two.gst_requests == 4 * 4 * one.gst_requests
    T = 16384 // 16
    assert one.bar_warp == 16 * 8 * (T + 1) and two.bar_warp == 16 * 8 * 4 * (T // 4 + 1)
    # K shorter than the slices: empty slices add nothing
    small = simulate(cfg(SPLITK=16), 256, 256, 40)           # 3 K tiles: 3 non-empty slices
    assert small.global_store_bytes_requested == 3 * simulate(CLASSIC7, 256, 256, 40).global_store_bytes_requested


def test_sweeps_cover_the_brief() -> None:
    tasks, dropped = sw.load_sweep("warptile").tasks(H200)
    assert not dropped
    sizes = {t.size for t in tasks}
    assert sizes == {(1024,) * 3, (2048,) * 3, (4096,) * 3, (8192,) * 3, (4096, 16384, 1024), (16384, 2048, 2048)}
    for s in sizes:                                               # cuBLAS in every size
        assert any(t.config.rung == 0 and t.size == s for t in tasks)
    cfgs = {t.config for t in tasks if t.config.rung}
    assert 40 <= len(cfgs) <= 80 and {c.rung for c in cfgs} == {7, 8}
    assert {c.p["SWZ"] for c in cfgs} == {1, 8} and {c.p["STAGES"] for c in cfgs if c.rung == 8} == {2, 3, 4}
    st, dr = sw.load_sweep("splitk").tasks(H200)
    assert not dr
    assert {t.config.p["SPLITK"] for t in st if t.config.rung and t.size == (512, 512, 16384)} == {1, 2, 4, 8, 16}
    assert any(t.config.rung == 0 and t.size == (512, 512, 16384) for t in st)
    assert any(t.config.rung and t.config.p["SPLITK"] == 2 and t.size == (1024,) * 3 for t in st)


@pytest.mark.parametrize("cols", [1, 2, 4, 8, 16, 32])
def test_warp_lane_layout_is_a_bijection(cols) -> None:
    lane = np.arange(32)
    tr, tc = warp_lane_layout(lane, cols)
    assert sorted(zip(tr.tolist(), tc.tolist())) == [(r, c) for r in range(32 // cols) for c in range(cols)]
    if 2 <= cols <= 16:                       # every quad covers 2 rows x 2 columns
        for q in range(8):
            sl = slice(4 * q, 4 * q + 4)
            assert len(set(tr[sl].tolist())) == 2 and len(set(tc[sl].tolist())) == 2


def test_interleaved_lanes_need_two_wavefronts_per_fragment_load() -> None:
    """With 4 lanes per quad reading 4 different B float4s, each quarter-warp would need its own wavefront
    (the H200 probe rule); interleaved, a 128-bit fragment load costs 2 wavefronts (one per half-warp)."""
    for key in ("07:BM=128,BN=128,BK=16,WM=64,WN=32,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1",
                "08:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=4,TM=8,TN=4,SWZ=1,SPLITK=1,STAGES=3",
                "07:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=8,TN=8,SWZ=1,SPLITK=1"):
        b = simulate(KernelConfig.parse(key), 256, 256, 64).per_block_iteration
        assert b.lds_wavefronts == 2 * b.lds_instructions and b.lds_bank_conflicts == 0, key
