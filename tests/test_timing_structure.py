"""The timing model's structure (issue 8): no rule keyed on the rung, traffic terms that a planted bug
would break, the loop trace of the compiler facts, forced residency, other GPUs' rates, the published
ladder's scorer. No GPU needed."""
from __future__ import annotations

import math
import ast
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from model.registry import KernelConfig, classic_configs
from model.spec import load_gpu
from model.timing import (_arrays_for, _wave_walk_one, evaluate, l2_reuse_bytes, predict, predict_rows, profile,
                          rates)

ROOT = Path(__file__).resolve().parent.parent
H200 = load_gpu("h200")


# --------------------------------------------------------------------------------------------------
# No rule keyed on the rung
# --------------------------------------------------------------------------------------------------


def test_timing_module_has_no_rung_keyed_formula() -> None:
    src = (ROOT / "model" / "timing.py").read_text()
    tree = ast.parse(src)
    for node in ast.walk(tree):
        # no comparison of anything named 'rung' (cfg.rung == 5, rung == 1, rung in (...))
        if isinstance(node, ast.Compare):
            names = {n.attr if isinstance(n, ast.Attribute) else getattr(n, "id", None)
                     for n in ast.walk(node)}
            assert "rung" not in names, f"line {node.lineno}: a comparison involving the rung"
    from model.registry import RUNGS
    code = "\n".join(line.split("#")[0] for line in src.splitlines())
    for r in RUNGS.values():
        if r.number == 0:
            continue
        assert not re.search(rf"['\"]{re.escape(r.slug)}['\"]", code), f"rung name {r.slug!r} in timing.py"


# --------------------------------------------------------------------------------------------------
# Traffic: planted bugs
# --------------------------------------------------------------------------------------------------


def _ev(cfg, M, N, K, gpu=H200, **kw):
    (pa,), _ = _arrays_for(gpu, [cfg], None)
    out = evaluate(gpu, pa, np.array([M]), np.array([N]), np.array([K]), **kw)
    return {k: (np.asarray(v)[..., 0] if np.ndim(v) else v) for k, v in out.items()}


def test_dram_bytes_are_a_and_b_once_when_they_fit_in_l2() -> None:
    # M != N so that swapping the A (M K) and B (K N) terms changes the number; A + B + C fit in the L2's
    # reuse capacity (half of the H200's 60 MB: two partitions), so nothing is re-read or written back
    cfg = KernelConfig.parse("reg2d")
    M, N, K = 1024, 3072, 512
    assert 4.0 * (M * K + K * N + M * N) < l2_reuse_bytes(H200) == H200.l2_bytes / 2
    r = _ev(cfg, M, N, K)
    assert float(r["dram_bytes"]) == pytest.approx(4.0 * (M * K + K * N), rel=1e-12)


def test_c_is_written_back_when_the_waves_after_it_overflow_the_l2() -> None:
    # 8192^3, one 128x128 block per SM: 4096 blocks in 32 waves; at the end the L2 keeps about the last
    # wave's C; the C of the earlier waves was evicted during the kernel and written to DRAM
    cfg = KernelConfig.parse("reg2d")
    M = 8192
    ra, rb, writes, _, _ = _wave_walk_one(M, M, M, 128, 128, 132, l2_reuse_bytes(H200))
    reads = ra + rb
    c = 4.0 * M * M
    assert reads >= 4.0 * 2 * M * M
    assert c * (1 - 1.5 / 32) < writes < c * (1 - 0.5 / 32)
    # one wave whose A + B + C overflow the L2: its own C (written last) stays, nothing is written
    ra1, rb1, writes1, _, _ = _wave_walk_one(2048, 2048, 2048, 128, 128, 264, l2_reuse_bytes(H200))
    reads1 = ra1 + rb1
    assert writes1 == 0.0 and reads1 == 4.0 * 2 * 2048 * 2048
    r = _ev(cfg, M, M, M)
    assert float(r["dram_bytes"]) == pytest.approx(reads + writes, rel=1e-12)


def test_dram_rereads_count_the_previous_waves_c_in_their_reuse_distance() -> None:
    # 2048^3, 128x128 tiles, one block per SM: two waves. The first streams 9 A panels + all 16 B panels
    # (26.2 MB) and writes 8.65 MB of C; the reuse distance of B for the second wave is spread over
    # [26.2, 34.9] MB against 31.5 MB: about 40 % of B is read again. Without C in the distance, none.
    cap = l2_reuse_bytes(H200)
    ra, rb = _wave_walk_one(2048, 2048, 2048, 128, 128, 132, cap)[:2]
    b = 4.0 * 2048 * 2048
    assert 0.3 * b < ra + rb - 2 * b < 0.5 * b
    assert ra - b < 0.05 * b and 0.3 * b < rb - b < 0.5 * b    # mostly B (A: the row the waves share)
    assert sum(_wave_walk_one(2048, 2048, 2048, 128, 128, 132, float(H200.l2_bytes))[:2]) == 2 * b


NCU_FILES = [ROOT / "experiments" / "results" / "h200" / f for f in ("ncu.jsonl", "ncu_07_08.jsonl")]


def _ncu_rows():
    import json
    for f in NCU_FILES:
        for line in f.read_text().splitlines():
            d = json.loads(line)
            if d.get("status") == "ok" and d["rung"] != 0:
                yield d


def test_dram_and_l2_bytes_agree_with_ncu_on_every_classic_config() -> None:
    # Issue 8's acceptance: ncu on the H200 (caches flushed before the replay), every classic config at
    # 2048^3: DRAM bytes (read + write) within 10 %, L2 bytes (lts__t_bytes) within the 15 % where the model
    # holds it now. Three LDG kernels read 15 % fewer L2 sectors than their L1s miss (as do the one-block-
    # per-SM kernels, where no L1 sharing is possible: requests merged before the L2's tag stage, not
    # modelled); they are held at 18 % so that a regression still fails
    rows = list(_ncu_rows())
    assert len(rows) >= 13
    dram_err, l2_err = {}, {}
    for d in rows:
        cfg = KernelConfig.parse(d["config_key"])
        (pa,), _ = _arrays_for(H200, [cfg], [d["metrics"].get("launch__registers_per_thread")])
        ev = evaluate(H200, pa, np.array([d["M"]]), np.array([d["N"]]), np.array([d["K"]]))
        m = d["metrics"]
        dram = m["dram__bytes_read.sum"] + m["dram__bytes_write.sum"]
        dram_err[d["config_key"]] = float(ev["dram_bytes"][0]) / dram - 1
        l2_err[d["config_key"]] = float(ev["l2_bytes"][0]) / m["lts__t_bytes.sum"] - 1
    bad = {k: f"{v:+.1%}" for k, v in dram_err.items() if abs(v) > 0.10}
    assert not bad, f"DRAM bytes off by more than 10 % against ncu: {bad}"
    l2_open = {"02:BM=32,BN=32,BK=32", "02:BM=16,BN=16,BK=16", "03:BM=64,BN=64,BK=8,TM=8"}
    bad = {k: f"{v:+.1%}" for k, v in l2_err.items() if abs(v) > (0.18 if k in l2_open else 0.15)}
    assert not bad, f"L2 bytes off against ncu: {bad}"


