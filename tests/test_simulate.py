"""Tests for model/simulate.py, the warp-level access simulator. No GPU needed.

Three tiers: hand-worked warps (the arithmetic is in the comments), the one-warp probes measured with
ncu on the H200 (86 access patterns), and whole kernels: the reference ncu point of the naive kernel and
35 (config, size) rows measured with ncu on the H200 (sm_90, driver 580, ncu 2025.3,
``--clock-control none``), interior and edge sizes, the float4 fallbacks and K < 8 included.
"""
from __future__ import annotations

import math
import time

import numpy as np
import pytest

import model.simulate as sim
from model.errors import ConfigError
from model.registry import KernelConfig, classic_configs, geometry, grid, grid_configs
from model.simulate import (
    OBSERVED_SASS_LDS,
    AccessCounts,
    LoadPlan,
    compiler_plan,
    global_requests_sectors,
    plan_from_sass,
    shared_wavefronts,
    simulate,
    source_plan,
)

T = np.arange(32)
ALL = np.ones(32, dtype=bool)


def wf(addr, width, op="ld", active=ALL):
    """(wavefronts, bank conflicts) of one warp instruction."""
    w, ideal = shared_wavefronts(np.asarray(addr)[None], np.asarray(active)[None], width, op)
    return int(w[0]), int(w[0] - ideal[0])


def gl(addr, active=ALL):
    """(requests, sectors) of one warp instruction; ``addr`` in floats from a 32-byte aligned origin."""
    r, s = global_requests_sectors(np.asarray(addr)[None], np.asarray(active)[None])
    return int(r[0]), int(s[0])


# --------------------------------------------------------------------------------------------------
# Hand-worked warps
# --------------------------------------------------------------------------------------------------


def test_global_coalesced_row():
    # 32 consecutive floats from a 128-byte aligned address: bytes 0..127 = sectors 0..3 -> 1 request, 4 sectors
    assert gl(T) == (1, 4)
    # the same row starting 4 floats (16 bytes) late: bytes 16..143 touch sectors 0..4 -> 5
    assert gl(T + 4) == (1, 5)


def test_global_broadcast_and_column_walk():
    # every lane reads the same float: one 32-byte sector
    assert gl(np.zeros(32, dtype=int)) == (1, 1)
    # a column walk with a row pitch of 2048 floats (8 KiB): 32 different sectors
    assert gl(T * 2048) == (1, 32)


def test_global_vector_and_predicated_off():
    # LDG.128 of 32 consecutive float4s: 512 bytes = 16 sectors, still ONE request (measured: G4_seq)
    assert gl(4 * T) == (1, 16)
    # LDG.64: 256 bytes = 8 sectors
    assert gl(2 * T) == (1, 8)
    # all lanes predicated off: no request, no sector (measured: G1_none / G4_none)
    assert gl(T, np.zeros(32, dtype=bool)) == (0, 0)
    # one lane: 1 request, 1 sector
    assert gl(T, T == 0) == (1, 1)


def test_shared_4way_conflict():
    # 32-bit, stride 4 words: word 4t is in bank 4t mod 32 -> banks 0, 4, ..., 28 (8 banks); bank 0 holds
    # words 0, 32, 64, 96 (lanes 0, 8, 16, 24): 4 distinct words -> 4 wavefronts, 4 - 1 = 3 conflicts
    assert wf(4 * T, 1) == (4, 3)
    # stride 2: banks 0, 2, ..., 30, each with 2 words (lanes t and t+16) -> 2 wavefronts, 1 conflict
    assert wf(2 * T, 1) == (2, 1)
    # stride 32: all 32 words in bank 0 -> 32 wavefronts
    assert wf(32 * T, 1) == (32, 31)


