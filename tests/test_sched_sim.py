"""tools.sched_sim: one scheduler's warps over a canned loop (no compiler, no GPU)."""
from __future__ import annotations

import pytest

from tools.compiler_facts import Instr, warp_trace
from tools.sched_sim import simulate, wavefronts


def I(op: str, operands: str, stall: int = 1, pred: str | None = None) -> Instr:  # noqa: E743
    return Instr(0, pred, op, operands, None, stall)


FFMAS = [I("FFMA", f"R{10 + i}, R2, R3, R{10 + i}") for i in range(10)]


def test_one_warp_of_independent_ffmas_issues_one_a_cycle():
    assert simulate(FFMAS, 1) == pytest.approx(10.0)


def test_stall_counts_leave_slots_that_a_second_warp_fills():
    slow = [I("FFMA", f"R{10 + i}, R2, R3, R{10 + i}", stall=2) for i in range(10)]
    assert simulate(slow, 1) == pytest.approx(20.0)
    assert simulate(slow, 2) == pytest.approx(20.0)      # two warps in the same 20 cycles: one issue a cycle
    assert simulate(slow, 3) == pytest.approx(30.0)      # three: the scheduler is the limit


def test_a_shared_load_result_waits_for_its_latency_like_the_single_warp_trace():
    loop = [I("LDS.128", "R4, [R1]"), I("FFMA", "R10, R4, R5, R10"), I("FFMA", "R11, R6, R7, R11")]
    one = simulate(loop, 1, pipe=0.0, shared_latency=30.0)
    ends = warp_trace(loop, 600.0, 30.0, repeat=6)["ends"]
    assert one == pytest.approx((ends[-1] - ends[1]) / 4, abs=1.0)
    assert one > 30


def test_the_memory_pipe_is_shared_by_the_warps():
    loads = [I("LDS.128", f"R{4 * i + 20}, [R1+{16 * i}]") for i in range(8)]     # 32 wavefronts per warp
    loop = loads + [I("FFMA", "R10, R48, R49, R10")]                                # uses the last load
    assert wavefronts(loads[0]) == 4 and wavefronts(I("LDGSTS.E", "[R2], desc[UR4][R8.64]")) == 1
    assert wavefronts(I("LDS", "RZ, [RZ]", pred="!PT")) == 0        # ptxas padding reads nothing
    assert simulate(loads, 1, pipe=4.0) == pytest.approx(8.0)      # nothing waits for the loads: issue-bound
    one = simulate(loop, 1, pipe=4.0, shared_latency=30.0)
    four = simulate(loop, 4, pipe=4.0, shared_latency=30.0)
    assert one == pytest.approx(8 * 4 * 4 + 30 + 1)   # one warp: the pipe's 32 x 4 cycles, then the load latency
    assert four == pytest.approx(4 * 8 * 4 * 4, rel=0.02)   # four warps keep the shared pipe busy: pipe-bound


def test_a_barrier_waits_for_the_block():
    loop = [I("FFMA", "R10, R2, R3, R10", stall=5), I("BAR.SYNC.DEFER_BLOCKING", "0x0")]
    # one block: the first warp waits at the barrier for the second, and loses its slot; two blocks: no wait
    assert simulate(loop, 2, blocks=1) > simulate(loop, 2, blocks=2)
    with pytest.raises(ValueError):
        simulate(loop, 0)
    with pytest.raises(ValueError):
        simulate([], 1)


# --- the loop_queue fact (the order of the copies at the pipe) -----------------------------------------------------

def _copies_then_compute(spread: bool) -> list:
    """Eight 16-byte copies (4 wavefronts each) and four shared loads feeding 64 FFMAs: the copies in one cluster at
    the top, or one copy every 8 FFMAs."""
    copies = [I("LDGSTS.E.BYPASS.128", f"[R2+{512 * i}], desc[UR4][R8.64]") for i in range(8)]
    loads = [I("LDS.128", f"R{20 + 4 * i}, [R1+{16 * i}]") for i in range(4)]
    ffmas = [I("FFMA", f"R{40 + i % 16}, R{20 + i % 16}, R5, R{40 + i % 16}") for i in range(64)]
    if not spread:
        return copies + loads + ffmas
    body = list(loads)
    for j in range(8):
        body += [copies[j]] + ffmas[8 * j: 8 * j + 8]
    return body


def test_a_cluster_of_copies_costs_more_than_the_same_copies_spread():
    from tools.sched_sim import queue_excess
    clustered = queue_excess(_copies_then_compute(False), 2, 2)
    spread = queue_excess(_copies_then_compute(True), 2, 2)
    for q in (clustered, spread):
        assert q["pipe_bound"] == pytest.approx(4.0 * 2 * (8 * 4 + 4 * 4))     # two warps' wavefronts x 4 cycles
        assert q["simulated"] >= max(q["issue_bound"], q["pipe_bound"])      # never faster than its fluid bounds

    def beyond(q):
        return q["simulated"] - max(q["issue_bound"], q["pipe_bound"])
    assert clustered["simulated"] > spread["simulated"]
    assert beyond(clustered) > beyond(spread)


def test_pipe_scale_maps_the_sass_wavefronts_onto_the_simulated_ones():
    from tools.sched_sim import pipe_scale
    loop = _copies_then_compute(False)        # 16 LDS wavefronts, 32 copy wavefronts (conflict-free, no broadcast)
    sc = pipe_scale(loop, lds_wavefronts=8.0, sts_wavefronts=32.0)
    assert sc == {"LDS": 0.5, "STS": 1.0, "LDGSTS": 1.0}
    half = simulate(loop, 2, 2, pipe=4.0, scale=sc)
    assert half < simulate(loop, 2, 2, pipe=4.0)      # half the shared-load wavefronts: a shorter queue
    assert pipe_scale(FFMAS, 1.0, 1.0) == {"LDS": 1.0, "STS": 1.0, "LDGSTS": 1.0}


def test_merge_keeps_only_rows_of_the_shipped_steady_path(tmp_path, monkeypatch):
    import json
    from tools import compiler_facts as cf
    from tools import sched_sim as ss
    import model.facts as mf
    key = "11:BM=64,BN=64,BK=16,WM=32,WN=32,WNITER=1,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=3,SPREAD=1"
    shipped = cf.read_cache(mf.FACTS_DIR / "sm_90.json")["sm_90"][key]
    monkeypatch.setattr(cf, "tool_versions", lambda: {"nvrtc": "13.0"})   # no NVRTC needed to write a facts file
    facts_dir = tmp_path / "facts"
    facts_dir.mkdir()
    cf.write_facts(facts_dir / "sm_90.json", {"sm_90": {key: shipped}}, merge=False)
    monkeypatch.setattr(mf, "FACTS_DIR", facts_dir)
    q = dict(shipped["loop_queue"])
    rows = [{"key": key, "arch": "sm_90", "loop_queue": {**q, "path_instructions": 1}},   # another compile: refused
            {"key": "11:nope", "arch": "sm_90", "loop_queue": q},                         # not shipped: refused
            {"key": key, "arch": "sm_90", "error": "FactsError: x"}]                      # failed: refused
    f = tmp_path / "q.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert ss.merge_queue([f]) == 0
    f.write_text(json.dumps({"key": key, "arch": "sm_90", "loop_queue": {**q, "simulated": [7.0, 7.0]}}) + "\n")
    assert ss.merge_queue([f]) == 1
    assert cf.read_cache(facts_dir / "sm_90.json")["sm_90"][key]["loop_queue"]["simulated"] == [7.0, 7.0]