def test_dram_rereads_appear_when_a_wave_streams_more_than_the_l2() -> None:
    cfg = KernelConfig.parse("reg2d")
    small_l2 = replace(H200, l2_bytes=4 * 2**20)
    r_big, r_small = _ev(cfg, 8192, 8192, 8192), _ev(cfg, 8192, 8192, 8192, gpu=small_l2)
    unique = 4.0 * 2 * 8192 * 8192
    assert float(r_big["dram_bytes"]) < float(r_small["dram_bytes"])
    assert float(r_small["dram_bytes"]) > 1.5 * unique


def test_l2_bytes_hold_the_tile_loads_and_cs_stores() -> None:
    cfg = KernelConfig.parse("reg2d")
    M, N, K = 2048, 1024, 512
    r = _ev(cfg, M, N, K)
    prof = profile(cfg, H200.arch)
    gm, gn = M // 128, N // 128
    stores = 32.0 * prof.store_sectors * gm * gn
    assert prof.store_sectors >= 128 * 128 * 4 / 32          # C's tile, at least once
    loads = 4.0 * (M * K * gn + K * N * gm)                   # one block per SM: no L1 sharing
    assert int(r["blocks_per_sm"]) == 1
    assert float(r["l2_bytes"]) == pytest.approx(loads + stores, rel=1e-12)


def test_a_partial_k_tile_costs_a_whole_iteration() -> None:
    # ceil(K / BK) iterations: K = BK + 1 runs two, the same as 2 BK (flooring would give one). Compared
    # on the issue time (iterations x instructions): the L1 part of an iteration also depends on K's
    # residue mod 32 (the data stage's bank conflicts of A's rows), which differs between 65 and 72.
    cfg = KernelConfig.parse("reg2d")
    t64, t65, t72 = (float(_ev(cfg, 1024, 1024, k)["limits"][0]) for k in (64, 65, 72))
    assert t65 == pytest.approx(t72) and t65 > t64 * 1.05


# --------------------------------------------------------------------------------------------------
# Structure from the SASS
# --------------------------------------------------------------------------------------------------


def test_the_loop_trace_tells_serial_hidden_and_batched_loads_apart() -> None:
    # float4 rung: each LDG.128 is stored to shared memory before the next is issued -> 2 latencies per
    # tile; the predicated rung 04 issues all loads first -> 1; double buffering hides it behind compute.
    chain = {r: profile(KernelConfig.parse(k), "sm_90").latency_chain for r, k in
             ((4, "04:BM=128,BN=128,BK=8,TM=8,TN=8"), (5, "05:BM=128,BN=128,BK=8,TM=8,TN=8"),
              (6, "06:BM=128,BN=128,BK=8,TM=8,TN=8"))}
    assert chain[5] == pytest.approx(2.0) and chain[4] == pytest.approx(1.0)
    p6 = profile(KernelConfig.parse("06:BM=128,BN=128,BK=8,TM=8,TN=8"), "sm_90")
    t = np.asarray(p6.trace)[:, 0]
    assert t[3] == pytest.approx(t[0], rel=0.01), "a 300-cycle latency hides behind one tile of compute"


def test_warp_trace_semantics() -> None:
    from tools.compiler_facts import Instr, warp_trace
    ld = Instr(0, None, "LDG.E", "R4, desc[UR4][R2.64]", None)
    use = Instr(16, None, "FFMA", "R6, R4, R4, R6", None)
    ld2 = Instr(32, None, "LDG.E", "R8, desc[UR4][R2.64+0x4]", None)
    use2 = Instr(48, None, "FFMA", "R6, R8, R8, R6", None)
    serial = warp_trace([ld, use, ld2, use2], 100, 20)["ends"][0]
    batched = warp_trace([ld, ld2, use, use2], 100, 20)["ends"][0]
    assert serial >= 200 and batched < 110


# --------------------------------------------------------------------------------------------------
# Residency, other GPUs, the published scorer
# --------------------------------------------------------------------------------------------------


def test_fewer_resident_blocks_is_never_faster_and_latency_shows() -> None:
    cfg = KernelConfig.parse("naive:BX=16,BY=16,COALESCED=1")
    t = [predict(H200, cfg, 2048, 2048, 2048, max_blocks_per_sm=b).time_s for b in (1, 2, 4, 8)]
    assert all(a >= b_ * (1 - 1e-9) for a, b_ in zip(t, t[1:]))
    assert t[0] > 2 * t[-1], "one 8-warp block per SM cannot hide the latency that eight can"


def test_naive_32x32_at_one_block_per_sm_is_about_as_fast_as_16x16_at_six() -> None:
    # The seed's case, run on the H200 at a 1536-thread GPU's residency (forced-residency.md): one
    # 1024-thread block (32 warps) per SM against six 256-thread blocks (48 warps). Measured
    # (experiments/results/h200/residency.jsonl, 2048^3): 32x32 at 1 block 5.59 TFLOP/s, 16x16 at 6
    # blocks 5.41 - the naive kernel's operands come from L2 (shared by every block of a wave), and
    # 32 warps hide that latency; the 16x16 warps read 3 lines per FFMA, the 32x32 warps 2. At the
    # H200's own residency (2 and 8 blocks) 32x32 is the faster one (6.5 vs 5.4 TFLOP/s).
    c16 = KernelConfig.parse("naive:BX=16,BY=16,COALESCED=1")
    c32 = KernelConfig.parse("naive:BX=32,BY=32,COALESCED=1")
    t16 = predict(H200, c16, 2048, 2048, 2048, max_blocks_per_sm=6).time_s
    t32 = predict(H200, c32, 2048, 2048, 2048, max_blocks_per_sm=1).time_s
    assert 0.85 * t16 < t32 < t16, (t32, t16)
    assert predict(H200, c32, 2048, 2048, 2048).time_s < predict(H200, c16, 2048, 2048, 2048).time_s
    # a lone 8-warp block of the naive kernel waits for L2, not for DRAM: measured 1.87 TFLOP/s
    one = predict(H200, c16, 2048, 2048, 2048, max_blocks_per_sm=1)
    assert 1.4e12 < one.flops / one.time_s < 2.4e12


