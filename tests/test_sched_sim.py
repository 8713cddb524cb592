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