def test_shared_broadcast():
    # all lanes read one word: one distinct word in one bank -> 1 wavefront
    assert wf(np.zeros(32, dtype=int), 1) == (1, 0)
    # two lanes per word (t // 2): 16 words in 16 banks, 1 each -> 1 wavefront
    assert wf(T // 2, 1) == (1, 0)


def test_shared_128bit_contiguous_is_conflict_free():
    # 32 lanes x 16 B contiguous = 512 B: four quarter-warps of 128 B, each covering all 32 banks once
    # -> 4 wavefronts, ideal 4, 0 conflicts
    assert wf(4 * T, 4) == (4, 0)
    # 64-bit contiguous: two half-warps of 128 B -> 2 wavefronts, 0 conflicts
    assert wf(2 * T, 2) == (2, 0)


def test_shared_128bit_rung05_patterns():
    # rung 05 classic, Bs read: lane t reads float4 at word 8*(t % 16) (tx*TN, TN = 8). Quarter 0 (lanes
    # 0-7) reads words 0, 8, ..., 56: banks 0-3 hold words 0-3 and 32-35 -> degree 2 per quarter; the
    # quarters read 8 different addresses each, so they are not merged: 4 x 2 = 8 wavefronts, ideal 4,
    # 4 conflicts (measured: L4_r5B 8/4)
    assert wf(8 * (T % 16), 4) == (8, 4)
    # rung 05 classic, AsT read: lanes 0-15 read word 0 (ty = 0), lanes 16-31 word 8 (ty = 1). Each
    # quarter reads one address (16 B), so the two quarters of a half are served together: 1 wavefront per
    # half -> 2, 0 conflicts (measured: L4_r5A 2/0)
    assert wf(8 * (T // 16), 4) == (2, 0)
    # one address for the whole warp: 128-bit loads never merge across half-warps -> 2 (measured 2) ...
    assert wf(np.zeros(32, dtype=int), 4) == (2, 0)
    # ... while a 64-bit broadcast is 1 wavefront (measured 1)
    assert wf(np.zeros(32, dtype=int), 2) == (1, 0)


def test_shared_stores_never_merge():
    # STS.128 of one address by all lanes: 4 quarters x 1 = 4 wavefronts (measured S4_same 4/0)
    assert wf(np.zeros(32, dtype=int), 4, "st") == (4, 0)
    # rung 05's transposed A store AsT[(4*(t%2))*128 + t//2] (BM = 128, BK = 8): bank t//2, two words per
    # bank (t even / odd: rows 0 and 4 of AsT) -> 2 wavefronts, 1 conflict (measured S1_r5AsT 2/1)
    assert wf(4 * (T % 2) * 128 + T // 2, 1, "st") == (2, 1)


# --------------------------------------------------------------------------------------------------
# The one-warp probes measured on the H200 (ncu, 256 executions each, divided by 256)
# (name, op, width in floats, lane address in words (t = lane), active lanes (None = all),
#  measured wavefronts (ld/st) or requests (ldg), measured bank conflicts or sectors)
# --------------------------------------------------------------------------------------------------

PROBES = [
    ('L1_seq'                , 'ld' , 1, 't'                                                       , None                    , 1, 0),
    ('L1_bcast'              , 'ld' , 1, '0'                                                       , None                    , 1, 0),
    ('L1_stride2'            , 'ld' , 1, '2 * t'                                                   , None                    , 2, 1),
    ('L1_stride4'            , 'ld' , 1, '4 * t'                                                   , None                    , 4, 3),
    ('L1_stride32'           , 'ld' , 1, '32 * t'                                                  , None                    , 32, 31),
    ('L1_dup'                , 'ld' , 1, 't // 2'                                                  , None                    , 1, 0),
    ('L1_half_active'        , 'ld' , 1, 't'                                                       , 't < 16'                , 1, 0),
    ('L1_none'               , 'ld' , 1, 't'                                                       , '0'                     , 0, 0),
    ('L2_seq'                , 'ld' , 2, '2 * t'                                                   , None                    , 2, 0),
    ('L2_bcast'              , 'ld' , 2, '0'                                                       , None                    , 1, 0),
    ('L2_halfsame'           , 'ld' , 2, '2 * (t % 16)'                                            , None                    , 2, 0),
    ('L2_disc'               , 'ld' , 2, '2 * (t % 8) + 16 * (t // 16)'                            , None                    , 2, 0),
    ('L2_stride4'            , 'ld' , 2, '4 * t'                                                   , None                    , 4, 2),
    ('L2_halfsame_conf'      , 'ld' , 2, '4 * (t % 16)'                                            , None                    , 4, 2),
    ('L2_perm'               , 'ld' , 2, '2 * (t ^ 1)'                                             , None                    , 2, 0),
    ('L2_hi_half_only'       , 'ld' , 2, '2 * t'                                                   , 't >= 16'               , 1, 0),
    ('L2_t0_t16'             , 'ld' , 2, '2 * t'                                                   , 't == 0  or  t == 16'   , 2, 1),
    ('L2_swap_halves'        , 'ld' , 2, '2 * ((t + 16) % 32) '                                    , None                    , 2, 0),
    ('L4_seq'                , 'ld' , 4, '4 * t'                                                   , None                    , 4, 0),
    ('L4_bcast'              , 'ld' , 4, '0'                                                       , None                    , 2, 0),
    ('L4_quartersame'        , 'ld' , 4, '4 * (t % 8)'                                             , None                    , 4, 0),
    ('L4_quarter_bcast'      , 'ld' , 4, '4 * (t // 8)'                                            , None                    , 2, 0),
    ('L4_r5A'                , 'ld' , 4, '8 * (t // 16)'                                           , None                    , 2, 0),
    ('L4_r5B'                , 'ld' , 4, '8 * (t % 16)'                                            , None                    , 8, 4),
    ('L4_halfsame'           , 'ld' , 4, '4 * (t % 16)'                                            , None                    , 4, 0),
    ('L4_stride8'            , 'ld' , 4, '8 * t'                                                   , None                    , 8, 4),
    ('L4_q0_only'            , 'ld' , 4, '4 * t'                                                   , 't < 8'                 , 1, 0),
    ('L4_t0_t8'              , 'ld' , 4, '4 * t'                                                   , 't == 0  or  t == 8'    , 2, 1),
    ('L4_t0_t8_same'         , 'ld' , 4, '0'                                                       , 't == 0  or  t == 8'    , 1, 0),
    ('L4_t0_t1_conf'         , 'ld' , 4, '32 * t'                                                  , 't < 2'                 , 2, 1),
    ('L4_t0_t8_conf'         , 'ld' , 4, '4 * t'                                                   , 't == 0  or  t == 8'    , 2, 1),
    ('L4_r5A_TM4'            , 'ld' , 4, '4 * (t // 8)'                                            , None                    , 2, 0),
    ('L4_mixed_q'            , 'ld' , 4, '4 * t if t < 8 else 4 * (t % 8) + 32 * ((t // 8) % 2)'   , None                    , 4, 0),
    ('L4_rev_quarters'       , 'ld' , 4, '4 * (31 - t)'                                            , None                    , 4, 0),
    ('L4_qpair_disjoint'     , 'ld' , 4, '4 * (t % 8) + (128 if t >= 16 else 0)'                   , None                    , 4, 0),
    ('L4_none'               , 'ld' , 4, '4 * t'                                                   , '0'                     , 0, 0),
    ('S1_seq'                , 'st' , 1, 't'                                                       , None                    , 1, 0),
    ('S1_stride4'            , 'st' , 1, '4 * t'                                                   , None                    , 4, 3),
    ('S1_same'               , 'st' , 1, '0'                                                       , None                    , 1, 0),
    ('S1_r5AsT'              , 'st' , 1, '4 * (t % 2) * 128 + t // 2'                              , None                    , 2, 1),
    ('S2_seq'                , 'st' , 2, '2 * t'                                                   , None                    , 2, 0),
    ('S2_same'               , 'st' , 2, '0'                                                       , None                    , 2, 0),
    ('S4_seq'                , 'st' , 4, '4 * t'                                                   , None                    , 4, 0),
    ('S4_same'               , 'st' , 4, '0'                                                       , None                    , 4, 0),
    ('S4_quartersame'        , 'st' , 4, '4 * (t % 8)'                                             , None                    , 4, 0),
    ('S4_stride8'            , 'st' , 4, '8 * t'                                                   , None                    , 8, 4),
    ('S4_none'               , 'st' , 4, '4 * t'                                                   , '0'                     , 0, 0),
    ('G1_seq'                , 'ldg', 1, 't'                                                       , None                    , 1, 4),
    ('G1_bcast'              , 'ldg', 1, '0'                                                       , None                    , 1, 1),
    ('G1_none'               , 'ldg', 1, 't'                                                       , '0'                     , 0, 0),
    ('G1_lane0'              , 'ldg', 1, 't'                                                       , 't == 0'                , 1, 1),
    ('G1_col'                , 'ldg', 1, '1024 * t'                                                , None                    , 1, 32),
    ('G2_seq'                , 'ldg', 2, '2 * t'                                                   , None                    , 1, 8),
    ('G4_seq'                , 'ldg', 4, '4 * t'                                                   , None                    , 1, 16),
    ('G4_stride8'            , 'ldg', 4, '8 * t'                                                   , None                    , 1, 32),
    ('G4_half'               , 'ldg', 4, '4 * t'                                                   , 't < 16'                , 1, 8),
    ('G4_col'                , 'ldg', 4, '1024 * t'                                                , None                    , 1, 32),
    ('G4_misal4'             , 'ldg', 4, '4 * t + 4'                                               , None                    , 1, 17),
    ('L4_q2addr'             , 'ld' , 4, '4 * (t // 4)'                                            , None                    , 2, 0),
    ('L4_q4addr'             , 'ld' , 4, '4 * (t // 2)'                                            , None                    , 2, 0),
    ('L4_bn4_tn8'            , 'ld' , 4, '8 * (t % 4)'                                             , None                    , 4, 0),
    ('L4_bn4_tn4'            , 'ld' , 4, '4 * (t % 4)'                                             , None                    , 4, 0),
    ('L4_bn2_tn16'           , 'ld' , 4, '16 * (t % 2)'                                            , None                    , 2, 0),
    ('L4_q0two_q1one'        , 'ld' , 4, '0 if t < 4 else 4 if t < 8 else 8'                       , 't < 16'                , 1, 0),
    ('L4_q0five_q1three'     , 'ld' , 4, '4 * (t % 5) if t < 8 else 32 + 4 * (t % 3)'              , 't < 16'                , 2, 0),
    ('L4_q0five_q1four'      , 'ld' , 4, '4 * (t % 5) if t < 8 else 32 + 4 * (t % 4)'              , 't < 16'                , 2, 0),
    ('L4_q0eight_q1one'      , 'ld' , 4, '4 * t if t < 8 else 64'                                  , 't < 16'                , 2, 0),
    ('L4_r5A_bn4_tm8'        , 'ld' , 4, '8 * (t // 4)'                                            , None                    , 2, 0),
    ('L4_r5A_bn2_tm4'        , 'ld' , 4, '4 * (t // 2)'                                            , None                    , 2, 0),
    ('L4_r5A_bn8_tm16'       , 'ld' , 4, '16 * (t // 8)'                                           , None                    , 2, 0),
    ('L4_r4A_bn8_tm8bk8'     , 'ld' , 4, '64 * (t // 8)'                                           , None                    , 4, 2),
    ('L4_r4A_bn16_tm8bk8'    , 'ld' , 4, '64 * (t // 16)'                                          , None                    , 2, 0),
    ('L4_halves_bcast_conf'  , 'ld' , 4, '0 if t < 16 else 32'                                     , None                    , 2, 0),
    ('L2_q1addr_each'        , 'ld' , 2, '2 * (t // 8)'                                            , None                    , 1, 0),
    ('L2_q2addr'             , 'ld' , 2, '2 * (t // 4)'                                            , None                    , 1, 0),
    ('L2_all4'               , 'ld' , 2, '2 * (t % 4)'                                             , None                    , 2, 0),
    ('L2_mod5'               , 'ld' , 2, '2 * (t % 5)'                                             , None                    , 2, 0),
    ('L2_h0one_h1two'        , 'ld' , 2, '0 if t < 16 else 2 * (t % 2) + 4'                        , None                    , 1, 0),
    ('L2_bn4_tn2'            , 'ld' , 2, '2 * (t % 4) '                                            , None                    , 2, 0),
    ('L2_bn16_tn2'           , 'ld' , 2, '2 * (t % 16) '                                           , None                    , 2, 0),
    ('L2_r4B_tn2_bn32'       , 'ld' , 2, '2 * t '                                                  , None                    , 2, 0),
    ('L1_r4A_bk8'            , 'ld' , 1, '64 * (t // 16)'                                          , None                    , 2, 1),
    ('S4_q2addr'             , 'st' , 4, '4 * (t // 4)'                                            , None                    , 4, 0),
    ('S2_halfsame'           , 'st' , 2, '2 * (t % 16)'                                            , None                    , 2, 0),
    ('S4_t0_t8'              , 'st' , 4, '0'                                                       , 't == 0  or  t == 8'    , 2, 0),
    ('G4_none'               , 'ldg', 4, '4 * t'                                                   , '0'                     , 0, 0),
]


@pytest.mark.parametrize("name,op,width,addr,active,m1,m2", PROBES, ids=[p[0] for p in PROBES])
def test_measured_probe(name, op, width, addr, active, m1, m2):
    a = np.array([eval(f"lambda t: {addr}")(t) for t in range(32)])  # noqa: S307 - our own table
    act = ALL if active is None else np.array([bool(eval(f"lambda t: {active}")(t)) for t in range(32)])  # noqa: S307
    if op == "ldg":
        assert gl(a, act) == (m1, m2)
    else:
        assert wf(a, width, op, act) == (m1, m2)


# --------------------------------------------------------------------------------------------------
# Whole kernels against ncu on the H200
# --------------------------------------------------------------------------------------------------


def test_naive_reference_point_exact():
    # shared/reference/ncu-metrics.md: naive 32x32 (COALESCED=1) at 2048^3.
    # Warps: 2048*2048/32 = 131,072; per k each warp issues 2 loads -> 131,072 * 2048 * 2 = 536,870,912
    # requests; sectors per k: A[row*K+k] is one float for the whole warp (1 sector) and B[k*N + 32 cols]
    # is 128 aligned bytes (4 sectors) -> 131,072 * 2048 * 5 = 1,342,177,280; FFMA = 2048^3 = 8,589,934,592.
    c = simulate(KernelConfig.parse("01:BX=32,BY=32,COALESCED=1"), 2048, 2048, 2048)
    assert c.gld_requests == 536_870_912
    assert c.gld_sectors == 1_342_177_280
    assert c.ffma_thread == 8_589_934_592


# config key, M, N, K, (ncu: gld requests, gld sectors, gst requests, gst sectors,
#  LDS instructions, LDS wavefronts, LDS bank conflicts, STS instructions, STS wavefronts, STS bank
#  conflicts, thread FFMA), measured with ncu on the H200 from the kernels of this repository
NCU_ROWS = [
    ("01:BX=32,BY=32,COALESCED=1", 2048, 2048, 2048, (536870912, 1342177280, 131072, 524288, 0, 0, 0, 0, 0, 0, 8589934592)),
    ("01:BX=16,BY=16,COALESCED=1", 2048, 2048, 2048, (536870912, 1073741824, 131072, 524288, 0, 0, 0, 0, 0, 0, 8589934592)),
    ("02:BM=32,BN=32,BK=32", 2048, 2048, 2048, (16777216, 67108864, 131072, 524288, 335544320, 402806332, 153148, 16777216, 19307324, 2530108, 8589934592)),
    ("02:BM=16,BN=16,BK=16", 2048, 2048, 2048, (33554432, 134217728, 131072, 524288, 335544320, 402989470, 336286, 33554432, 35517896, 1963464, 8589934592)),
    ("02:BM=8,BN=8,BK=8", 2048, 2048, 2048, (67108864, 268435456, 131072, 524288, 335544320, 402903452, 250268, 67108864, 71884657, 4775793, 8589934592)),
    ("03:BM=64,BN=64,BK=8,TM=8", 2048, 2048, 2048, (8388608, 33554432, 131072, 524288, 134217728, 202982920, 1656328, 8388608, 8867631, 479023, 8589934592)),
    ("04:BM=128,BN=128,BK=8,TM=8,TN=8", 2048, 2048, 2048, (4194304, 16777216, 131072, 4194304, 16777216, 83886080, 33554432, 4194304, 4612932, 418628, 8589934592)),
    ("05:BM=128,BN=128,BK=8,TM=8,TN=8", 2048, 2048, 2048, (1048576, 16777216, 32768, 1048576, 16777216, 83894708, 33563060, 2621440, 6764189, 2569885, 8589934592)),
    ("06:BM=128,BN=128,BK=8,TM=8,TN=8", 2048, 2048, 2048, (1048576, 16777216, 32768, 1048576, 16777216, 83886080, 33554432, 2621440, 6291630, 2097326, 8589934592)),
    ("05:BM=128,BN=128,BK=8,TM=8,TN=8", 1000, 1002, 1001, (508760, 10148016, 32256, 1002000, 2064384, 10321920, 4128768, 322560, 788322, 272226, 1056964608)),
    ("06:BM=128,BN=128,BK=8,TM=8,TN=8", 1000, 1004, 1003, (317704, 7063080, 8064, 251000, 2064384, 10321920, 4128768, 322560, 774149, 258053, 1056964608)),
    ("05:BM=128,BN=128,BK=8,TM=8,TN=8", 1000, 1000, 1000, (127000, 2000000, 8064, 250000, 2048000, 10240000, 4096000, 320000, 781506, 269506, 1048576000)),
    ("04:BM=128,BN=128,BK=8,TM=8,TN=8", 1000, 1001, 1002, (508512, 2985264, 32256, 1001000, 2064384, 10321920, 4128768, 516096, 541225, 25129, 1056964608)),
    ("03:BM=64,BN=64,BK=8,TM=8", 999, 1001, 1003, (1017536, 6223024, 31968, 152968, 16515072, 24881340, 108732, 1032192, 1073878, 41686, 1056964608)),
    ("02:BM=32,BN=32,BK=32", 1000, 1001, 1002, (2050048, 9685056, 32000, 153125, 41943040, 50374668, 43020, 2097152, 2467825, 370673, 1073741824)),
    ("02:BM=16,BN=16,BK=16", 777, 777, 777, (1867978, 10656324, 19061, 108738, 18823840, 22626729, 38121, 1882384, 2026147, 143763, 481890304)),
    ("01:BX=32,BY=32,COALESCED=1", 1000, 1001, 1002, (64128000, 185472000, 32000, 153125, 0, 0, 0, 0, 0, 0, 1003002000)),
    ("01:BX=16,BY=16,COALESCED=1", 999, 1001, 7, (441000, 1036122, 31500, 180062, 0, 0, 0, 0, 0, 0, 6999993)),
    ("01:BX=32,BY=32,COALESCED=0", 1000, 1001, 1002, (64192128, 1035098064, 32032, 1001000, 0, 0, 0, 0, 0, 0, 1003002000)),
    ("05:BM=64,BN=32,BK=8,TM=4,TN=8", 1024, 1024, 1024, (393216, 6291456, 8192, 262144, 3145728, 10486437, 677, 1179648, 2654504, 1081640, 1073741824)),
    ("05:BM=64,BN=32,BK=8,TM=4,TN=16", 1024, 1024, 1024, (393216, 6291456, 8192, 262144, 2621440, 5243343, 463, 1179648, 2633459, 1060595, 1073741824)),
    ("05:BM=64,BN=64,BK=16,TM=8,TN=8", 1024, 1024, 1024, (262144, 4194304, 8192, 262144, 2097152, 10485864, 4194408, 655360, 2628383, 1579807, 1073741824)),
    ("06:BM=128,BN=64,BK=32,TM=16,TN=4", 1024, 1024, 1024, (196608, 3145728, 8192, 131072, 2621440, 6291456, 0, 589824, 4456448, 3670016, 1073741824)),
    ("04:BM=64,BN=64,BK=8,TM=8,TN=2", 1024, 1024, 1024, (1048576, 4194304, 32768, 262144, 7340032, 13632382, 894, 1048576, 1159077, 110501, 1073741824)),
    ("04:BM=64,BN=64,BK=16,TM=4,TN=4", 1024, 1024, 1024, (1048576, 4194304, 32768, 524288, 4194304, 12583702, 790, 1048576, 1147071, 98495, 1073741824)),
    ("04:BM=32,BN=128,BK=32,TM=2,TN=16", 1024, 1024, 1024, (1310720, 5242880, 32768, 1048576, 4849664, 69736338, 51779474, 1310720, 1322037, 11317, 1073741824)),
    ("01:BX=32,BY=32,COALESCED=0", 2048, 2048, 2048, (536870912, 8858370048, 131072, 4194304, 0, 0, 0, 0, 0, 0, 8589934592)),
    # rung 04 configs whose SASS reloads As elements (plan_from_sass puts the surplus LDS on A)
    ("04:BM=32,BN=32,BK=8,TM=2,TN=8", 2048, 2048, 2048, (16777216, 67108864, 131072, 4194304, 46137344, 184617352, 29428104, 16777216, 17926647, 1149431, 8589934592)),
    ("04:BM=32,BN=32,BK=16,TM=8,TN=4", 2048, 2048, 2048, (16777216, 67108864, 131072, 2097152, 29360128, 117451354, 46148186, 16777216, 17165605, 388389, 8589934592)),
    ("04:BM=32,BN=128,BK=8,TM=16,TN=4", 2048, 2048, 2048, (10485760, 41943040, 131072, 2097152, 31457280, 60819984, 2576, 10485760, 10885041, 399281, 8589934592)),
    ("04:BM=32,BN=128,BK=32,TM=16,TN=8", 2048, 2048, 2048, (10485760, 41943040, 131072, 4194304, 16777216, 58834074, 21085338, 10485760, 11340337, 854577, 8589934592)),
    ("04:BM=32,BN=32,BK=16,TM=16,TN=2", 2048, 2048, 2048, (16777216, 67108864, 131072, 1048576, 60817408, 121641427, 18880979, 16777216, 17142736, 365520, 8589934592)),
    ("04:BM=32,BN=32,BK=8,TM=8,TN=2", 2048, 2048, 2048, (16777216, 67108864, 131072, 1048576, 58720256, 117470357, 8418453, 16777216, 18191671, 1414455, 8589934592)),
    ("04:BM=32,BN=32,BK=32,TM=16,TN=2", 2048, 2048, 2048, (16777216, 67108864, 131072, 1048576, 51380224, 104521140, 11197876, 16777216, 16889429, 112213, 8589934592)),
    ("04:BM=64,BN=128,BK=16,TM=8,TN=16", 2048, 2048, 2048, (6291456, 25165824, 131072, 4194304, 14680064, 161153332, 117113140, 6291456, 6291456, 0, 8589934592)),
]


@pytest.mark.parametrize("key,M,N,K,m", NCU_ROWS, ids=[f"{r[0]}@{r[1]}x{r[2]}x{r[3]}" for r in NCU_ROWS])
def test_kernel_against_ncu(key, M, N, K, m):
    cfg = KernelConfig.parse(key)
    plan = plan_from_sass(cfg, OBSERVED_SASS_LDS[key]) if key in OBSERVED_SASS_LDS else None
    c = simulate(cfg, M, N, K, plan)
    greq, gsec, sreq, ssec, ldi, ldw, ldc, sti, stw, stc, ffma = m
    # exact: everything the addresses determine
    assert (c.gld_requests, c.gld_sectors, c.gst_requests, c.gst_sectors) == (greq, gsec, sreq, ssec)
    assert c.ffma_thread == ffma
    assert (c.lds_instructions, c.sts_instructions) == (ldi, sti)
    assert c.lds_ideal_wavefronts == ldw - ldc
    assert c.sts_ideal_wavefronts == stw - stc
    # one-sided: the hardware adds conflicts with other L1 traffic (same excess in both counters)
    assert 0 <= ldc - c.lds_bank_conflicts <= sim.EXCESS_TOLERANCE["lds"] * ldw
    assert 0 <= stc - c.sts_bank_conflicts <= sim.EXCESS_TOLERANCE["sts"] * stw


# --------------------------------------------------------------------------------------------------
# The class machinery against a brute-force loop over every block and K tile
# --------------------------------------------------------------------------------------------------


def brute_force(cfg: KernelConfig, M: int, N: int, K: int, plan=None) -> dict[str, int]:
    """Global counts summed block by block, tile by tile, with absolute tile origins (no classes)."""
    lp = sim.resolve_plan(cfg, plan)
    kern = sim._describe(cfg, M, N, K, lp)
    gx, gy, _ = grid(cfg, M, N)
    gm, gn = (gy, gx) if (cfg.rung != 1 or cfg.p["COALESCED"]) else (gx, gy)
    T_ = -(-K // kern.k_tile)
    out = dict(gld_requests=0, gld_sectors=0, gst_requests=0, gst_sectors=0)
    for by in range(gm):
        for bx in range(gn):
            m0, n0 = by * kern.m_tile, bx * kern.n_tile
            rv, cv = min(kern.m_tile, M - m0), min(kern.n_tile, N - n0)
            for acc in kern.globals:
                for t in (range(T_) if acc.per == "tile" else [0]):
                    k0 = t * kern.k_tile
                    kv = min(kern.k_tile, K - k0)
                    origin = {"A": m0 * K + k0, "B": k0 * N + n0, "C": m0 * N + n0}[acc.matrix]
                    off, act = acc.fn(rv, cv, kv)
                    r, s = global_requests_sectors(off.reshape(-1, 32) + origin, act.reshape(-1, 32))
                    pre = "gld" if acc.op == "ld" else "gst"
                    out[f"{pre}_requests"] += int(r.sum())
                    out[f"{pre}_sectors"] += int(s.sum())
    return out


BRUTE = [
    ("01:BX=16,BY=16,COALESCED=1", 37, 45, 23), ("01:BX=32,BY=8,COALESCED=0", 41, 29, 5),
    ("01:BX=8,BY=8,COALESCED=1", 19, 13, 3), ("02:BM=16,BN=16,BK=16", 37, 45, 23),
    ("02:BM=8,BN=8,BK=8", 21, 19, 13), ("03:BM=64,BN=64,BK=8,TM=8", 70, 33, 19),
    ("04:BM=32,BN=32,BK=8,TM=4,TN=4", 45, 37, 29), ("04:BM=64,BN=32,BK=16,TM=8,TN=2", 70, 40, 35),
    ("05:BM=32,BN=32,BK=8,TM=4,TN=4", 45, 37, 29), ("05:BM=32,BN=32,BK=8,TM=4,TN=4", 44, 36, 28),
    ("05:BM=64,BN=64,BK=16,TM=8,TN=8", 65, 66, 67), ("06:BM=32,BN=64,BK=8,TM=4,TN=8", 33, 70, 9),
    ("06:BM=32,BN=32,BK=8,TM=4,TN=4", 40, 40, 41),
]


@pytest.mark.parametrize("key,M,N,K", BRUTE)
def test_classes_match_brute_force(key, M, N, K):
    cfg = KernelConfig.parse(key)
    c = simulate(cfg, M, N, K)
    b = brute_force(cfg, M, N, K)
    assert (c.gld_requests, c.gld_sectors, c.gst_requests, c.gst_sectors) == tuple(b.values())


# --------------------------------------------------------------------------------------------------
# Invariants, plans, API
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cfg", [c for c in classic_configs() if c.rung], ids=lambda c: c.key)
def test_invariants_at_2048(cfg):
    n = 2048
    c = simulate(cfg, n, n, n)
    g = geometry(cfg)
    assert c.ffma_thread == n ** 3                       # no padding: every FFMA is useful
    assert c.unique_dram_bytes_min == 3 * n * n * 4
    assert c.gld_requests <= c.gld_sectors <= 32 * c.gld_requests
    # C is written exactly once per K slice (rung 12's classic is split-K: each slice adds its tile into C),
    # 16 MiB of stores, at best 16 MiB / 32 B sectors, per slice
    S = g.split_k
    assert c.global_store_bytes_requested == n * n * 4 * S
    assert c.gst_sectors >= n * n * 4 // 32 * S
    # per-block-iteration counts scale to the totals (no edges, no residues at 2048)
    it = c.per_block_iteration
    tiles = c.blocks * c.k_iterations
    assert it.gld_requests * tiles == c.gld_requests and it.gld_sectors * tiles == c.gld_sectors
    assert it.lds_wavefronts * tiles == c.lds_wavefronts and it.sts_instructions * tiles == c.sts_instructions
    assert it.ffma_thread * tiles == c.ffma_thread and it.gst_sectors * c.blocks * S == c.gst_sectors
    assert it.warps == math.ceil(g.threads / 32) == c.warps_per_block
    # barriers: two per K tile (rungs 02-05), one per tile plus the prologue's (rung 06)
    T_ = c.k_iterations
    per_warp = {1: 0, 6: T_ + 1, 7: T_ + 1, 8: T_, 9: T_, 10: T_, 11: T_, 12: T_}.get(cfg.rung, 2 * T_)
    assert c.bar_warp == c.blocks * c.warps_per_block * per_warp


def test_float4_fallback_paths():
    cfg = KernelConfig.parse("05:BM=128,BN=128,BK=8,TM=8,TN=8")
    vec = simulate(cfg, 1024, 1024, 1024)
    # K % 4 != 0: every A element is a scalar LDG (4 per float4 slot); N % 4 != 0 likewise for B and C
    sc = simulate(cfg, 1024, 1023, 1021)
    assert sc.gld_requests > 3 * vec.gld_requests
    assert sc.gst_requests > 3 * vec.gst_requests
    # same bytes requested modulo the smaller matrices
    assert sc.global_load_bytes_requested < vec.global_load_bytes_requested


def test_plans():
    c4 = KernelConfig.parse("04:BM=128,BN=128,BK=8,TM=8,TN=8")
    assert source_plan(c4).lds_A == tuple((i, 1) for i in range(8))
    assert compiler_plan(c4).lds_A == ((0, 4), (4, 4)) and compiler_plan(c4).lds_B == ((0, 4), (4, 4))
    # rung 04 classic: source = 8 + 8 scalar LDS per kk -> 128 per tile; compiler = 2 + 2 LDS.128 per kk -> 32
    src, comp = simulate(c4, 2048, 2048, 2048), simulate(c4, 2048, 2048, 2048, "compiler")
    assert src.lds_instructions == 4 * comp.lds_instructions
    # rung 03 classic: the SASS has 16 LDS.128 (As rows, 2 per row) + 16 LDS per tile: 8 are Bs (one per kk),
    # the other 8 reload the last element of each As row
    c3 = KernelConfig.parse("03:BM=64,BN=64,BK=8,TM=8")
    p = plan_from_sass(c3, {"LDS": 16, "LDS.128": 16, "FFMA": 64})
    assert p.origin == "sass" and p.lds_A == ((0, 4), (4, 4)) and p.lds_B == ((0, 1),)
    assert p.extra_A == ((1, 8),) and "extra" in p.note
    # a loop unrolled over two tiles halves the counts
    assert plan_from_sass(c3, {"LDS": 32, "LDS.128": 32}, tiles_per_iteration=2) == p
    # fewer loads than any plan needs: approximate
    assert plan_from_sass(c3, {"LDS.128": 4}).origin == "sass-approx"
    # rungs 05/06 (float4 in the source) agree under every plan
    c5 = KernelConfig.parse("05:BM=128,BN=128,BK=8,TM=8,TN=8")
    a, b = simulate(c5, 512, 512, 512).to_json(), simulate(c5, 512, 512, 512, "compiler").to_json()
    assert a.pop("plan")["origin"] == "source" and b.pop("plan")["origin"] == "compiler"
    assert a == b


def test_sass_plan_fallback_and_bad_plans():
    c3 = KernelConfig.parse("03:BM=64,BN=64,BK=8,TM=8")
    assert sim.sass_plan(c3) is not None                 # model.facts or the observed table
    with pytest.raises(ConfigError):
        simulate(c3, 64, 64, 64, LoadPlan(((0, 4), (2, 4)), ((0, 1),)))      # misaligned segment
    with pytest.raises(ConfigError):
        simulate(c3, 64, 64, 64, "fastest")
    with pytest.raises(ConfigError):
        simulate(KernelConfig.parse("00:"), 64, 64, 64)


def test_cached_and_json():
    cfg = KernelConfig.parse("06:BM=128,BN=128,BK=8,TM=8,TN=8")
    a = simulate(cfg, 4096, 4096, 4096)
    assert simulate(cfg, 4096, 4096, 4096) is a
    assert isinstance(a, AccessCounts)
    d = a.to_json()
    assert d["gld_requests"] == a.gld_requests and d["per_block_iteration"]["warps"] == 8
    assert a.ncu()["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == a.gld_sectors


def test_fast_enough():
    # every register-tiling config of the regtile sweep grid at 4096^3: ~1 s on a laptop core
    grid_ = dict(BM=[32, 64, 128, 256], BN=[32, 64, 128, 256], BK=[8, 16, 32], TM=[2, 4, 8, 16], TN=[2, 4, 8, 16])
    cfgs = [c for r in (4, 5, 6) for c in grid_configs(r, **grid_)]
    assert len(cfgs) > 1000
    simulate.cache_clear()
    t0 = time.perf_counter()
    for c in cfgs:
        simulate(c, 4096, 4096, 4096)
    dt = time.perf_counter() - t0
    assert dt < 30, f"{len(cfgs)} configs took {dt:.1f} s"
    t0 = time.perf_counter()
    simulate(KernelConfig.parse("04:BM=256,BN=256,BK=32,TM=16,TN=16"), 4095, 4097, 4093)
    assert time.perf_counter() - t0 < 1.0