def test_a_loop_without_a_barrier_waits_the_l2_latency_one_with_a_barrier_the_loaded_one() -> None:
    from model.timing import _warp_lines, _waited_latency
    r = rates(H200)
    (pa,), _ = _arrays_for(H200, [KernelConfig.parse("naive:BX=32,BY=32,COALESCED=1")], None)
    lines = _warp_lines(pa[np.array([0])], 4096, 4096, r.dram_page_bytes)
    flat = replace(r, l2_spread_cycles=0.0, dram_spread_cycles=0.0, batch_wait_per_load_cycles=0.0)
    # without a spread, operands from L2 (miss ratio 0): the L2 hit latency; all from DRAM: DRAM's
    assert _waited_latency(flat, pa, np.array([0.0]), lines)[0] == pytest.approx(r.l2_latency_cycles)
    assert _waited_latency(flat, pa, np.array([1.0]), lines)[0] == pytest.approx(r.dram_latency_cycles)
    mid = _waited_latency(flat, pa, np.array([0.01]), lines)[0]
    assert r.l2_latency_cycles < mid < r.dram_latency_cycles
    # the H200's spreads (experiments/batch_latency.py): the slowest of the warp's loads, above each level's mean
    hit, miss = (_waited_latency(r, pa, np.array([f]), lines)[0] for f in (0.0, 1.0))
    assert r.l2_latency_cycles + 10 < hit < r.l2_latency_cycles + 80
    assert r.dram_latency_cycles + 100 < miss < r.dram_latency_cycles + 400


def test_the_slowest_of_a_batch_grows_with_its_draws_and_the_spread() -> None:
    from model.timing import slowest_load_wait
    n = np.array([1.0, 2.0, 4.0, 8.0, 14.0])
    w = slowest_load_wait(290.0, 690.0, 18.0, 150.0, n, 1.0)
    assert w[0] == pytest.approx(690.0, abs=1.0) and np.all(np.diff(w) > 0)
    # the expected maximum of n standard normals: 0.564 (n = 2), 1.029 (4), 1.424 (8)
    assert (w[1:4] - 690.0) / 150.0 == pytest.approx([0.564, 1.029, 1.424], abs=0.01)
    # no spread: the slowest level, l2 + (dram - l2)(1 - (1 - p)^n)
    flat = slowest_load_wait(290.0, 690.0, 0.0, 0.0, n, 0.1)
    assert flat == pytest.approx(290.0 + 400.0 * (1 - 0.9 ** n))
    # a small spread: close to that
    assert slowest_load_wait(290.0, 690.0, 0.01, 0.01, n, 0.1) == pytest.approx(flat, rel=0.01)


def test_a_warp_gets_the_lines_of_one_dram_page_together() -> None:
    from model.simulate import lines_leading_dimension, warp_lines
    c = KernelConfig.parse("naive:BX=32,BY=32,COALESCED=1")
    # 16 k steps of the coalesced naive kernel: B's 16 rows (a line each at N = 4096) and A's one row (64 bytes)
    assert warp_lines(c, 16, 4096, 4096) == 17
    # in 1 KiB pages: B's rows 16 KiB apart each its own; at N = 16 (64-byte rows; the warp's 32 lanes reach 64 bytes
    # into the next row) 16 rows span 1152 bytes, two pages, and A's 64 bytes one
    assert warp_lines(c, 16, lines_leading_dimension(4096, 256), lines_leading_dimension(4096, 256), 1024) == 17
    assert warp_lines(c, 16, 4096, 16, 1024) == 3
    # the reduced leading dimension keeps the count
    for ld in (100, 300, 777, 4099):
        assert (warp_lines(c, 16, 64, lines_leading_dimension(ld, 256), 1024)
                == warp_lines(c, 16, 64, ld, 1024)), ld


def test_sixteen_load_store_units_halve_the_naive_kernels_rate() -> None:
    # The naive kernel issues two 4-byte loads per FFMA: on an SM with 16 LD/ST units (GA102, AD10x)
    # each takes 2 cycles of the load/store pipe instead of 1; a kernel of 128-bit shared loads, whose
    # wavefronts take longer than the issue, barely notices.
    # (the H200 without its batch-wait fields: one latency a wait, as on the GPUs the test is about)
    from types import MappingProxyType
    base = replace(H200, timing=MappingProxyType({k: v for k, v in H200.timing.items() if k not in (
        "l2_latency_spread_cycles", "dram_latency_spread_cycles", "dram_page_bytes", "batch_wait_per_load_cycles")}))
    half = replace(base, ld_st_units_per_sm=16)
    naive = KernelConfig.parse("naive:BX=32,BY=32,COALESCED=1")
    wide = KernelConfig.parse("05:BM=128,BN=128,BK=8,TM=8,TN=8")
    slow = predict(half, naive, 4096, 4096, 4096).time_s / predict(base, naive, 4096, 4096, 4096).time_s
    assert slow > 1.5
    assert predict(half, wide, 4096, 4096, 4096).time_s / predict(base, wide, 4096, 4096, 4096).time_s < 1.05
    for key in ("rtxa6000", "rtx3090", "rtx4060", "rtx4090"):
        assert rates(load_gpu(key)).lsu_cycles == 2.0, key
    for key in ("h200", "h100", "a100"):
        assert rates(load_gpu(key)).lsu_cycles == 1.0, key


def test_spills_fit_in_the_l1_left_beside_the_carveout() -> None:
    from model.timing import _l1_bytes_left
    # 8 blocks of 16 KiB (+1 KiB reserved) need 136 KiB: the driver picks the 164 KiB step, 92 KiB of L1
    left = _l1_bytes_left(H200, np.array([8]), np.array([16384.0]))[0]
    assert left == 262144 - 167936
    assert _l1_bytes_left(H200, np.array([1]), np.array([0.0]))[0] == 262144 - 8192


def test_traffic_that_does_not_bind_still_costs_time() -> None:
    # the SMs' time and the L2/DRAM times overlap as the SM's pipes do: halving the L2 bandwidth slows
    # a kernel whose L2 time is well below its SM time
    cfg = KernelConfig.parse("04:BM=64,BN=32,BK=16,TM=8,TN=4")
    slow_l2 = replace(H200, timing={**H200.timing, "l2_bandwidth_bytes_per_s": H200.timing["l2_bandwidth_bytes_per_s"] / 2})
    p = predict(H200, cfg, 4096, 4096, 4096)
    q = predict(slow_l2, cfg, 4096, 4096, 4096)
    assert q.time_s > 1.02 * p.time_s


