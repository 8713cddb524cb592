"""Tests for the shipped compiler facts (model/facts.py) and their generator (tools/compiler_facts.py).

The data tests need nothing but the shipped JSON. The SASS-parsing tests run on canned text. Tests that
compile with NVRTC are skipped unless the optional requirements-facts.txt is installed (CI does not).
"""
from __future__ import annotations

import json
import os
import re
import tempfile

import pytest

from model.facts import FACTS_DIR, Facts, available_archs, facts_for, load_facts, registers_for, stale_keys
from model.registry import ELEMENT_FALLBACK_B, KernelConfig, classic_configs, geometry, is_valid
from model.spec import load_gpu
from tools import compiler_facts as cfacts

CLASSIC = [c for c in classic_configs() if c.rung != 0]


def _all_facts():
    for arch in available_archs():
        for key, f in load_facts(arch).items():
            yield arch, key, f


# --------------------------------------------------------------------------------------------------
# Shipped data
# --------------------------------------------------------------------------------------------------


def test_shipped_facts_load():
    archs = available_archs()
    assert "sm_90" in archs
    for arch in archs:
        facts = load_facts(arch)
        assert facts, arch
        data = json.loads((FACTS_DIR / f"{arch}.json").read_text())
        assert data["schema_version"] == cfacts.SCHEMA_VERSION
        assert list(data["archs"]) == [arch]
        for key, f in facts.items():
            assert isinstance(f, Facts) and f.arch == arch and f.config_key == key
            assert re.fullmatch(r"\d+\.\d+", f.nvrtc_version)


def test_no_compile_errors_shipped():
    for arch in available_archs():
        raw = json.loads((FACTS_DIR / f"{arch}.json").read_text())["archs"][arch]["facts"]
        errors = sorted(k for k, d in raw.items() if "error" in d)
        assert not errors, f"{arch}: configs that failed to compile: {errors[:5]}"


def test_every_classic_config_has_sm90_facts():
    h200 = load_gpu("h200")
    for cfg in CLASSIC:
        f = facts_for(cfg, "sm_90")
        assert f is not None, f"no sm_90 facts for {cfg.key}"
        assert registers_for(cfg, h200) == f.registers  # a GPUSpec works as the arch
        assert 16 <= f.registers <= 255
        assert f.loop_found, cfg.key


def test_grid_and_block_families_covered_on_sm90():
    have = load_facts("sm_90")
    missing = [c.key for c in cfacts.family_configs("all") if c.key not in have]
    assert not missing, f"{len(missing)} configs without sm_90 facts, e.g. {missing[:3]}"


def test_no_spills_in_classic_register_tiled_configs():
    for arch in available_archs():
        for cfg in CLASSIC:
            if cfg.rung in (4, 5, 6):
                f = facts_for(cfg, arch)
                assert f is not None and not f.spills, (arch, cfg.key, f and f.local_bytes)
                assert f.sass_total.get("LDL", 0) == 0 and f.sass_total.get("STL", 0) == 0


def test_loop_ffma_is_whole_k_tiles():
    """loop FFMA = BK*TM*TN per K tile (rungs 02-06); more than one tile only when the compiler unrolled
    the K loop, which it does only for small rung-02 tiles."""
    for arch, key, f in _all_facts():
        cfg = KernelConfig.parse(key)
        if cfg.rung < 2 or not f.loop_found:
            continue
        g = geometry(cfg)
        tile = g.BK * g.TM * g.TN
        assert f.expected_loop_ffma == tile
        assert f.loop_ffma == tile * f.loop_tiles, (arch, key, f.loop_ffma, tile)
        assert f.loop_ffma_ok == (f.loop_tiles == 1)
        if f.loop_tiles != 1:   # the compiler unrolls only rung 02's small K loops (BK FFMAs a tile)
            assert cfg.rung == 2 and g.BK <= 16, (arch, key, f.loop_tiles)


def test_loop_found_for_tiled_rungs():
    for arch, key, f in _all_facts():
        if int(key[:2]) >= 2:
            assert f.loop_found, (arch, key)
            assert f.sass_loop.get("BAR", 0) >= 1, (arch, key)   # __syncthreads() in the K loop


