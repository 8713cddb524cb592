"""tools.bank_conflicts: register-bank conflicts of FFMAs from parsed SASS (no compiler needed)."""
from __future__ import annotations

import pytest

from tools.bank_conflicts import ffma_conflicts
from tools.compiler_facts import Instr


def _i(op: str, operands: str) -> Instr:
    return Instr(0, None, op, operands, None)


def test_three_sources_in_one_bank():
    # rule "pairs" (the facts' rule, the default): every second operand in a bank
    assert ffma_conflicts([_i("FFMA.FTZ", "R1, R2, R4, R6")]) == (1, 2)
    # rule "three": a 64-bit bank serves two operands a cycle, the third waits
    assert ffma_conflicts([_i("FFMA.FTZ", "R1, R2, R4, R6")], "three") == (1, 1)


def test_sources_split_over_both_banks_cost_nothing_under_three():
    assert ffma_conflicts([_i("FFMA", "R1, R2, R4, R7")], "three") == (1, 0)
    assert ffma_conflicts([_i("FFMA", "R1, R2, R4, R7")]) == (1, 1)
    assert ffma_conflicts([_i("FFMA", "R1, R2, R4, R4")], "three") == (1, 0)   # the same register is read once
    assert ffma_conflicts([_i("FFMA", "R1, R2, R3, R3")]) == (1, 0)


def test_the_reuse_cache_serves_the_same_slot_of_the_next_instruction_only():
    # R2 marked .reuse in slot 0 is a cache hit for the next FFMA's slot 0: R4 and R6 remain, no conflict
    hit = [_i("FFMA", "R9, R2.reuse, R3, R3"), _i("FFMA", "R1, R2, R4, R6")]
    assert ffma_conflicts(hit, "three") == (2, 0) and ffma_conflicts(hit) == (2, 1)
    # the same register in another slot is not served
    miss = [_i("FFMA", "R9, R2.reuse, R3, R3"), _i("FFMA", "R1, R4, R2, R6")]
    assert ffma_conflicts(miss, "three") == (2, 1) and ffma_conflicts(miss) == (2, 2)
    # nor after an instruction in between that does not mark it
    gap = [_i("FFMA", "R9, R2.reuse, R3, R3"), _i("IADD3", "R5, R5, 0x1, RZ"), _i("FFMA", "R1, R2, R4, R6")]
    assert ffma_conflicts(gap, "three") == (2, 1) and ffma_conflicts(gap) == (2, 2)


def test_unknown_rule_is_refused():
    with pytest.raises(ValueError, match="unknown rule"):
        ffma_conflicts([], "banks")


def test_quad_counts_three_sources_in_one_of_four_banks():
    # sm_90's rule (Nsight Compute's per-instruction sampling on the H200): four banks, index mod 4
    assert ffma_conflicts([_i("FFMA", "R1, R2, R6, R10")], "quad") == (1, 1)      # 2, 6, 10: all bank 2
    assert ffma_conflicts([_i("FFMA", "R1, R2, R4, R6")], "quad") == (1, 0)       # banks 2, 0, 2: two share
    assert ffma_conflicts([_i("FFMA", "R1, R2, R6, R10")], "three") == (1, 1)     # mod 2 agrees here ...
    assert ffma_conflicts([_i("FFMA", "R1, R2, R4, R6")], "three") == (1, 1)      # ... but not here
    hit = [_i("FFMA", "R9, R2.reuse, R3, R3"), _i("FFMA", "R1, R2, R6, R10")]     # R2 from the reuse cache
    assert ffma_conflicts(hit, "quad") == (2, 0)


def test_facts_use_the_architectures_rule_and_the_model_its_cycles():
    from dataclasses import replace
    from model.facts import BANK_CONFLICT_CYCLES, Facts
    from tools.bank_conflicts import BANK_RULE, RULES
    assert BANK_RULE["sm_90"] == "quad" and "sm_86" not in BANK_RULE
    assert set(BANK_CONFLICT_CYCLES) == set(RULES)
    f = Facts.from_json({"config_key": "k", "arch": "sm_90", "nvrtc_version": "13.0", "registers": 128,
                         "loop_bank_conflicts": 10, "loop_bank_rule": "quad"})
    assert f.bank_conflict_cycles == 10 * BANK_CONFLICT_CYCLES["quad"] == 15.0
    assert replace(f, loop_bank_rule=None).bank_conflict_cycles == 10.0          # facts made before the field
    assert replace(f, loop_bank_conflicts=None).bank_conflict_cycles == 0.0


_SOURCE_CSV = '''==PROF== Connected to process 1
"Kernel Name","void sgemm(...)"
"Address","Source","Instructions Executed","stall_selected","stall_dispatch","stall_not_selected","stall_wait (Not Issued)"
"7f0000000100","FFMA R1, R2.reuse, R3, R1","100","100","20","50","9"
"7f0000000110","FFMA R4, R2, R5, R4","100","100","60","50","9"
"7f0000000120","LDS.128 R8, [R9]","50","50","10","0","9"
'''