def test_other_gpus_never_borrow_the_h200_measurements() -> None:
    h = rates(H200)
    for key in ("rtxa6000", "rtx4060", "a100"):
        r = rates(load_gpu(key))
        g = load_gpu(key)
        for f in ("l2_latency_cycles", "l1_latency_cycles", "shared_latency_cycles"):
            if f not in g.timing:
                assert getattr(r, f) != getattr(h, f), (key, f)
        if "l2_bandwidth_bytes_per_s" not in g.timing:
            assert r.l2_bytes_per_s != pytest.approx(2.5 * g.dram_bandwidth_bytes_per_s)


def test_published_scorer_reads_the_development_set() -> None:
    from analysis.published import score
    r = score()
    assert r["gpu"] == "rtxa6000" and r["n"] >= 6
    assert all(s.mapping in ("exact", "close", "none") for s in r["kernels"])
    assert r["mape"] is not None and r["mape"] < 1.0


def test_predictions_are_finite_for_every_classic_config() -> None:
    cfgs = [c for c in classic_configs() if c.rung != 0]
    sizes = [(1, 1, 1), (64, 4096, 16), (4096, 1, 4096), (1537, 777, 999)]
    pairs = [(c, s) for c in cfgs for s in sizes]
    r = predict_rows(H200, [c for c, _ in pairs], [s for _, s in pairs])
    assert np.all(np.isfinite(r["time_s"])) and np.all(r["time_s"] > 0)


def test_a_blocks_warps_stretch_the_compute_phase_that_hides_a_prefetch() -> None:
    # 16 warps of one double-buffered block share 4 schedulers: the compute phase between two barriers is
    # 4x a lone warp's, long enough to hide the next tile's load - the time barely depends on the latency.
    # A loop that waits for its tile right after loading it exposes the latency whatever its warps.
    from model.timing import TimingParams, load_params
    base = load_params()
    lo, hi = (TimingParams(base.p, x, base.spill_overlap) for x in (1.0, 2.5))
    dbuf = KernelConfig.parse("06:BM=128,BN=128,BK=8,TM=8,TN=4")
    plain = KernelConfig.parse("05:BM=128,BN=128,BK=8,TM=8,TN=8")
    ratio = [predict(H200, c, 4096, 4096, 4096, prm=hi, max_blocks_per_sm=1).time_s
             / predict(H200, c, 4096, 4096, 4096, prm=lo, max_blocks_per_sm=1).time_s for c in (dbuf, plain)]
    assert ratio[0] < 1.03 < 1.15 < ratio[1], ratio