def test_classic_loop_ffma_exact_on_sm90():
    for cfg in CLASSIC:
        if cfg.rung >= 3:
            f = facts_for(cfg, "sm_90")
            g = geometry(cfg)
            assert f.loop_ffma == g.BK * g.TM * g.TN and f.loop_ffma_ok, cfg.key


def test_steady_path_is_part_of_the_loop():
    for arch, key, f in _all_facts():
        if not f.loop_found:
            continue
        assert sum(f.sass_loop_path.values()) == f.loop_path_instructions <= f.loop_instructions
        for fam, n in f.sass_loop_path.items():
            assert n <= f.sass_loop.get(fam, 0), (arch, key, fam)
        assert f.per_iteration("FFMA") == f.loop_ffma, (arch, key)   # no FFMA sits in a branch
        if f.loop_branches == 0:
            assert dict(f.sass_loop_path) == dict(f.sass_loop)


def test_vectorised_rungs_take_the_aligned_path():
    """Rungs 05/06: the steady iteration loads A and B tiles with LDG.128 only (scalar fallback skipped);
    rung 06 prefetches the next tile (its LDG.128s are on the path), with one barrier per tile."""
    for arch, key, f in _all_facts():
        cfg = KernelConfig.parse(key)
        if cfg.rung not in (5, 6) or f.spills:
            continue
        g = geometry(cfg)
        loads = -(-g.BM * g.BK // 4 // g.threads) + -(-g.BK * g.BN // 4 // g.threads)
        assert f.per_iteration("LDG") == 0, (arch, key)
        assert f.per_iteration("LDG.128") == loads, (arch, key, f.per_iteration("LDG.128"), loads)
        assert f.per_iteration("BAR") == (1 if cfg.rung == 6 else 2), (arch, key)


def test_facts_are_self_consistent():
    for arch, key, f in _all_facts():
        assert sum(f.sass_total.values()) == f.total_instructions
        if f.loop_found:
            assert sum(f.sass_loop.values()) == f.loop_instructions
            for fam, n in f.sass_loop.items():
                assert n <= f.sass_total.get(fam, 0), (arch, key, fam)
            around = f.prologue_instructions + f.epilogue_instructions + f.loop_instructions
            if KernelConfig.parse(key).rung in ELEMENT_FALLBACK_B:
                # two instantiations of the K loop: the other operand path's code is in none of the three
                assert around < f.total_instructions, (arch, key)
            else:
                assert around == f.total_instructions, (arch, key)
            assert f.loop("FFMA") == f.loop_ffma
        assert f.local_bytes >= 0 and f.registers <= 255
        assert f.spills == bool(f.sass_total.get("LDL", 0) or f.sass_total.get("STL", 0) or f.local_bytes)


def test_registers_fit_the_block():
    """ptxas must fit registers x threads in the 64 Ki register file (the kernels' __launch_bounds__)."""
    for arch, key, f in _all_facts():
        cfg = KernelConfig.parse(key)
        threads = geometry(cfg).threads
        assert f.registers * threads <= 65536, (arch, key, f.registers, threads)


def test_static_shared_memory_matches_geometry():
    for arch, key, f in _all_facts():
        g = geometry(KernelConfig.parse(key))
        assert f.shared_static_bytes == g.static_smem_bytes, (arch, key)


def test_facts_keys_are_valid_configs():
    h200 = load_gpu("h200")
    for key in load_facts("sm_90"):
        assert is_valid(KernelConfig.parse(key), h200), key


def test_unknown_arch_is_empty():
    assert load_facts("sm_10") == {}
    assert registers_for(CLASSIC[0], "sm_10") is None


def test_stale_keys_runs():
    # Only a report (kernels may be edited by others); the list must be computable.
    assert isinstance(stale_keys("sm_90"), list)


# --------------------------------------------------------------------------------------------------
# SASS parsing on canned text (no tools needed)
# --------------------------------------------------------------------------------------------------

CANNED = """
//--------------------- .text._Z4demov --------------------------
\t.section\t.text._Z4demov,"ax",@progbits
.text._Z4demov:
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   ISETP.GE.AND P0, PT, R0, 0x10, PT ;
        /*0020*/               @P0 BRA `(.L_x_0) ;
.L_x_2:
        /*0030*/                   LDS.128 R4, [R0] ;
        /*0040*/                   LDG.E.128.CONSTANT R8, desc[UR4][R2.64] ;
        /*0050*/                   FFMA.FTZ R12, R4, R8, R12 ;
        /*0060*/               @!P1 BRA `(.L_x_1) ;
        /*0070*/                   FFMA R13, R5, R9, R13 ;
.L_x_1:
        /*0080*/                   IMAD.MOV.U32 R1, RZ, RZ, R1 ;
        /*0090*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*00a0*/               @P2 BRA `(.L_x_3) ;
        /*00b0*/                   IADD3 R0, R0, 0x1, RZ ;
        /*00c0*/               @!P3 BRA `(.L_x_2) ;
.L_x_0:
        /*00d0*/                   STG.E desc[UR4][R2.64], R12 ;
        /*00e0*/                   EXIT ;
.L_x_3:
        /*00f0*/                   FFMA R14, R6, R10, R14 ;
        /*0100*/                   BRA `(.L_x_1) ;
.L_x_4:
        /*0110*/                   BRA `(.L_x_4);
        /*0120*/                   NOP;
"""


def test_family():
    assert cfacts.family("IMAD.MOV.U32") == "IMAD"
    assert cfacts.family("FFMA.FTZ") == "FFMA"
    assert cfacts.family("LDG.E.128.CONSTANT") == "LDG.128"
    assert cfacts.family("LDG.E.CONSTANT") == "LDG"
    assert cfacts.family("LDS.64") == "LDS.64"
    assert cfacts.family("STS.128") == "STS.128"
    assert cfacts.family("BAR.SYNC.DEFER_BLOCKING") == "BAR"
    assert cfacts.Instr(0, "!PT", "LDS", "RZ, [RZ]", None).family == "NOP"     # never executed
    assert cfacts.Instr(0, "!P0", "LDS", "R1, [R2]", None).family == "LDS"


def test_canned_sass_loop():
    funcs = cfacts.parse_nvdisasm(CANNED)
    instrs, labels = funcs["_Z4demov"]
    assert labels[".L_x_2"] == 0x30 and labels[".L_x_4"] == 0x110
    a = cfacts.analyse_sass(instrs, labels)
    assert a["total_instructions"] == 17            # trailing BRA-self + NOP dropped
    assert a["loop_found"] and a["loop_start"] == 0x30
    # the loop: 0x30..0xc0 plus the out-of-line block at 0xf0 that branches back into it
    assert a["loop_instructions"] == 12
    assert a["loop_ffma"] == 3
    assert a["sass_loop"]["LDS.128"] == 1 and a["sass_loop"]["LDG.128"] == 1
    assert a["loop_branches"] == 2                  # @!P1 and @P2 (the back edge not counted)
    # steady state: same bytes either way round the branches, so the shortest path 0x30 -> 0x80 -> 0xb0
    assert a["loop_path_instructions"] == 9
    assert a["sass_loop_path"] == {"BAR": 1, "BRA": 3, "FFMA": 1, "IADD3": 1, "IMAD": 1, "LDG.128": 1,
                                   "LDS.128": 1}
    assert a["prologue_instructions"] == 3 and a["epilogue_instructions"] == 2


# Two sibling K loops with the same FFMAs, as rung 10 instantiates one per B copy path: the 4-byte path
# (three LDGSTS.E, each behind ptxas's never-executed `@!PT LDS RZ, [RZ]` padding) and the 16-byte one.
SIBLINGS = """
//--------------------- .text._Z4twov --------------------------
\t.section\t.text._Z4twov,"ax",@progbits
.text._Z4twov:
        /*0000*/                   ISETP.NE.AND P0, PT, R0, RZ, PT ;
        /*0010*/               @P0 BRA `(.L_x_1) ;
.L_x_0:
        /*0020*/              @!PT LDS RZ, [RZ] ;
        /*0030*/                   LDGSTS.E [R2], desc[UR4][R4.64] ;
        /*0040*/              @!PT LDS RZ, [RZ] ;
        /*0050*/                   LDGSTS.E [R2+0x4], desc[UR4][R4.64+0x4] ;
        /*0060*/              @!PT LDS RZ, [RZ] ;
        /*0070*/                   LDGSTS.E [R2+0x8], desc[UR4][R4.64+0x8] ;
        /*0080*/                   LDS.128 R8, [R3] ;
        /*0090*/                   FFMA R12, R8, R9, R12 ;
        /*00a0*/                   FFMA R13, R10, R11, R13 ;
        /*00b0*/               @P1 BRA `(.L_x_0) ;
        /*00c0*/                   EXIT ;
.L_x_1:
        /*00d0*/              @!PT LDS RZ, [RZ] ;
        /*00e0*/                   LDGSTS.E.128 [R2], desc[UR4][R4.64] ;
        /*00f0*/                   LDS.128 R8, [R3] ;
        /*0100*/                   FFMA R12, R8, R9, R12 ;
        /*0110*/                   FFMA R13, R10, R11, R13 ;
        /*0120*/               @P1 BRA `(.L_x_1) ;
        /*0130*/                   EXIT ;
"""


def test_never_executed_padding_is_no_shared_load():
    instrs, labels = cfacts.parse_nvdisasm(SIBLINGS)["_Z4twov"]
    pad = [i for i in instrs if i.pred == "!PT"]
    assert len(pad) == 4 and all(i.op == "LDS" and i.family == "NOP" for i in pad)
    a = cfacts.analyse_sass(instrs, labels)
    assert "LDS" not in a["sass_loop_path"] and a["sass_loop_path"]["NOP"] == 1
    assert "L" in a["loop_order"] and a["loop_order"].count("L") == 1      # the LDS.128 only


def test_sibling_loops_take_the_aligned_one():
    instrs, labels = cfacts.parse_nvdisasm(SIBLINGS)["_Z4twov"]
    a = cfacts.analyse_sass(instrs, labels)
    # both loops have 2 FFMAs; the one with the 16-byte copy is shorter and is the steady state
    assert a["loop_start"] == 0xd0 and a["loop_instructions"] == 6
    assert a["sass_loop_path"].get("LDGSTS.128") == 1 and "LDGSTS" not in a["sass_loop_path"]
    # the code around it: the entry block before, its EXIT after; the other loop and its EXIT in neither
    assert a["prologue_instructions"] == 2 and a["epilogue_instructions"] == 1


def test_async_rungs_count_no_padding_as_shared_loads():
    """Rungs 08-11 read their fragments with LDS.128 only: a scalar LDS in their steady iteration would be
    ptxas's `@!PT LDS` padding counted as a load; rung 10's and 11's steady loop is the aligned one (B by
    LDGSTS.128)."""
    n = 0
    for arch, key, f in _all_facts():
        cfg = KernelConfig.parse(key)
        if cfg.rung not in (8, 9, 10, 11):
            continue
        n += 1
        assert f.per_iteration("LDS") == 0, (arch, key)
        assert f.per_iteration("NOP") % 3 == 0, (arch, key)
        assert f.per_iteration("LDGSTS") + f.per_iteration("LDGSTS.128") > 0, (arch, key)   # the copies' path
        if cfg.rung in (10, 11):
            assert f.per_iteration("LDGSTS.128") > 0, (arch, key)
    assert n > 300


def test_parse_ptxas_and_resource_usage():
    log = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z1fv' for 'sm_90'
ptxas info    : Function properties for _Z1fv
ptxas         .     16 bytes stack frame, 12 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 2048 bytes smem
"""
    p = cfacts.parse_ptxas_log(log)["_Z1fv"]
    assert p == {"stack": 16, "spill_stores": 12, "spill_loads": 8, "registers": 255, "barriers": 1, "smem": 2048}
    ru = cfacts.parse_resource_usage(
        "Resource usage:\n Common:\n  GLOBAL:0\n Function _Z1fv:\n"
        "  REG:255 STACK:16 SHARED:3072 LOCAL:16 CONSTANT[0]:564 TEXTURE:0 SURFACE:0 SAMPLER:0\n")
    assert ru["_Z1fv"]["REG"] == 255 and ru["_Z1fv"]["SHARED"] == 3072 and ru["_Z1fv"]["LOCAL"] == 16


def test_config_families():
    assert len(cfacts.family_configs("classic")) == len(CLASSIC)
    blocks = cfacts.family_configs("blocks")
    assert {c.rung for c in blocks} == {1, 2}
    grid = cfacts.family_configs("grid")
    assert {c.rung for c in grid} == {4, 5, 6}
    assert len(cfacts.resolve_configs(["classic", CLASSIC[0].key])) == len(CLASSIC)


# --------------------------------------------------------------------------------------------------
# Needs NVRTC (requirements-facts.txt)
# --------------------------------------------------------------------------------------------------


def _tools_available() -> str | None:
    try:
        cfacts.nvrtc_version()
        cfacts.find_tool("nvdisasm")
        cfacts.find_tool("cuobjdump")
    except Exception as exc:  # noqa: BLE001
        return f"NVRTC / CUDA binary utilities not installed (pip install -r requirements-facts.txt): {exc}"
    return None


needs_nvrtc = pytest.mark.skipif(_tools_available() is not None, reason=str(_tools_available()))

SMALL = KernelConfig.make(4, BM=64, BN=64, BK=8, TM=4, TN=4)


@needs_nvrtc
@pytest.mark.parametrize("cfg", [SMALL, CLASSIC[-1]], ids=lambda c: c.key)
def test_fresh_compile_matches_shipped(cfg):
    shipped = facts_for(cfg, "sm_90")
    if shipped is None:
        pytest.skip(f"{cfg.key} not shipped")
    fresh = cfacts.facts(cfg, "sm_90")
    if fresh["source_sha256"] != shipped.source_sha256:
        pytest.skip(f"{cfg.info.file} changed since the facts were generated: regenerate them")
    if fresh["nvrtc_version"] != shipped.nvrtc_version:
        pytest.skip(f"installed NVRTC {fresh['nvrtc_version']} != shipped {shipped.nvrtc_version}")
    assert fresh["registers"] == shipped.registers
    assert fresh["local_bytes"] == shipped.local_bytes
    assert fresh["sass_loop"] == dict(shipped.sass_loop)
    assert fresh["sass_total"] == dict(shipped.sass_total)


@needs_nvrtc
def test_compile_cubin_is_an_elf():
    cub = cfacts.compile_cubin(SMALL, "sm_89")
    assert cub[:4] == b"\x7fELF"


@needs_nvrtc
def test_batched_program_gives_the_same_code_as_one_expression():
    """The generator batches name expressions; CuPy compiles one per program: same SASS per function."""
    other = KernelConfig.make(4, BM=128, BN=64, BK=16, TM=8, TN=4)

    def sass(exprs):
        comp = cfacts.compile_program("04_reg2d.cu", exprs, "sm_90")
        with tempfile.TemporaryDirectory() as td:
            p = os.path.join(td, "x.cubin")
            with open(p, "wb") as fh:
                fh.write(comp.cubin)
            funcs = cfacts.disassemble(p)
        out = {}
        for e in exprs:
            ins, labels = funcs[comp.lowered[e]]
            out[e] = [(i.addr, i.op, re.sub(r"`\(([^)]+)\)", lambda m: hex(labels[m.group(1)]), i.operands))
                      for i in ins]
        return out

    batch = sass([SMALL.name_expression, other.name_expression])
    assert batch[SMALL.name_expression] == sass([SMALL.name_expression])[SMALL.name_expression]


def test_cp_async_wait_counts_the_groups_it_may_leave_pending() -> None:
    """``DEPBAR.LE SB0, 0x1`` (cp.async.wait_group 1) waits for all but the newest commit group: the count is
    the operand after the comma, not the digit of ``SB0`` (a misparse made every wait a wait for all)."""
    from tools import compiler_facts as cf

    def i(op, ops=""):
        return cf.Instr(0, None, op, ops, None)

    two = [i("LDGSTS.E", "[R1], desc[UR4][R2.64], P0"), i("LDGDEPBAR"),
           i("LDGSTS.E", "[R3], desc[UR4][R4.64], P0"), i("LDGDEPBAR")]
    assert cf.warp_trace(two + [i("DEPBAR.LE", "SB0, 0x1")], 500, 20)["ends"] == [501.0]   # first group: 0 + 500
    assert cf.warp_trace(two + [i("DEPBAR.LE", "SB0, 0x0")], 500, 20)["ends"] == [503.0]   # both: 2 + 500
    assert cf.warp_trace(two + [i("DEPBAR.LE", "SB0, 2")], 500, 20)["ends"] == [5.0]       # none


def _prog():
    """A K loop (two FFMAs), a loop of K tiles after it (the drain), then an aligned store path (one STG.128) and a
    guarded element path (four STG) storing as many bytes, both ending the kernel."""
    I = cfacts.Instr
    code = [("FFMA", "R1, R2, R3, R1", None, None), ("FFMA", "R5, R2, R3, R5", None, None),
            ("BRA", "", "P0", ".L0"),
            ("FFMA", "R1, R2, R3, R1", None, None), ("BRA", "", "P1", ".L1"),
            ("BRA", "", "P2", ".L2"),
            ("STG.E.128", "desc[UR4][R4.64], R8", None, None), ("EXIT", "", None, None),
            ("STG.E", "desc[UR4][R4.64], R8", None, None), ("STG.E", "desc[UR4][R4.64+0x4], R9", None, None),
            ("STG.E", "desc[UR4][R4.64+0x8], R10", None, None), ("STG.E", "desc[UR4][R4.64+0xc], R11", None, None),
            ("EXIT", "", None, None)]
    instrs = [I(16 * k, pred, op, ops, tgt) for k, (op, ops, pred, tgt) in enumerate(code)]
    return instrs, {".L0": 0, ".L1": 48, ".L2": 128}


def test_the_epilogue_path_is_the_aligned_store_path_without_the_drain_loop():
    """tools.compiler_facts.epilogue_path: of two store paths moving the same bytes the shorter (the interior tile's
    aligned stores); the loop of K tiles after the main loop is not epilogue (its iterations are K tiles), but its
    code is counted apart (fetched once). A planted reversal (the longest path) would count 7."""
    instrs, labels = _prog()
    a = cfacts.analyse_sass(instrs, labels)
    assert a["loop_ffma"] == 2 and a["epilogue_instructions"] == 10
    assert a["epilogue_path_instructions"] == 3          # the branch, the STG.128, the EXIT
    assert a["epilogue_tile_loop_instructions"] == 2
    f = Facts.from_json({"config_key": "k", "arch": "sm_90", "nvrtc_version": "13.0", "registers": 32,
                         "epilogue_path_instructions": 3, "epilogue_tile_loop_instructions": 2})
    assert (f.epilogue_path_instructions, f.epilogue_tile_loop_instructions) == (3, 2)


def test_shipped_sm90_epilogue_paths_are_part_of_the_epilogue():
    n = 0
    for k, f in load_facts("sm_90").items():
        if f.loop_found and f.epilogue_path_instructions is not None:
            assert f.epilogue_path_instructions + (f.epilogue_tile_loop_instructions or 0) <= f.epilogue_instructions, k
            n += 1
    assert n > 2000
    rung11 = facts_for(KernelConfig.parse("11:BM=128,BN=128,BK=16,WM=64,WN=64,WNITER=2,TM=8,TN=4,SWZ=1,SPLITK=1,STAGES=3,"
                                          "SPREAD=16"), "sm_90")
    assert (rung11.epilogue_path_instructions, rung11.epilogue_tile_loop_instructions) == (441, 2275)


def test_vector_reductions_store_sixteen_bytes():
    I = cfacts.Instr
    assert cfacts.stored_bytes(I(0, None, "REDG.E.ADD.F32", "x4.FTZ.RN.STRONG.GPU desc[UR10][R6.64], R72", None)) == 16
    assert cfacts.stored_bytes(I(0, None, "REDG.E.ADD.F32.FTZ.RN.STRONG.GPU", "desc[UR10][R6.64], R72", None)) == 4
    assert cfacts.stored_bytes(I(0, None, "STG.E.128", "desc[UR4][R4.64], R8", None)) == 16
    assert cfacts.stored_bytes(I(0, None, "LDG.E.128", "R8, desc[UR4][R4.64]", None)) == 0
