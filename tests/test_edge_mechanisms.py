"""The timing model's mechanisms for edge shapes (issue 8): partial blocks of kernels whose outside threads
return, the L1 data stage's bank conflicts by leading-dimension residue, the DRAM share of a barrier loop's
waits. Each test checks the mechanism's own numbers (hand-countable), not a fit."""
from __future__ import annotations

import numpy as np
import pytest

from model.counts import _lanes, exit_block_counts, exit_pattern, global_load_wavefronts
from model.registry import KernelConfig, geometry, n_blocks
from model.simulate import shared_wavefronts
from model.spec import load_gpu
from model.timing import predict_rows

H200 = load_gpu("h200")
UNCOALESCED = KernelConfig.parse("naive:BX=32,BY=32,COALESCED=0")
COALESCED = KernelConfig.parse("naive:BX=32,BY=32,COALESCED=1")


def _tile_reference(threads: int, rows: int, row_len: int, vec: int, res: int) -> int:
    """Every warp of the tile load enumerated (the simulator's bank rule), at a leading dimension of
    residue ``res`` mod 32 words; a float4 load off the vector path (``res`` not a multiple of 4) as 4
    scalar loads."""
    ld = 64 * 32 + res
    tid, real, _ = _lanes(threads)
    n = rows * row_len
    i = tid[None, :] + threads * np.arange(-(-n // threads), dtype=np.int64)[:, None]
    act = (real[None, :] & (i < n)).reshape(-1, 32)
    off = ((i // row_len) * ld + vec * (i % row_len)).reshape(-1, 32)
    keep = act.any(axis=1)
    if vec == 4 and res % 4:
        return int(sum(shared_wavefronts(off[keep] + e, act[keep], 1, "ld")[0].sum() for e in range(4)))
    return int(shared_wavefronts(off[keep], act[keep], vec, "ld")[0].sum())


@pytest.mark.parametrize("spec", ["smem:BM=8,BN=8,BK=8", "reg2d", "reg2d:BM=64,BN=128,BK=16,TM=8,TN=4",
                                  "float4", "dbuf:BM=64,BN=64,BK=16,TM=8,TN=8"])
def test_tile_load_wavefronts_equal_every_warp_enumerated(spec) -> None:
    cfg = KernelConfig.parse(spec)
    g = geometry(cfg)
    t = global_load_wavefronts(cfg)
    vec = 1 if cfg.rung in (2, 3, 4) else 4
    for q in (0, 1, 4, 8, 16, 31):
        assert t[0, q] == _tile_reference(g.threads, g.BM, g.BK // vec, vec, q)
        assert t[1, q] == _tile_reference(g.threads, g.BK, g.BN // vec, vec, q)


def test_a_column_walk_conflicts_by_the_residue_of_k() -> None:
    # 32 warps, each lane one row of A: K = 0 mod 32 puts the 32 rows in one bank (32 wavefronts a
    # load), an odd K in 32 banks (1), K = 16 mod 32 in 2 banks (16), K = 8 mod 32 in 4 (8).
    t = global_load_wavefronts(UNCOALESCED)
    assert (t[0, 0], t[0, 1], t[0, 16], t[0, 8]) == (32 * 32, 32, 32 * 16, 32 * 8)
    assert np.all(t[1] == t[1, 0]) and t[1, 0] == 32        # B: one column per warp, a broadcast


def test_warp_tiled_a_loads_vector_at_k_multiple_of_4_scalar_otherwise() -> None:
    # Rung 07's A tile: float4s in lane pairs (simulate._warp_tiled): h = i >> 1, row h % BM, column
    # 4 (2 (h // BM) + (i & 1)); LDG.128 when K % 4 == 0, else 4 scalar loads per float4.
    cfg = KernelConfig.parse("warptile")
    g = geometry(cfg)
    t = global_load_wavefronts(cfg)
    tid, real, _ = _lanes(g.threads)
    n4 = g.BM * g.BK // 4
    i = tid[None, :] + g.threads * np.arange(-(-n4 // g.threads), dtype=np.int64)[:, None]
    act = (real[None, :] & (i < n4)).reshape(-1, 32)
    h = i >> 1
    row, col = (h % g.BM).reshape(-1, 32), (4 * (2 * (h // g.BM) + (i & 1))).reshape(-1, 32)
    for q in (0, 8, 1, 6):
        ld = 64 * 32 + q
        if q % 4 == 0:
            want = shared_wavefronts(row * ld + col, act, 4, "ld")[0].sum()
        else:
            want = sum(shared_wavefronts(row * ld + col + e, act, 1, "ld")[0].sum() for e in range(4))
        assert t[0, q] == want, q


def test_partial_blocks_of_a_kernel_whose_outside_threads_return() -> None:
    th, bx, co = exit_pattern(UNCOALESCED)
    assert (th, bx, co) == (1024, 32, 0)
    assert exit_block_counts(th, bx, co, 32, 32) == (32, 32 * 33, 64)   # interior: 33 lines a warp
    assert exit_block_counts(th, bx, co, 32, 1) == (1, 33, 2)           # N = 1: one warp of 32
    assert exit_block_counts(th, bx, co, 1, 32) == (32, 64, 64)         # M = 1: one lane a warp, 2 lines
    assert exit_pattern(KernelConfig.parse("reg2d")) is None            # tile loads, barriers: all take part


def test_a_skinny_launch_of_the_naive_kernel_runs_only_its_active_warps() -> None:
    # Measured (edge_dev.jsonl): 4096 x 1 x 4096 in 286 us, 4096 x 32 x 4096 in 2215 us: at N = 1 one warp
    # of each block runs. The model: much faster than the 32-column launch, not the same time.
    t = predict_rows(H200, [UNCOALESCED] * 2, [(4096, 1, 4096), (4096, 32, 4096)])["time_s"]
    assert t[0] < 0.3 * t[1]


def test_a_barrier_loop_waits_for_dram_when_its_wave_touches_a_tile_first() -> None:
    # The blocks of a wave walk K in step: a tile the wave reads first (or again after the L2 lost it) comes from
    # DRAM once and every block sharing it waits. At M = 1 B streams (every tile read once); at 4096^3 with 128 x 128
    # tiles a wave re-reads all 64 MB of B, which the L2 (30 MB a partition) did not keep: both wait DRAM's latency
    # every iteration. At 2048^3 the second wave finds B (16 MB) in L2: B's share falls to about 0.7.
    from model.timing import _wave_walks, l2_reuse_bytes
    cap = l2_reuse_bytes(H200)
    share = {s: _wave_walks([s[0]], [s[1]], [s[2]], [128], [128], [132], cap)[2:] for s in
             ((1, 4096, 4096), (4096, 4096, 4096), (2048, 2048, 2048))}
    assert float(share[(1, 4096, 4096)][1][0]) == pytest.approx(1.0)
    assert float(share[(4096, 4096, 4096)][0][0]) == pytest.approx(1.0)
    assert float(share[(4096, 4096, 4096)][1][0]) == pytest.approx(1.0)
    assert 0.6 < float(share[(2048, 2048, 2048)][1][0]) < 0.8
    cfg = KernelConfig.parse("reg2d")
    r = predict_rows(H200, [cfg] * 3, [(1, 4096, 4096), (4096, 4096, 4096), (2048, 2048, 2048)])
    lg = r["latency_cycles"]
    t = H200.timing
    assert lg[0] == pytest.approx(lg[1]) and lg[1] > lg[2] + 0.03 * (t["dram_latency_cycles"] - t["l2_latency_cycles"])


def test_a_tiles_ask_dram_once_per_64_byte_fetch() -> None:
    # The H200's L2 fills 64 bytes from DRAM (experiments/dram_fetch.py): a tile reading 4 BK bytes of each row of A
    # per iteration asks DRAM every 64 / (4 BK) iterations. With one latency per iteration the wait is DRAM's when
    # either operand's is: B (a new row each iteration) still sets it; a loop that waits for A and B in turn
    # (rung 05's trace: two latencies in series) waits DRAM for A only half the time at BK = 8, not at BK = 16.
    import model.facts as mf
    cfg8 = KernelConfig.parse("05:BM=128,BN=128,BK=8,TM=8,TN=4")
    real = dict(mf.DRAM_FETCH_BYTES)
    lg = {}
    try:
        for fetch in (32, 64):
            mf.DRAM_FETCH_BYTES["sm_90"] = fetch
            lg[fetch] = float(predict_rows(H200, [cfg8], [(4096, 4096, 4096)])["latency_cycles"][0])
    finally:
        mf.DRAM_FETCH_BYTES.clear()
        mf.DRAM_FETCH_BYTES.update(real)
    t = H200.timing
    assert lg[32] - lg[64] == pytest.approx(0.25 * (t["dram_latency_cycles"] - t["l2_latency_cycles"]), rel=0.02)


# --- the order of the asynchronous copies, and split-K's reductions (eighth session) ---------------------------------

CLUSTERED = KernelConfig.parse("11:BM=128,BN=128,BK=16,WM=64,WN=64,WNITER=2,TM=8,TN=4,SWZ=1,SPLITK=1,STAGES=3,SPREAD=1")


def _evaluate(cfg, size, **changes):
    from dataclasses import replace
    from model import timing
    (pa,), _ = timing._arrays_for(H200, [cfg], None)
    pa = replace(pa, **{k: np.asarray(v, dtype=np.float64) for k, v in changes.items()})
    return timing.evaluate(H200, pa, *size)


def test_a_cluster_of_copies_is_charged_its_simulated_queue_and_nothing_else_is() -> None:
    from model.facts import facts_for
    f = facts_for(CLUSTERED, "sm_90")
    q_sim, q_issue, q_pipe = f.queue_cycles
    assert f.per_iteration_all_widths("LDGSTS") > 0 and q_sim > max(q_issue, q_pipe)
    size = (4096, 4096, 4096)
    with_queue = float(_evaluate(CLUSTERED, size)["time_s"][0])
    without = float(_evaluate(CLUSTERED, size, queue=np.zeros((1, 3)))["time_s"][0])
    no_copies = float(_evaluate(CLUSTERED, size, copies=np.zeros(1))["time_s"][0])
    assert with_queue > 1.01 * without          # the simulated queue costs this loop over a percent at 4096^3
    assert no_copies == pytest.approx(without)  # a loop without copies is not charged the order


def test_split_k_reductions_run_at_the_measured_reduction_rate() -> None:
    from dataclasses import replace
    from model import timing
    cfg = KernelConfig.parse("11:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=3,SPREAD=8")
    size = (512, 512, 16384)
    r = timing.rates(H200)
    assert r.l2_reduction_bytes_per_s == pytest.approx(3.358e12, rel=1e-3)     # gpus/h200.toml, microbenchmarked
    base = float(predict_rows(H200, [cfg], [size])["time_s"][0])
    (pa,), _ = timing._arrays_for(H200, [cfg], None)
    sectors = float(pa.store_sectors[0]) * n_blocks(cfg, *size[:2])     # C's sector requests: every block's
    slower = replace(r, l2_reduction_bytes_per_s=r.l2_reduction_bytes_per_s / 2)
    import unittest.mock as um
    with um.patch.object(timing, "rates", lambda gpu: slower):
        t = float(predict_rows(H200, [cfg], [size])["time_s"][0])
    # half the rate: the round's epilogue floor (all blocks reduce at once) doubles, at least 32 B x sectors / rate
    assert t - base >= 0.9 * 32 * sectors / r.l2_reduction_bytes_per_s
    one = KernelConfig.parse(cfg.key.replace("SPLITK=16", "SPLITK=1"))
    with um.patch.object(timing, "rates", lambda gpu: slower):
        t1 = float(predict_rows(H200, [one], [(512, 512, 4096)])["time_s"][0])
    assert t1 == pytest.approx(float(predict_rows(H200, [one], [(512, 512, 4096)])["time_s"][0]))  # no split-K: unused


VRED16 = "12:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=3,SPREAD=8"


def test_split_k_reductions_into_a_c_beyond_the_l2_miss_on_every_slice() -> None:
    # K = 28: four K tiles, four live slices, each reducing all of C. C of 40 MB fits in the H200's 60 MiB L2; C of
    # 94 MB does not: every slice reads C from DRAM and writes it back (ncu: DRAM reads 4.0 x C, writes 3.7 x C), at
    # the measured rate of reductions beyond the L2 (1.41 TB/s).
    from model import timing
    cfg = KernelConfig.parse(VRED16)
    r = timing.rates(H200)
    assert r.dram_reduction_bytes_per_s == pytest.approx(1.411e12, rel=1e-3)    # gpus/h200.toml, microbenchmarked
    fits, beyond = (3072, 3264, 28), (5376, 4352, 28)
    res = predict_rows(H200, [cfg, cfg], [fits, beyond])
    c = [4.0 * m * n for m, n, _ in (fits, beyond)]
    dram = [float(x) for x in np.ravel(res["dram_bytes"])]
    assert dram[0] < 2.0 * c[0]                                   # C read once at most, written once
    assert dram[1] == pytest.approx(8.0 * c[1], rel=0.05)         # four slices, each a read and a write of C
    t_dram = float(np.ravel(res["t_dram"])[1])
    assert t_dram >= 4.0 * c[1] / r.dram_reduction_bytes_per_s
    assert int(np.ravel(res["bound"])[1]) == 5                     # DRAM binds
    # per byte of C, the launch beyond the L2 takes over 1.4 x as long as the one that fits (measured: 1.4-1.8)
    per_c = [float(t) / x for t, x in zip(np.ravel(res["time_s"]), c)]
    assert per_c[1] > 1.4 * per_c[0]


def test_the_share_of_reductions_that_miss_ramps_over_the_measured_range() -> None:
    from model.facts import L2_REDUCTION_RAMP
    x0, x1 = L2_REDUCTION_RAMP["sm_90"]
    assert 0.9 < x0 < 1.0 < x1 < 1.1
    cfg = KernelConfig.parse(VRED16)
    l2 = H200.l2_bytes
    # C near the L2's size, K = 28 (slices' panels small beside C): time per byte of C grows with the miss share
    sizes = [(int(f * l2 / 4 / 4096) // 128 * 128, 4096, 28) for f in (0.90, x0 + 0.3 * (x1 - x0), x0 + 0.7 * (x1 - x0), 1.15)]
    t = np.ravel(predict_rows(H200, [cfg] * len(sizes), sizes)["time_s"])
    per_c = [float(ti) / (m * n) for ti, (m, n, _) in zip(t, sizes)]
    assert per_c[0] < per_c[1] < per_c[2] < per_c[3]


def test_split_k_reductions_are_timed_once() -> None:
    # the round's epilogue (the SMs wait for the L2 to reduce their tiles) carries the reductions; the L2 pipe beside
    # the SMs carries only the tile loads, so a launch that only reduces is not charged the same L2 work twice
    from model import timing
    cfg = KernelConfig.parse(VRED16)
    res = predict_rows(H200, [cfg], [(3072, 3264, 28)])
    (pa,), _ = timing._arrays_for(H200, [cfg], None)
    r = timing.rates(H200)
    reduced = 32.0 * float(pa.store_sectors[0]) * float(np.ravel(res["blocks"])[0])
    assert float(np.ravel(res["t_l2"])[0]) < 0.5 * reduced / r.l2_reduction_bytes_per_s
    assert float(np.ravel(res["t_sm"])[0]) >= 0.9 * reduced / r.l2_reduction_bytes_per_s


def test_a_gpu_without_a_measured_reduction_rate_reduces_at_half_its_l2_bandwidth() -> None:
    from model import timing
    r = timing.rates(load_gpu("rtxa6000"))
    assert r.l2_reduction_bytes_per_s == pytest.approx(r.l2_bytes_per_s / 2)
    assert any("reductions" in n for n in r.notes)
    # beyond the L2: every sector read and written back, half the DRAM copy bandwidth
    assert r.dram_reduction_bytes_per_s == pytest.approx(load_gpu("rtxa6000").timing["dram_copy_bandwidth_bytes_per_s"] / 2)
    assert any("beyond the L2" in n for n in r.notes)


def test_the_busiest_sm_sets_the_time_of_a_launch_with_edge_blocks() -> None:
    # The uncoalesced 32x32 naive kernel at 36 x 3584 x 3584: 2 x 112 blocks (launch order: blockIdx.x along M), one
    # block row full, one with 4 of its 32 rows inside C. Block b goes to SM b mod 132: blocks b and b + 132 are of the
    # same row, so half the SMs run two full blocks, and those set the time (measured in edge_val12: 77 % slower than
    # the launch's mean block predicted). The busiest SM's mean block is the full block.
    from model.timing import _busiest_sm_block
    counts = np.array([[32, 32 * 33, 64], [32, 32 * 5, 64], [32, 32 * 33, 64], [32, 32 * 5, 64]], dtype=float)
    busy = _busiest_sm_block(counts, 2, 112, 0, 132)
    assert busy.tolist() == counts[0].tolist()
    # coalesced layout of the same grid (blockIdx.x along N): every SM gets blocks of both rows in turn
    # (112 columns a row, 132 SMs): the busiest still runs a full one, and the mean lies between the two classes
    mixed = _busiest_sm_block(counts, 2, 112, 1, 132)
    assert counts[1][1] < mixed[1] <= counts[0][1]
    # one block per SM: the slowest block
    assert _busiest_sm_block(counts, 2, 3, 1, 132).tolist() == counts[0].tolist()
    cfg = KernelConfig.parse("naive:BX=32,BY=32,COALESCED=0")
    t = predict_rows(H200, [cfg] * 2, [(36, 3584, 3584), (64, 3584, 3584)])["time_s"]
    assert t[0] > 0.9 * t[1]            # as slow as two full block rows, not the mean of a full and a near-empty one


# --- the C stores of edge blocks (sixteenth session) -------------------------------------------------------------------

VRED = KernelConfig.parse("vred")


def test_an_edge_block_stores_only_its_elements_inside_c() -> None:
    # rung 12's classic 128x128 tile: a warp's store of 16 bytes a lane touches 8 lines (the lanes' rows) and 8 sectors;
    # 4-byte stores (C's rows not 16-byte aligned) four times as many. With 3 of its 128 columns inside C only the lanes
    # holding columns 0-2 store, each element alone in its line and sector at the probe's row stride: 128 rows x 3.
    from model.simulate import block_store_counts_partial, block_store_lines, block_store_sectors
    bm, bn = geometry(VRED).BM, geometry(VRED).BN
    assert block_store_counts_partial(VRED, bm, bn, False) == (block_store_lines(VRED), block_store_sectors(VRED))
    assert block_store_counts_partial(VRED, bm, bn, True) == (block_store_lines(VRED, True),
                                                               block_store_sectors(VRED, True))
    assert block_store_counts_partial(VRED, bm, 3, True) == (128 * 3, 128 * 3)
    # rows: 5 of 128 rows store 5/128 of the lines and sectors
    lines, sectors = block_store_counts_partial(VRED, 5, bn, False)
    assert (lines * 128, sectors * 128) == (5 * block_store_lines(VRED), 5 * block_store_sectors(VRED))
    assert block_store_counts_partial(VRED, 0, bn, False) == (0, 0)


def test_a_skinny_launch_charges_the_store_path_of_its_edge_blocks() -> None:
    # At N = 3 every block of rung 12 is an edge block: the SM's store path takes 0.976 a line and 1.017 a sector
    # of 384 4-byte stores (model.facts.STORE_PATH), not of the whole tile's 16,384 elements.
    from model.facts import STORE_PATH
    line, sector = STORE_PATH["sm_90"]
    r = _evaluate(VRED, (2048, 3, 1088))
    assert float(r["store_path_cycles"][0]) == pytest.approx(384 * (line + sector), rel=1e-9)
    # a size whose tiles are all whole keeps the interior block's count
    from model.simulate import block_store_lines, block_store_sectors
    whole = _evaluate(VRED, (2048, 2048, 1088))
    assert float(whole["store_path_cycles"][0]) == pytest.approx(
        block_store_lines(VRED) * line + block_store_sectors(VRED) * sector, rel=1e-9)
    # and the prediction at N = 3 (edge_val25: 31.0 us measured) is far below N = 127's, whose 127 columns all store
    # four bytes at a time (the whole tile's 4-byte epilogue, less a column)
    t = predict_rows(H200, [VRED] * 2, [(2112, 3, 1088), (2112, 127, 1088)])["time_s"]
    assert t[0] < 0.75 * t[1]


def test_clamped_four_byte_copies_take_a_wavefront_per_lane_that_reads_a_shared_word() -> None:
    # Rung 12's classic tile at N = 14 (C's rows not 16-byte aligned: B copied 4 bytes at a time, columns beyond N
    # clamped to N - 1): of the 32 copies of a K tile's 8 rows of B (128 columns, 32 lanes each), 24 have all 32 lanes
    # on column 13 (31 wavefronts beyond the broadcast's one) and 8 have 18 of their lanes there besides 14 distinct
    # words (18 more): 888. Nsight Compute measured about 900 more a block and K tile than at N = 16
    # (logs/l1break-2026-12-02). 16-byte copies (N = 16), interior blocks and unclamped kernels take none.
    from model.simulate import copy_duplicate_wavefronts
    assert copy_duplicate_wavefronts(VRED, 0, 14, 128, 14) == 24 * 31 + 8 * 18
    assert copy_duplicate_wavefronts(VRED, 0, 16, 128, 16) == 0
    assert copy_duplicate_wavefronts(VRED, 0, 15, 128, 128) == 0
    assert copy_duplicate_wavefronts(KernelConfig.parse("lean"), 0, 14, 128, 14) == 0     # rung 10 zero-fills
    # the timing model adds them to the L1 data stage of the blocks that have them: at N = 14 every block does
    from model import timing
    (pa,), _ = timing._arrays_for(H200, [VRED], None)
    extra = timing._edge_copies(pa, 6144, 14, 4096, np.array([48]), np.array([1]))
    assert float(extra[0]) == 888.0
    assert float(timing._edge_copies(pa, 6144, 128, 4096, np.array([48]), np.array([1]))[0]) == 0.0
    t = predict_rows(H200, [VRED] * 2, [(6144, 14, 4096), (6144, 16, 4096)])["time_s"]
    assert t[0] > 1.05 * t[1]
