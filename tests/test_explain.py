"""``analyze.py explain`` reads the model's own per-round cycles: one round (every resident block one K tile)
times the K tiles each block runs must come close to the SM time the model predicts (the rest is the
prologue and epilogue), with and without split-K (whose S slices each run 1/S of K)."""
from __future__ import annotations

import pytest

from analysis.explain import explain
from model.registry import KernelConfig
from model.spec import load_gpu
from model.timing import rates

H200 = load_gpu("h200")
CASES = [
    # (config, M, N, K): a split-K config at the shape it was built for, and the same loop without split-K
    ("12:BM=128,BN=256,BK=8,WM=64,WN=32,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=4,SPREAD=1", 512, 512, 16384),
    ("11:BM=128,BN=128,BK=16,WM=64,WN=64,WNITER=2,TM=8,TN=4,SWZ=1,SPLITK=1,STAGES=3,SPREAD=16", 4096, 4096, 4096),
    ("06:BM=128,BN=128,BK=8,TM=8,TN=8", 2048, 2048, 2048),
]


@pytest.mark.parametrize("key,M,N,K", CASES)
def test_round_times_iterations_is_the_sm_time(key, M, N, K) -> None:
    cfg = KernelConfig.parse(key)
    d = explain(H200, cfg, M, N, K)
    w, rnd = d["waves"], d["per_round_cycles"]
    s = max(1, dict(cfg.params).get("SPLITK", 1))
    bk = dict(cfg.params).get("BK", 1)
    assert w["iterations_per_round"] == -(-(-(-K // bk)) // s)
    rounds = w["full_rounds"] + (1 if w["partial_round_blocks"] else 0)
    loop_s = rounds * w["iterations_per_round"] * rnd["round"] / rates(H200).clock_hz
    t_sm = d["prediction"]["t_sm_s"]
    assert 0.8 * t_sm < loop_s <= 1.02 * t_sm, (loop_s, t_sm)


def test_a_k_or_n_not_a_multiple_of_four_is_named_as_the_known_weak_spot() -> None:
    from model.timing import predict
    cfg = KernelConfig.parse("06:BM=128,BN=128,BK=8,TM=8,TN=8")
    odd = predict(H200, cfg, 1409, 2711, 1187)
    assert any(n.startswith("K = 1187 and N = 2711 not a multiple of 4") for n in odd.notes)
    assert any(n.startswith("N = 2711 not a multiple") for n in predict(H200, cfg, 1409, 2711, 1188).notes)
    assert not any("not a multiple of 4" in n for n in predict(H200, cfg, 1409, 2712, 1188).notes)


def test_the_why_names_once_per_block_work_and_c_stored_four_bytes_at_a_time() -> None:
    # at four blocks of rung 06 the epilogue is about half the SM time; at N % 4 != 0 its C stores go four bytes at a
    # time (model.facts.STORE_PATH), which the explanation says; at an aligned N it does not, and at 2048^3 (many
    # rounds of 256 K tiles) the once-per-block work is too small to name
    cfg = KernelConfig.parse("06:BM=128,BN=128,BK=8,TM=8,TN=8")
    odd = " ".join(explain(H200, cfg, 123, 397, 65)["why"])
    assert "once-per-block work" in odd and "four bytes at a time" in odd
    even = " ".join(explain(H200, cfg, 123, 400, 64)["why"])
    assert "once-per-block work" in even and "four bytes at a time" not in even
    assert "once-per-block work" not in " ".join(explain(H200, cfg, 2048, 2048, 2048)["why"])


def test_split_k_waves_count_the_slices_and_name_the_last_waves_deal() -> None:
    # rung 12's split-K 16 at 3072x22x2240: 24 tiles x 16 slices = 384 blocks, 2 an SM: the busiest SM runs
    # ceil(384 / 132) = 3 (the even deal), 4 if the later blocks fill the freed slots in random order (block_trace)
    cfg = KernelConfig.parse("12:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=3,SPREAD=8")
    d = explain(H200, cfg, 3072, 22, 2240)
    w = d["waves"]
    assert (w["blocks"], w["busiest_sm_blocks"], w["full_rounds"], w["partial_round_blocks"]) == (384, 3, 1, 1)
    assert w["busiest_sm_blocks_refill_random"] == 4 and w["time_refill_random_s"] > 1.1 * d["prediction"]["time_s"]
    assert any("slots that free first" in n and "busiest SM 3 blocks" in n for n in d["notes"])