def test_fixed_stalls_are_not_hidden_by_other_warps():
    # The lone warp's stalls at zero global latency (control-code stall counts, shared-load waits) are added to
    # the iteration after the mean value analysis: the same code's stalls fall in the same cycles on every warp.
    # So a loop whose trace waits d more cycles per iteration takes d more cycles per iteration however many
    # warps is resident; so do the register-bank conflicts' dispatch cycles.
    from dataclasses import replace as dreplace
    from model.timing import rates
    c = KernelConfig.parse("10:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=4")
    (pa,), _ = _arrays_for(H200, [c], None)
    base = evaluate(H200, pa, [4096], [4096], [4096])
    d = 300.0
    slow = evaluate(H200, dreplace(pa, trace=pa.trace + d), [4096], [4096], [4096])
    iters = (slow["sm_cycles"][0] - base["sm_cycles"][0]) / d
    blocks = (4096 // 128) ** 2
    per_sm = -(-blocks // rates(H200).sms)
    rounds = -(-per_sm // int(pa.bps[0]))
    assert iters == pytest.approx(rounds * (4096 // 8), rel=0.02)
    # register-bank conflicts (in dispatch cycles) are fixed stalls too: d more cycles, d more per iteration
    bank = evaluate(H200, dreplace(pa, bank_conflicts=pa.bank_conflicts + d), [4096], [4096], [4096])
    assert (bank["sm_cycles"][0] - base["sm_cycles"][0]) / d == pytest.approx(iters, rel=1e-6)


def test_control_code_stall_counts_are_parsed_and_paced() -> None:
    """The stall count of each instruction's control code (bits 105-108 of the 128-bit encoding) comes out of
    ``nvdisasm -hex`` and sets the cycles before the warp's next issue in the trace."""
    from tools.compiler_facts import Instr, parse_nvdisasm, stall_count, warp_trace
    text = """.text._Z1kv:
        /*0000*/                   IADD3 R1, R2, 0x7f, RZ ;                          /* 0x0000007f02017810 */
                                                                                      /* 0x000fca0007ffe0ff */
        /*0010*/                   FFMA R6, R4, R4, R6 ;                             /* 0x0000000404067223 */
                                                                                      /* 0x000fe20000000006 */
"""
    funcs = parse_nvdisasm(text)
    ins = funcs["_Z1kv"][0]
    # 0x000fca...: bits 41-44 of the high word are 0b0101 = 5; 0x000fe2...: 0b0001 = 1
    assert [i.stall for i in ins] == [5, 1]
    assert stall_count(0x000FCA0007FFE0FF) == 5 and stall_count(0) == 1
    a = Instr(0, None, "IADD3", "R1, R2, 0x7f, RZ", None, 5)
    b = Instr(16, None, "IADD3", "R3, R2, 0x1, RZ", None, 1)
    assert warp_trace([a, b], 100, 20)["ends"][0] == 6.0          # 5 cycles, then 1
    assert warp_trace([Instr(0, None, "IADD3", "R1, R2, 0x7f, RZ", None), b], 100, 20)["ends"][0] == 2.0



# --------------------------------------------------------------------------------------------------
# Dispatch stalls and instruction fetch (fifth session of 2026-11-30)
# --------------------------------------------------------------------------------------------------

SPILL07 = KernelConfig.parse("07:BM=128,BN=128,BK=16,WM=64,WN=64,WNITER=4,TM=8,TN=4,SWZ=1,SPLITK=1")
SIB07 = KernelConfig.parse("07:BM=128,BN=128,BK=16,WM=64,WN=32,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1")


def test_every_ffma_pays_the_base_dispatch_stall() -> None:
    from model.facts import FFMA_DISPATCH_CYCLES, facts_for
    from model.counts import steady_counts
    for cfg in (SPILL07, SIB07):
        f = facts_for(cfg, "sm_90")
        b = steady_counts(cfg)
        ffma = b.ffma_warp / b.warps                       # FFMAs per warp and iteration
        per = ffma / f.loop_ffma                            # iterations of ours per SASS loop iteration
        want = f.bank_conflict_cycles * per + FFMA_DISPATCH_CYCLES["sm_90"] * ffma
        assert profile(cfg, "sm_90").bank_conflicts == pytest.approx(want)
        assert profile(cfg, "sm_90").bank_conflicts >= 0.25 * ffma
    # architectures without a measurement pay only their bank conflicts
    f = facts_for(SIB07, "sm_86")
    b = steady_counts(SIB07)
    per = b.ffma_warp / b.warps / f.loop_ffma
    assert profile(SIB07, "sm_86").bank_conflicts == pytest.approx(f.bank_conflict_cycles * per)


def test_conflicts_that_hold_the_scheduler_are_issue_cycles_paid_by_every_warp() -> None:
    """model.facts.SLOT_CLASS_ISSUE_CYCLES: an ``ac`` FFMA's held dispatch is added to the warp's issue (and its lone
    iteration), so the fixed stalls (trace minus instructions) are unchanged; without the classes the profile is the
    old one. The four-lane-column sibling of an eight-column tile, the first with 12 % of its FFMAs in class ``ac``,
    is then predicted slower at 512 x 512 x 16384, as measured (44.6 against 50.7 TFLOP/s, picks11, 2026-12-01)."""
    from dataclasses import replace as dreplace
    from model.counts import counts_array
    from model.facts import facts_for
    from model.registry import geometry
    from model.timing import _COUNT_FIELDS, _profile_columns
    cfg = KernelConfig.parse("12:BM=128,BN=256,BK=8,WM=64,WN=32,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=4,SPREAD=1")
    f = facts_for(cfg, "sm_90")
    assert f.loop_slot_classes["ac"] > 0.1 * f.loop_ffma
    cnt = counts_array([cfg, cfg], _COUNT_FIELDS, keys=[cfg.key, cfg.key])
    col = _profile_columns(cnt, [f, dreplace(f, loop_slot_classes=None)], [geometry(cfg)] * 2, None, [cfg, cfg])
    per = cnt["ffma_warp"][0] / cnt["warps"][0] / f.loop_ffma
    held = f.slot_class_issue_cycles * per
    assert held > 0 and col["instr"][0] - col["instr"][1] == pytest.approx(held)
    assert profile(cfg, "sm_90").held_issue_cycles == pytest.approx(held)          # what explain reports
    assert np.allclose(col["trace"][0] - col["trace"][1], held)                    # the lone iteration too
    assert col["bank_conflicts"][0] == pytest.approx(col["bank_conflicts"][1])    # the fixed stalls unchanged
    # planted: the same tile without its classes is faster; the eight-column sibling is predicted faster than it
    lc8 = KernelConfig.parse("12:BM=128,BN=256,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=4,SPREAD=8")
    t4, t8 = (predict(H200, c, 512, 512, 16384).time_s for c in (cfg, lc8))
    assert t8 < t4


def test_a_loop_larger_than_the_l0_icache_is_fetched_every_iteration() -> None:
    from model.facts import INSTRUCTION_FETCH, facts_for
    l0, rate = INSTRUCTION_FETCH["sm_90"]
    f = facts_for(SPILL07, "sm_90")
    assert f.loop_instructions * 16 > l0                  # 41 KB of loop code
    assert profile(SPILL07, "sm_90").fetch_cycles == pytest.approx(f.loop_path_instructions * 16 / rate, rel=1e-3)
    assert facts_for(SIB07, "sm_90").loop_instructions * 16 < l0
    assert profile(SIB07, "sm_90").fetch_cycles == 0.0
    # one 4-warp block per SM (48 blocks at N = 60): the fetch floor sets the iteration, not the issue
    p = predict(H200, SPILL07, 6144, 60, 2560)
    floor = (2560 // 16) * profile(SPILL07, "sm_90").fetch_cycles / rates(H200).clock_hz
    assert p.time_s >= floor
    assert p.bound == "issue"
    # other GPUs have no measured fetch rate: no floor
    assert profile(SPILL07, "sm_86").fetch_cycles == 0.0


BIG_CODE = KernelConfig.parse("11:BM=128,BN=128,BK=32,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=2,SPREAD=1")
SMALL_CODE = KernelConfig.parse("11:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=4,SPREAD=8")


CLASSIC11 = KernelConfig.parse("11:BM=128,BN=128,BK=16,WM=64,WN=64,WNITER=2,TM=8,TN=4,SWZ=1,SPLITK=1,STAGES=3,SPREAD=16")


def test_code_beyond_the_instruction_cache_is_fetched_once_or_every_round(monkeypatch) -> None:
    """A kernel whose SASS exceeds the instruction cache beyond the L0 (model.facts.CODE_CACHE) streams it in from L2 in
    its first round; later rounds fetch again (their once-run code and first pass over the loop) only when the code a
    block runs exceeds the cache too (rounds12, 2026-12-01: rung 11's classic config, 194 KB of SASS of which a block
    runs 85 KB, costs 10.1 us a round at K = 32 as kernels that fit do, against 24.6 charged every round before; its
    128x128x32 tile, running 152 KB, pays every round). One that fits pays nothing."""
    import model.timing as mt
    from model.facts import CODE_CACHE
    cap, rate = CODE_CACHE["sm_90"]
    big, mid, small = (profile(c, "sm_90") for c in (BIG_CODE, CLASSIC11, SMALL_CODE))
    assert big.code_bytes[4] > cap > small.code_bytes[3]          # runs 152 KB of 258 KB; 100 KB of SASS
    assert mid.code_bytes[3] > cap > mid.code_bytes[4]            # 194 KB of SASS, runs 85 KB
    (pa,), _ = mt._arrays_of_profiles(H200, [BIG_CODE, CLASSIC11, SMALL_CODE], None)
    M, K = np.array([1536] * 3), np.array([64] * 3)
    one = mt.evaluate(H200, pa, M, np.array([2816] * 3), K)        # one round of blocks (2 per SM)
    six = mt.evaluate(H200, pa, M, np.array([6 * 2816] * 3), K)    # six rounds
    c1, c6 = one["cold_fetch_cycles"], six["cold_fetch_cycles"]
    assert c1[2] == 0.0 and c6[2] == 0.0
    # the first round streams in the whole SASS (the code a block runs exceeds the cache) or the code its blocks run,
    # once a warp a scheduler holds (two blocks of four warps an SM: twice), less the work it overlaps
    for q, stream in ((0, big.code_bytes[3]), (1, 2 * mid.code_bytes[4])):
        assert 0.7 * stream / rate < c1[q] <= stream / rate
    assert c6[1] == pytest.approx(c1[1])                          # the code a block runs fits: paid once
    per_round = (prof_once := big.code_bytes[0] + big.code_bytes[2]) / rate
    assert c6[0] - c1[0] > 5 * 0.5 * per_round                    # it does not: every later round pays again
    assert c6[0] - c1[0] <= 5 * (prof_once + big.code_bytes[1]) / rate
    # it is in the SM time: without the cache limit the kernel is faster by about that much
    monkeypatch.setitem(CODE_CACHE, "sm_90", (math.inf, rate))
    none = mt.evaluate(H200, pa, M, np.array([2816] * 3), K)
    assert none["cold_fetch_cycles"][0] == 0.0
    assert one["sm_cycles"][0] - none["sm_cycles"][0] == pytest.approx(c1[0], rel=1e-9)
    assert one["sm_cycles"][2] == none["sm_cycles"][2]


def test_the_first_round_streams_the_code_its_blocks_run_once_for_each_warp_a_scheduler_holds() -> None:
    """The first round of a kernel beyond the instruction cache streams in the code its blocks run (not the SASS they
    jump over), once for each warp a scheduler holds while the blocks run the steady loop, once when they run only
    the drain loop; where the code a block runs with its steady loop exceeds the cache, the whole SASS (fetch14 and
    rounds12, fourteenth session: rung 11's classic config pays 80-86 KB at one block an SM, 171-184 KB at two, 46-61 KB
    when its blocks run only the drain loop; the 128x128x32 tile 244-251 KB of its 258)."""
    import model.timing as mt
    from model.facts import CODE_CACHE
    cap, rate = CODE_CACHE["sm_90"]
    mid, big = profile(CLASSIC11, "sm_90"), profile(BIG_CODE, "sm_90")
    (pa,), _ = mt._arrays_of_profiles(H200, [CLASSIC11] * 4 + [BIG_CODE], None)
    M = np.array([1536] * 5)
    N = np.array([1408, 2816, 2816, 1408, 2816])     # one round of 132 blocks (one an SM), of 264 (two an SM)
    K = np.array([256, 256, 32, 32, 256])            # K = 32: two tiles a block, both in the classic's drain loop
    r = mt.evaluate(H200, pa, M, N, K)
    assert list(r["blocks_per_sm"]) == [2, 2, 2, 2, 2] and mid.warps == 4
    run, drain_only = mid.code_bytes[4], mid.code_bytes[4] - mid.code_bytes[1]
    first = r["code_first_round_bytes"]
    assert first[0] == pytest.approx(run)                 # 4 warps on 4 schedulers: one stream
    assert first[1] == pytest.approx(2 * run)             # two blocks an SM, in the steady loop: two streams
    assert first[2] == pytest.approx(drain_only) and first[3] == pytest.approx(drain_only)   # in phase: one
    assert first[4] == pytest.approx(big.code_bytes[3])   # the code it runs exceeds the cache: the whole SASS
    assert mid.code_bytes[3] > 1.5 * run                  # less than the SASS: the element path's loop is skipped
    # the fetch beyond the work it overlaps (the prologue and one iteration) is what the first round adds
    assert 0.7 * run / rate < r["cold_fetch_cycles"][0] <= run / rate
    assert r["cold_fetch_cycles"][1] > 1.6 * r["cold_fetch_cycles"][0]


def test_a_block_whose_tiles_all_fit_the_drain_loop_does_not_run_the_steady_loop() -> None:
    """A pipelined kernel runs its last STAGES - 1 K tiles in a drain loop after the steady loop: a block with no more
    tiles than that (K = BK, split-K slices one tile deep) never runs the steady loop, so the code it runs is the rest.
    Rung 11's 128x128x32 tile (STAGES = 2, 152 KB run with the steady loop) fits the instruction cache at one tile a
    block and stops paying every round (rounds12 at K = 32: 34-52 % pessimistic before, 12-15 % after; splitc16's
    rung 12 1x8x4x4 split-K 16 at one tile a slice: 30-47 % pessimistic before)."""
    import model.timing as mt
    from model.facts import CODE_CACHE
    cap, _ = CODE_CACHE["sm_90"]
    big = profile(BIG_CODE, "sm_90")
    assert big.code_bytes[6] == 1 and big.code_bytes[5] > 0          # STAGES = 2: the drain loop takes one tile
    assert big.code_bytes[4] > cap > big.code_bytes[4] - big.code_bytes[1]
    (pa,), _ = mt._arrays_of_profiles(H200, [BIG_CODE, BIG_CODE], None)
    M, N = np.array([1536, 1536]), np.array([6 * 2816, 6 * 2816])
    res = mt.evaluate(H200, pa, M, N, np.array([32, 64]))            # one tile a block; two (the steady loop runs once)
    one_tile, two_tiles = res["cold_fetch_cycles"]
    first_only = mt.evaluate(H200, pa, np.array([1536, 1536]), np.array([2816, 2816]), np.array([32, 64]))
    assert one_tile == pytest.approx(first_only["cold_fetch_cycles"][0])   # six rounds pay what one round pays
    assert two_tiles > 3 * first_only["cold_fetch_cycles"][1] / 2          # the steady loop runs: every round pays


def test_the_element_path_costs_where_k_or_n_is_not_a_multiple_of_four() -> None:
    # rung 06 falls back to guarded element loads of A (K % 4 != 0) or B (N % 4 != 0): the compiler facts trace that
    # path (its 648 instructions against the steady 610) and the model charges its share (BM : BN) of the extra
    # instructions and lone-warp cycles; a kernel without such a branch (the naive kernel) is unchanged
    from model.facts import facts_for
    cfg = KernelConfig.parse("06:BM=128,BN=128,BK=8,TM=8,TN=8")
    f = facts_for(cfg, "sm_90")
    assert f.loop_element_path_instructions > f.loop_path_instructions
    assert f.loop_element_trace_cycles[-1][0] > f.loop_trace_cycles[-1][0]
    p = profile(cfg, "sm_90")
    assert p.element_path_extra > 0 and max(max(r) for r in p.element_trace_extra) > 0
    import model.timing as mt
    sizes = [(2048, 2048, 2048), (2048, 2048, 2047), (2048, 2047, 2048), (2048, 2047, 2047)]
    with_path = [predict(H200, cfg, *s).time_s for s in sizes]
    real = mt._element_path
    try:
        mt._element_path = lambda pa, N, K: pa                 # the model without the element path
        without = [predict(H200, cfg, *s).time_s for s in sizes]
    finally:
        mt._element_path = real
    assert with_path[0] == pytest.approx(without[0])          # aligned: the steady path
    gain = [w / o - 1 for w, o in zip(with_path[1:], without[1:])]
    assert all(g > 0.01 for g in gain) and gain[2] > max(gain[0], gain[1])   # both odd: both shares
    naive = KernelConfig.parse("naive:BX=32,BY=32,COALESCED=1")
    assert profile(naive, "sm_90").element_path_extra == 0
    assert predict(H200, naive, 2048, 2047, 2048).time_s < 1.01 * predict(H200, naive, 2048, 2048, 2048).time_s


def test_the_l1_tag_stage_charges_each_load_beside_its_lines() -> None:
    # experiments/l1_lines.py on the H200: a warp's load walking 32 rows of A in distinct banks costs ~10.5 cycles,
    # a one-line load 1 cycle: max(1, c0 + lines / rate) a load. The naive kernel's uncoalesced 32-wide block at an
    # odd K (A: 32 lines, B: 1, two loads) pays 2 c0 + 33 / rate; at K a multiple of 32 the data stage's 32-way bank
    # conflict binds instead (33 wavefronts), unchanged; a one-line-a-load kernel pays about one cycle a load.
    import model.timing as mt
    from model.facts import L1_TAG
    c0, rate = L1_TAG["sm_90"]
    unc = KernelConfig.parse("naive:BX=32,BY=32,COALESCED=0")
    pa = _arrays_for(H200, [unc], [None])[0][0]
    warps = float(pa.warps[0])
    odd = float(mt._l1_wavefronts(pa, np.array([2047]), np.array([2047]), "sm_90")[0]) / warps
    assert odd == pytest.approx(2 * c0 + 33 / rate, rel=0.02)
    al = float(mt._l1_wavefronts(pa, np.array([2048]), np.array([2048]), "sm_90")[0]) / warps
    assert al == pytest.approx(33.0, rel=0.02)
    coal = KernelConfig.parse("naive:BX=32,BY=32,COALESCED=1")
    pc = _arrays_for(H200, [coal], [None])[0][0]
    assert float(mt._l1_wavefronts(pc, np.array([2047]), np.array([2047]), "sm_90")[0]) / float(pc.warps[0]) \
        == pytest.approx(max(2.0, 2 * c0 + 2 / rate), rel=0.02)     # one line a load: ~1.1 cycles (1.08 measured)
    # an architecture without a measurement keeps the lines at 3 a cycle, no per-load term
    assert float(mt._l1_wavefronts(pa, np.array([2047]), np.array([2047]), "sm_86")[0]) / warps \
        == pytest.approx(33 / 3.0, rel=0.02)
    # and the uncoalesced kernel at an odd K is slower with the per-load term than without it
    # (the tag banks' floor, model.facts.L1_TAG_BANKS, set aside: at 3001 it binds under either rule)
    from model.facts import L1_TAG_BANKS
    real, banks = dict(L1_TAG), dict(L1_TAG_BANKS)
    try:
        L1_TAG_BANKS.clear()
        with_c0 = predict(H200, unc, 3001, 3001, 3001).time_s
        L1_TAG["sm_90"] = (0.0, 3.0)
        before = predict(H200, unc, 3001, 3001, 3001).time_s
    finally:
        L1_TAG.clear()
        L1_TAG.update(real)
        L1_TAG_BANKS.update(banks)
    assert with_c0 > 1.05 * before


def test_vector_reductions_fall_back_to_four_scalar_ones_at_an_unaligned_n() -> None:
    # split-K with 16-byte vector reductions: at N % 4 != 0 each vector becomes four 4-byte reductions touching the
    # same sectors, four times the L2's sector operations (what the simulator counts for always-scalar reductions);
    # the L2 bytes of C and the round's epilogue grow with them. A kernel whose reductions are always scalar, or one
    # without split-K, is unchanged by the alignment.
    vred = KernelConfig.parse("12:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=3,SPREAD=8")
    scal = KernelConfig.parse("11:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=3,SPREAD=8")
    plain = KernelConfig.parse("12:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=3,SPREAD=8")
    assert profile(scal, "sm_90").store_sectors == 4 * profile(vred, "sm_90").store_sectors
    a, o = _ev(vred, 2048, 2048, 2048), _ev(vred, 2048, 2047, 2048)
    c_a = a["l2_bytes"] - 4 * 2048 * 2048 * (2048 // 128 + 2048 // 128)
    c_o = o["l2_bytes"] - 4 * 2048 * (2048 * 16 + 2047 * 16)
    assert c_o == pytest.approx(4 * c_a, rel=0.01)
    assert o["time_s"] > 1.2 * a["time_s"]
    for cfg in (scal, plain):
        x, y = _ev(cfg, 2048, 2048, 2048), _ev(cfg, 2048, 2047, 2048)
        assert y["time_s"] < 1.1 * x["time_s"]


def test_a_one_wave_launch_without_a_barrier_waits_for_its_first_touches() -> None:
    # The naive kernel (no barrier) at 336x304x400: one wave, every block starts at once, warps sharing a line ask
    # for it together and all wait its read from DRAM (the wave's share). Over more waves blocks start as others
    # finish and drift: the L2 miss ratio, as the forced-residency measurements need.
    import model.timing as mt
    cfg = KernelConfig.parse("naive:BX=16,BY=16,COALESCED=1")
    (pa,), _ = _arrays_for(H200, [cfg], None)
    r = rates(H200)
    small = predict_rows(H200, [cfg], [(336, 304, 400)])["latency_cycles"][0]
    ratio = mt._waited_latency(r, pa, np.array([0.02]), mt._warp_lines(pa[np.array([0])], 400, 304, r.dram_page_bytes))[0]
    assert small > ratio + 100 and small > r.l2_latency_cycles + 0.7 * (r.dram_latency_cycles - r.l2_latency_cycles)
    # the seed's multi-wave comparison (test_naive_32x32_at_one_block_per_sm_is_about_as_fast_as_16x16_at_six) keeps
    # the miss ratio


def _intercept_share(cfg, M: int, N: int) -> float:
    """The once-per-block share of a prediction at K = 24: the time at K = 24 less 24 k steps at the slope
    between K = 24 and K = 40, over the time at K = 24."""
    from model.timing import predict
    h200 = load_gpu("h200")
    t24, t40 = (predict(h200, cfg, M, N, k).time_s for k in (24, 40))
    return (t24 - 24 * (t40 - t24) / 16) / t24


def test_a_barrier_free_loops_once_per_block_work_overlaps_the_other_blocks_loops() -> None:
    # the naive kernel (no barrier) at 3968x5888x24, 87 rounds of eight blocks an SM: its blocks drift apart and a
    # block's prologue and epilogue run while the others run their loops (Nsight Compute, logs/naive-2026-12-01), so
    # they add little to the k steps; the shared-memory kernel's blocks (a barrier per iteration, walking K in step)
    # pay theirs in series. Charged in series for the naive kernel, its share is about a third.
    naive = next(c for c in classic_configs([1]) if c.label == "01 naive 16x16")
    smem = next(c for c in classic_configs([2]) if c.label == "02 smem 16x16x16")
    assert _intercept_share(naive, 3968, 5888) < 0.15
    assert _intercept_share(smem, 3968, 5888) > 0.25


def test_c_stored_four_bytes_at_a_time_where_its_rows_are_not_16_byte_aligned() -> None:
    # rung 06's classic config stores C in 16-byte stores, four times as many 4-byte ones at N % 4 != 0 (every one
    # over the same sectors: model.facts.STORE_PATH), which at four blocks (123 rows) is most of the launch
    # (Nsight Compute: +59 % of its stall samples, logs/misaligned-2026-12-01); rung 04 stores 4 bytes a lane anyway
    from model.timing import predict
    h200 = load_gpu("h200")
    dbuf = next(c for c in classic_configs([6]))
    reg2d = next(c for c in classic_configs([4]))
    ratio = predict(h200, dbuf, 123, 397, 64).time_s / predict(h200, dbuf, 123, 400, 64).time_s
    assert ratio > 1.3
    flat = predict(h200, reg2d, 123, 397, 64).time_s / predict(h200, reg2d, 123, 400, 64).time_s
    assert flat < 1.1


def test_the_busiest_l1_tag_bank_is_a_floor_under_a_column_walk() -> None:
    # model.facts.L1_TAG_BANKS: the uncoalesced naive kernel's column walk of 32 rows K words apart puts its lines in
    # the H200's four tag banks by the hash of their addresses: at K = 449 (rows 14.03 lines apart) they crowd two
    # banks, at 479 (14.97) they spread. The model's k step is the longer of the per-line rule and the busiest bank,
    # so 449 costs more than 479 (kscan32 measured 14.8 and 12.0 cycles a warp and k step), while a kernel whose
    # loads are one line each, and an architecture without a measured hash, are the same at both
    import model.timing as mt
    unc = KernelConfig.parse("naive:BX=32,BY=32,COALESCED=0")
    coal = KernelConfig.parse("naive:BX=32,BY=32,COALESCED=1")

    def per_k(cfg, K, gpu=H200):
        return predict(gpu, cfg, 1536, 1536, K).time_s / K

    assert per_k(unc, 449) > 1.15 * per_k(unc, 479)
    assert per_k(coal, 449) == pytest.approx(per_k(coal, 479), rel=0.02)
    a6000 = load_gpu("rtxa6000")
    assert per_k(unc, 449, a6000) == pytest.approx(per_k(unc, 479, a6000), rel=0.03)
    pa = _arrays_for(H200, [unc], [None])[0][0]
    w = float(pa.warps[0])
    floor = float(mt._l1_wavefronts(pa, np.array([449]), np.array([1536]), "sm_90", 0.0, np.array([1536]))[0]) / w
    rule = float(mt._l1_wavefronts(pa, np.array([449]), np.array([1536]), "sm_90")[0]) / w
    assert floor > rule + 2.0                    # 13-15 cycles for A's 32 lines against the rule's 10.5


# --------------------------------------------------------------------------------------------------
# The last wave's deal (experiments/block_trace.py)
# --------------------------------------------------------------------------------------------------


def test_busiest_sm_rounds_even_and_random_order() -> None:
    from model.timing import busiest_sm_rounds
    blocks = np.array([200, 264, 272, 384, 768, 864])
    f, m = busiest_sm_rounds(blocks, 132, 2, random_order=False)
    assert list(f * 2 + m) == [2, 2, 3, 3, 6, 7]                     # ceil(blocks / SMs)
    assert list(f) == [1, 1, 1, 1, 3, 3] and list(m) == [0, 0, 1, 1, 0, 1]
    f, m = busiest_sm_rounds(blocks, 132, 2, random_order=True)
    # one wave: dealt evenly either way; 8 blocks left over: no SM likely to take two; 120 or 72 left: one does
    assert list(f * 2 + m) == [2, 2, 3, 4, 6, 8]
    # the random order never gives the busiest SM fewer blocks, and more leftover blocks never fewer
    for b in (1, 2, 3, 6, 8):
        B = np.arange(1, 6000, 7)
        fe, me = busiest_sm_rounds(B, 132, b, random_order=False)
        fr, mr = busiest_sm_rounds(B, 132, b, random_order=True)
        assert np.all(fr * b + mr >= fe * b + me)
        assert np.all(np.diff(fr * b + mr) >= 0)
        assert np.all(mr < b)


def test_block_trace_shows_the_refill_and_the_model_keeps_the_even_deal() -> None:
    import gzip
    import json
    from experiments.block_trace import refill_share
    res = json.load(gzip.open(ROOT / "experiments" / "results" / "h200" / "block_trace-2026-12-02.json.gz"))
    sh = refill_share(res)
    assert (sh["random"], sh["even"]) == (10.0, 6.0)
    row = next(r for r in sh["rows"] if (r["M"], r["N"], r["K"]) == (6848, 4, 3328))
    assert (row["busiest_even"], row["busiest_random"], row["busiest_seen"]) == (7, 8, 8.0)
    # every traced launch was verified; the probe left the kernel's time within 6 % in 15 of the 18 (the README of
    # logs/blocktrace-2026-12-02 names the three it did not)
    assert all(r["plain_status"] == "ok" and r["probed_check"] == "ok" for r in res["rows"])
    near = [abs(r["probed_median_s"] / r["plain_median_s"] - 1) <= 0.06 for r in res["rows"]]
    assert sum(near) == 15
    # the prediction is the even deal's; the random order's time is reported beside it, never shorter
    cfg = KernelConfig.parse("12:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=3,SPREAD=8")
    r = predict_rows(H200, [cfg, cfg], [(6848, 4, 3328), (2112, 3, 1088)], [None, None])
    assert list(r["busiest_sm_blocks"]) == [7, 3] and list(r["busiest_sm_blocks_refill_random"]) == [8, 3]
    assert r["time_refill_random_s"][0] > 1.05 * r["time_s"][0]
    assert r["time_refill_random_s"][1] == r["time_s"][1]
    p = predict(H200, cfg, 6848, 4, 3328)
    assert p.time_refill_random_s == pytest.approx(float(r["time_refill_random_s"][0]))
    assert any("last wave's deal" in n and "busiest SM 7 blocks" in n for n in p.notes)