def test_stall_summary_reads_the_source_page(tmp_path):
    """Per issued instruction: all samples / stall_selected; the base dispatch stall counts only the FFMAs marked
    conflict-free, in the same unit (stall_selected per executed instruction is 1 here)."""
    from tools.bank_conflicts import read_source_csv, stall_summary
    p = tmp_path / "src.csv"
    p.write_text(_SOURCE_CSV)
    rows = read_source_csv(p)
    assert [r["offset"] for r in rows] == [0, 0x10, 0x20]
    assert all("stall_wait (Not Issued)" not in r for r in rows)
    s = stall_summary(rows, {0: False, 0x10: True})
    assert s["cycles"] == pytest.approx((250 + 90 + 100) / 250)
    assert s["dispatch"] == pytest.approx(90 / 250) and s["not_selected"] == pytest.approx(100 / 250)
    assert s["reasons"] == pytest.approx({"not_selected": 100 / 250, "dispatch": 90 / 250})
    assert list(s["reasons"]) == ["not_selected", "dispatch"]                 # largest first, selected left out
    assert s["base_dispatch_per_ffma"] == pytest.approx(20 / 100)          # the conflicted FFMA left out
    assert stall_summary(rows, {0: False, 0x10: False})["base_dispatch_per_ffma"] == pytest.approx(80 / 200)


def test_slot_classes_name_which_uncached_sources_share_a_bank_of_four():
    from tools.bank_conflicts import slot_class, uncached_slots

    def classes(instrs):
        return [slot_class(s) for _, s in uncached_slots(instrs)]
    assert slot_class({0: 2, 1: 6, 2: 10}) == "three"           # banks 2, 2, 2
    assert slot_class({0: 2, 1: 6, 2: 11}) == "ab"              # a and b in bank 2
    assert slot_class({0: 2, 1: 7, 2: 10}) == "ac"              # a and c in bank 2
    assert slot_class({0: 2, 1: 7, 2: 11}) is None              # b and c share bank 3: measured to cost nothing
    assert slot_class({0: 2, 1: 2, 2: 11}) is None              # one register read once
    assert slot_class({1: 7, 2: 11}) is None                    # a from the reuse cache
    # the reuse cache serves slot 0 of the next FFMA: R2 is not read, so R6 / R10 are not an "ab" pair with it
    hit = [_i("FFMA", "R9, R2.reuse, R3, R3"), _i("FFMA", "R1, R2, R6, R10")]
    assert [s for _, s in uncached_slots(hit)][1] == {1: 6, 2: 10}
    assert classes(hit) == [None, None]
    miss = [_i("FFMA", "R1, R2, R6, R11"), _i("FFMA", "R1, R2, R7, R10"), _i("IADD3", "R5, R5, 0x1, RZ"),
            _i("FFMA", "R1, R2, R6, R10")]
    assert classes(miss) == ["ab", "ac", "three"]



def test_slot_classes_count_which_uncached_sources_share_a_bank():
    """tools.bank_conflicts.ffma_slot_classes: three in one bank of four, else a-b, else a-c; b-c is no class."""
    from tools.bank_conflicts import ffma_slot_classes
    assert ffma_slot_classes([_i("FFMA", "R1, R2, R6, R10")]) == {"three": 1, "ab": 0, "ac": 0}
    assert ffma_slot_classes([_i("FFMA", "R1, R2, R6, R11")]) == {"three": 0, "ab": 1, "ac": 0}
    assert ffma_slot_classes([_i("FFMA", "R1, R2, R7, R6")]) == {"three": 0, "ab": 0, "ac": 1}
    assert ffma_slot_classes([_i("FFMA", "R1, R3, R2, R6")]) == {"three": 0, "ab": 0, "ac": 0}   # b and c
    # a served by the reuse cache: a-c no longer counts
    hit = [_i("FFMA", "R9, R2.reuse, R3, R5"), _i("FFMA", "R1, R2, R7, R6")]
    assert ffma_slot_classes(hit)["ac"] == 0
    assert ffma_slot_classes([_i("IADD3", "R2, R6, R10, RZ")]) == {"three": 0, "ab": 0, "ac": 0}


def test_slot_class_issue_cycles_are_the_architectures_measured_costs():
    from dataclasses import replace
    from model.facts import SLOT_CLASS_ISSUE_CYCLES, Facts
    f = Facts.from_json({"config_key": "k", "arch": "sm_90", "nvrtc_version": "13.0", "registers": 128,
                         "loop_slot_classes": {"three": 5, "ab": 7, "ac": 11}})
    cost = SLOT_CLASS_ISSUE_CYCLES["sm_90"]
    assert f.slot_class_issue_cycles == pytest.approx(sum(cost[c] * n for c, n in (("three", 5), ("ab", 7), ("ac", 11))
                                                          if c in cost))
    assert f.slot_class_issue_cycles > 0
    assert replace(f, loop_slot_classes=None).slot_class_issue_cycles == 0.0       # facts made before the field
    assert replace(f, arch="sm_86").slot_class_issue_cycles == 0.0                 # not measured there


def test_shipped_sm90_facts_carry_slot_classes_consistent_with_the_quad_count():
    """Every sm_90 config with a steady path has its classes; ``three`` is the quad rule's conflict count."""
    from model.facts import load_facts
    n = 0
    for k, f in load_facts("sm_90").items():
        if f.loop_found and f.loop_path_instructions:
            assert f.loop_slot_classes is not None, k
            assert f.loop_slot_classes["three"] == (f.loop_bank_conflicts or 0), k
            assert sum(f.loop_slot_classes.values()) <= f.loop_ffma, k
            n += 1
    assert n > 2000
