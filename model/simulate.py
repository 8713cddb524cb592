"""Warp-level access simulator: the memory and FFMA counters Nsight Compute reports, from the index maps.

For a config of the ladder and a problem size it enumerates, with numpy, the addresses that every warp's
global loads and stores and shared-memory loads and stores touch, and counts per kernel launch what
``ncu`` counts:

=====================================  ================================================================
field                                  ncu metric (``.sum``)
=====================================  ================================================================
``gld_requests`` / ``gld_sectors``     ``l1tex__t_requests_pipe_lsu_mem_global_op_ld`` / ``..._sectors_...``
``gst_requests`` / ``gst_sectors``     ``l1tex__t_requests_pipe_lsu_mem_global_op_st`` / ``..._sectors_...``
``lds_instructions``                   ``smsp__sass_inst_executed_op_shared_ld``
``lds_wavefronts``                     ``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld``
``lds_bank_conflicts``                 ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld``
``sts_*``                              the same with ``_st``
``ffma_thread``                        ``smsp__sass_thread_inst_executed_op_ffma_pred_on``
``ldg_instructions`` (= requests)      ``smsp__sass_inst_executed_op_global_ld``
=====================================  ================================================================

(:data:`NCU_METRICS` is this table as data.)

How it stays fast
-----------------
Nothing loops over blocks or K tiles in Python. A block's accesses depend on where it sits only through

* which of its rows / columns / K columns are inside the matrices (``rows_valid = min(BM, M - m0)``,
  ``cols_valid``, ``k_valid``): interior blocks, the right / bottom / corner edge blocks and the K tail
  tile are the only kinds, and
* the alignment of its tile's base address to a 32-byte sector, ``(m0*K + k0) mod 8`` floats for A,
  ``(k0*N + n0) mod 8`` for B and ``(m0*N + n0) mod 8`` for C (all zero when M, N, K are multiples of 8).

The blocks and tiles are grouped into these classes (a histogram over ``arange(grid)``), one
representative of each class is simulated warp by warp, and its counts are scaled by the class size.
Shared-memory accesses do not depend on the class at all, and every shared load of one access with one
width differs from the first only by an address offset common to all lanes (``kk*BN``, ``i*BK``, ...),
which changes no bank count: one instruction per access and width is simulated.

Rules (measured on the H200, sm_90, with ``ncu --clock-control none`` on one-warp probes; the table is in
``tests/test_simulate.py``)
--------------------------------------------------------------------------------------------------------
*Requests and instructions.* A warp-level load / store instruction is counted (as an instruction and as
one L1TEX request, whatever its width: LDG.128 is one request) only when at least one of its threads is
active and its predicate is true; an instruction whose threads are all predicated off counts nothing
(neither ``smsp__sass_inst_executed_op_*`` nor requests nor wavefronts).

*Global sectors.* The number of distinct 32-byte sectors the active threads touch (vector accesses are
naturally aligned, so each thread's 4/8/16 bytes lie in one sector). Matrices start 256-byte aligned.

*Shared wavefronts.* 32 banks of 4 bytes; word ``w`` is in bank ``w mod 32``. A warp instruction of width
``W`` bytes (4, 8, 16) is split into ``W/4`` *units* of ``128/W`` consecutive lanes (32-bit: the whole
warp; 64-bit: two half-warps; 128-bit: four quarter-warps); each unit moves at most 128 bytes. A unit
needs ``degree`` wavefronts, the largest number of DISTINCT 4-byte words its active lanes touch in one
bank (lanes reading the same word share it: broadcast). For *loads*, the two units of a *pair* (the two
half-warps of a 64-bit load; the two quarters of each half-warp of a 128-bit load - never across
half-warps) are served together when the data they need fits one wavefront, counted by 4-lane quads:
``sum over the pair's quads of (distinct addresses in the quad) x W <= 128 bytes``; a merged pair needs
the degree of the union of its words. Units are never merged for stores. Wavefronts = the sum over
units and merged pairs. (The probes fit an equivalent reading too - merge when no quad reads more than
two addresses; the two differ only for quads with uneven address counts, which no shared load of the
ladder's kernels has: checked for every config of the rung 02-06 sweep grids.)

Measured, wavefronts per instruction: 32-bit: lanes ``t`` -> 1, all one word -> 1, stride 2 words -> 2,
stride 4 -> 4, stride 32 -> 32; 64-bit: contiguous -> 2, all one address -> 1, both halves reading the
same 128 bytes -> 2, 8 lanes per address -> 1; 128-bit: contiguous -> 4, all one address -> 2 (halves
never merge), one address per quarter -> 2, each quarter the same 128 bytes -> 4, ``4*(t//2)`` -> 2
but ``4*(t%4)`` -> 4 (the same four addresses, spread over the quads instead of paired lanes: this is
what made the rule count by quads), ``8*(t%16)`` (rung 05's Bs read, TN = 8) -> 8. Stores: a 128-bit
store of one address by all lanes -> 4. The 86 probes are the table in ``tests/test_simulate.py``.

*Bank conflicts.* ``conflicts = wavefronts - ideal``, where ``ideal`` is the number of wavefronts the same
instruction would need with no bank conflicts (every unit's / merged pair's degree replaced by 1): the
number of active units, merged pairs counting once. On the probes this equals ncu's
``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}`` exactly (e.g. 64-bit, lanes 0 and 16
reading words 0 and 32: one merged pair of degree 2 -> 2 wavefronts, 1 conflict); it is also what
ncu's source view calls excessive wavefronts. In whole kernels ncu counts some more wavefronts AND as
many more conflicts than the addresses cause (not a property of the addresses: it changes slightly
between runs; see :data:`BOUNDED_FIELDS`): ``wavefronts - conflicts`` agrees exactly, the two counters
themselves are lower bounds.

Access widths: the load plan
----------------------------
Which shared loads are vectorised is the compiler's choice: rung 04's ``As[(ty*TM+i)*BK + kk]`` for
consecutive ``kk`` are contiguous and nvcc merges them into LDS.128. :class:`LoadPlan` gives, for the A
and B operand loads of the inner loop, the (start, width) segments that cover one contiguous *run*
(A: ``kk`` = 0..BK-1 of one row for rungs 02-04, ``i`` = 0..TM-1 of AsT for rungs 05/06; B: ``j`` =
0..TN-1 for rungs 04-06, a single element for rungs 02/03). ``plan="source"`` (default) follows the
source (float4 only where the source writes float4); ``plan="compiler"`` merges as wide as alignment
allows (what nvcc 13 does for the classic configs); :func:`plan_from_sass` builds the plan from the
SASS instruction mix of one main-loop iteration (``model.facts`` / ``tools.compiler_facts``'s
``sass_loop``) so the simulated LDS counts agree with the compiled code. Global accesses and shared
stores have no choice (each thread's elements of a tile load are NT apart), so their widths are fixed
by the source: scalar except rung 05/06's float4 paths.
"""
from __future__ import annotations

import functools
import itertools
import math
from dataclasses import asdict, dataclass, fields
from typing import Callable, Mapping

import numpy as np

from .errors import ConfigError
from .registry import (BYTES_PER_ELEMENT, WARP_SIZE, WARP_TILED, KernelConfig, geometry, grid, k_slices,
                       validate_size)

BANKS = 32
SECTOR_BYTES = 32
SECTOR_WORDS = SECTOR_BYTES // BYTES_PER_ELEMENT      # 8 floats per 32-byte sector
UNIT_BYTES = 128                                      # bytes one shared-memory wavefront moves

NCU_METRICS: dict[str, str] = {
    "gld_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "gld_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "gst_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "gst_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "lds_instructions": "smsp__sass_inst_executed_op_shared_ld.sum",
    "lds_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "lds_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "sts_instructions": "smsp__sass_inst_executed_op_shared_st.sum",
    "sts_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "sts_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "ffma_thread": "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "ldg_instructions": "smsp__sass_inst_executed_op_global_ld.sum",
    "stg_instructions": "smsp__sass_inst_executed_op_global_st.sum",
}
"""Simulator field -> the Nsight Compute metric that counts the same thing."""


# ==================================================================================================
# Results
# ==================================================================================================


@dataclass(frozen=True)
class BlockIteration:
    """Counts of ONE interior block (all rows, columns and K columns valid) in ONE full main-loop
    iteration (one BK tile; one k step for the naive rung), summed over the block's warps - the steady
    state a timing model needs. ``gst_*`` are the block's C stores, made once after the loop. When the
    sizes are not multiples of 8, interior tiles differ in sector alignment; the counts are those of the
    most common alignment. The shared-memory counts are the same in every block and tile."""

    warps: int
    threads: int
    gld_requests: int
    gld_sectors: int
    global_load_bytes_requested: int
    gld_lines: int
    """distinct 128-byte lines per warp load instruction, summed (L1 tag wavefronts)"""
    lds_instructions: int
    lds_wavefronts: int
    lds_bank_conflicts: int
    sts_instructions: int
    sts_wavefronts: int
    sts_bank_conflicts: int
    ffma_thread: int
    ffma_warp: int
    bar_warp: int
    int_warp_est: int
    gst_requests: int
    gst_sectors: int


@dataclass(frozen=True)
class AccessCounts:
    """Per-launch counts of one config at one size (plain counts; bytes where the name says so).

    ``ldg_instructions`` / ``stg_instructions`` are the warp-level LDG / STG instructions executed with
    at least one active thread (= requests); ``lds_instructions`` / ``sts_instructions`` likewise for
    shared memory. ``global_load_bytes_requested`` = 4 bytes x width x active threads over all global
    loads; ``unique_dram_bytes_min`` = 4 (MK + KN + MN), every element of A and B read once and C written
    once. ``int_warp_est`` is a rough estimate of the warp-level integer / loop-control instructions
    (address arithmetic, guards, loop counters; see :func:`_int_estimate`) - the SASS mix of
    ``model.facts`` is the authority for it."""

    config_key: str
    M: int
    N: int
    K: int
    plan: "LoadPlan | None"
    blocks: int
    warps_per_block: int
    k_iterations: int
    gld_requests: int
    gld_sectors: int
    gst_requests: int
    gst_sectors: int
    lds_instructions: int
    lds_wavefronts: int
    lds_bank_conflicts: int
    sts_instructions: int
    sts_wavefronts: int
    sts_bank_conflicts: int
    ffma_thread: int
    ffma_warp: int
    bar_warp: int
    ldg_instructions: int
    stg_instructions: int
    int_warp_est: int
    global_load_bytes_requested: int
    global_store_bytes_requested: int
    unique_dram_bytes_min: int
    per_block_iteration: BlockIteration

    @property
    def gld_sector_bytes(self) -> int:
        """Bytes the global loads move between L1 and L2 at sector granularity (sectors x 32)."""
        return self.gld_sectors * SECTOR_BYTES

    @property
    def gst_sector_bytes(self) -> int:
        return self.gst_sectors * SECTOR_BYTES

    @property
    def flops(self) -> int:
        return 2 * self.ffma_thread

    @property
    def lds_ideal_wavefronts(self) -> int:
        """Wavefronts the shared loads would need without bank conflicts."""
        return self.lds_wavefronts - self.lds_bank_conflicts

    @property
    def sts_ideal_wavefronts(self) -> int:
        return self.sts_wavefronts - self.sts_bank_conflicts

    @property
    def gld_sectors_per_request(self) -> float:
        return self.gld_sectors / self.gld_requests if self.gld_requests else 0.0

    def ncu(self) -> dict[str, int]:
        """The counts under their ncu metric names (:data:`NCU_METRICS`)."""
        return {metric: getattr(self, f) for f, metric in NCU_METRICS.items()}

    def to_json(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("plan", "per_block_iteration")}
        d["plan"] = None if self.plan is None else self.plan.to_json()
        d["per_block_iteration"] = asdict(self.per_block_iteration)
        return d


# ==================================================================================================
# Load plans (access widths of the inner loop's shared loads)
# ==================================================================================================

Segments = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class LoadPlan:
    """How the inner loop's shared loads of each operand are issued.

    ``lds_A`` / ``lds_B`` are (start, width) segments, in floats, over one contiguous run of the operand
    (see the module doc for what a run is per rung); each segment is one LDS of ``width`` floats
    (1, 2 or 4: LDS, LDS.64, LDS.128). ``extra_A`` / ``extra_B`` are ((width, count per K tile), ...)
    of additional loads of the operand that no run accounts for: nvcc sometimes reloads an element that
    a vector load already brought in (rung 03's classic config reloads the last element of each of the
    8 As rows with a scalar LDS; rung 04 <64,64,8,8,2> reloads 4 of its 8). Every load of an operand
    with one width has the same bank behaviour (the addresses differ by a lane-uniform offset), so
    where an extra load points does not matter. ``origin`` says where the plan came from; ``note``
    explains extras or a mismatch with the SASS."""

    lds_A: Segments
    lds_B: Segments
    extra_A: tuple[tuple[int, int], ...] = ()
    extra_B: tuple[tuple[int, int], ...] = ()
    origin: str = "source"
    note: str = ""

    def per_tile(self, runs: "_Runs") -> dict[str, dict[int, int]]:
        """``{"A": {width: loads per K tile}, "B": {...}}`` (per thread = per warp instruction)."""
        out: dict[str, dict[int, int]] = {}
        for name, segs, runs_n, extra in (("A", self.lds_A, runs.runs_A, self.extra_A),
                                          ("B", self.lds_B, runs.runs_B, self.extra_B)):
            h: dict[int, int] = {}
            for _, w in segs:
                h[w] = h.get(w, 0) + runs_n
            for w, n in extra:
                h[w] = h.get(w, 0) + n
            out[name] = h
        return out

    def to_json(self) -> dict:
        return {"lds_A": [list(x) for x in self.lds_A], "lds_B": [list(x) for x in self.lds_B],
                "extra_A": [list(x) for x in self.extra_A], "extra_B": [list(x) for x in self.extra_B],
                "origin": self.origin, "note": self.note}


@dataclass(frozen=True)
class _Runs:
    """Shape of the inner loop's shared loads of a rung: run length and runs per K tile, per operand,
    and the alignment (in floats) of a run's first element."""

    len_A: int
    runs_A: int
    align_A: int
    len_B: int
    runs_B: int
    align_B: int


def _runs(cfg: KernelConfig) -> _Runs | None:
    g = geometry(cfg)
    r = cfg.rung
    if r == 2:   # As[ty][kk]: one run of BK per tile; Bs[kk][tx]: BK runs of 1
        return _Runs(g.BK, 1, _pow2_align(g.BK), 1, g.BK, 1)
    if r == 3:   # As[(tr*TM+i)*BK + kk]: TM runs of BK; Bs[kk*BN + tc]: BK runs of 1
        return _Runs(g.BK, g.TM, _pow2_align(g.BK), 1, g.BK, 1)
    if r == 4:   # As rows along kk; Bs[kk*BN + tx*TN + j] along j (Bs starts at float BM*BK)
        return _Runs(g.BK, g.TM, _pow2_align(g.BK), g.TN, g.BK, _pow2_align(math.gcd(g.TN, g.BM * g.BK)))
    if r in (5, 6):  # AsT[kk*BM + ty*TM + i] along i; Bs[kk*BN + tx*TN + j] along j
        return _Runs(g.TM, g.BK, _pow2_align(math.gcd(g.TM, g.BM)), g.TN, g.BK,
                     _pow2_align(math.gcd(g.TN, g.BN)))
    if r in WARP_TILED:  # per kk and warp step: TM floats of AsT (LDA = BM + 4), TN floats of Bs, all 16-byte aligned
        tm, tn = g.thread_step
        wmi, wni = g.warp_iters
        return _Runs(tm, g.BK * wmi, 4, tn, g.BK * wni, 4)
    return None


def _pow2_align(n: int) -> int:
    """Largest of 4, 2, 1 dividing n (alignment in floats of offsets that are multiples of n)."""
    return 4 if n % 4 == 0 else 2 if n % 2 == 0 else 1


def _uniform(length: int, width: int) -> Segments:
    return tuple((s, width) for s in range(0, length, width))


def source_plan(cfg: KernelConfig) -> LoadPlan | None:
    """Widths as written in the source: scalar loads for rungs 02-04, float4 for rungs 05/06."""
    ru = _runs(cfg)
    if ru is None:
        return None
    w = 4 if cfg.rung in (5, 6) + WARP_TILED else 1
    return LoadPlan(_uniform(ru.len_A, w), _uniform(ru.len_B, w), origin="source")


def compiler_plan(cfg: KernelConfig) -> LoadPlan | None:
    """Each run merged into the widest loads its length and alignment allow (4, 2 or 1 floats).

    This is what nvcc 13 (sm_90) does for the classic configs of rungs 02, 04, 05 and 06. For rung
    03's classic config and for 409 of the 573 rung 04 configs of the sweep grid it also reloads
    elements of As with scalar LDS (rung 03 classic: the last element of each of the 8 rows, 8 extra
    LDS per tile), which only :func:`plan_from_sass` can know."""
    ru = _runs(cfg)
    if ru is None:
        return None
    wa = _widest(ru.len_A, ru.align_A)
    wb = _widest(ru.len_B, ru.align_B)
    return LoadPlan(_uniform(ru.len_A, wa), _uniform(ru.len_B, wb), origin="compiler")


def _widest(length: int, align: int) -> int:
    for w in (4, 2, 1):
        if length % w == 0 and align % w == 0:
            return w
    return 1


SASS_LDS = {"LDS": 1, "LDS.64": 2, "LDS.128": 4}


def plan_from_sass(cfg: KernelConfig, sass_loop: Mapping[str, int], tiles_per_iteration: int = 1) -> LoadPlan | None:
    """A load plan whose LDS / LDS.64 / LDS.128 counts per K tile equal the compiled main loop's.

    ``sass_loop`` is the SASS instruction-family histogram of one main-loop iteration (``model.facts`` /
    ``tools.compiler_facts``: keys ``"LDS"``, ``"LDS.64"``, ``"LDS.128"``; other keys are ignored);
    ``tiles_per_iteration`` is how many K tiles one iteration covers (``loop_tiles``; 1 unless the
    compiler unrolled the K loop).

    Every width choice of the two operands (uniform segments of 4, 2 or 1 floats that the run's length
    and alignment allow) is tried; the one that leaves no SASS load width short, then the fewest
    surplus vector loads, then the fewest surplus loads wins (ties: the wider loads). The surplus
    becomes extra loads of the A operand, or of B where A cannot take that width; ``note`` lists them.
    Every reload in the SASS read so far was a scalar reload of an As element, and ncu agrees with this
    attribution on all 11 measured configs with reloads (rung 03 classic and ten rung 04 configs); over
    the rung 04-06 sweep grid the surplus is always scalar LDS, in 409 of the 573 rung 04 configs.
    A plan for which some width is short (the SASS has fewer loads of that width than any plan needs)
    has ``origin = "sass-approx"``."""
    ru = _runs(cfg)
    if ru is None:
        return None
    t = max(1, int(tiles_per_iteration))
    want = {w: 0 for w in (1, 2, 4)}
    for k, w in SASS_LDS.items():
        want[w] += int(sass_loop.get(k, 0) or 0)
    want = {w: n // t if n % t == 0 else n / t for w, n in want.items()}
    best = None
    for wa in (4, 2, 1):
        if ru.len_A % wa or ru.align_A % wa:
            continue
        for wb in (4, 2, 1):
            if ru.len_B % wb or ru.align_B % wb:
                continue
            have = {1: 0, 2: 0, 4: 0}
            have[wa] += ru.runs_A * (ru.len_A // wa)
            have[wb] += ru.runs_B * (ru.len_B // wb)
            surplus = {w: want[w] - have[w] for w in have}
            short = sum(-v for v in surplus.values() if v < 0)
            wide = sum(v for w, v in surplus.items() if v > 0 and w > 1)
            extra = sum(v for v in surplus.values() if v > 0)
            score = (short, wide, extra, -(wa + wb))
            if best is None or score < best[0]:
                best = (score, wa, wb, surplus)
    assert best is not None
    (short, _, _, _), wa, wb, surplus = best
    extra_a, extra_b, notes = [], [], []
    for w, n in sorted(surplus.items(), reverse=True):
        if n <= 0:
            continue
        n = int(n) if float(n).is_integer() else n
        if ru.align_A % w == 0 and ru.len_A >= w:
            extra_a.append((w, n))
            notes.append(f"{n:g} extra {SASS_NAME[w]} of A per tile")
        else:
            extra_b.append((w, n))
            notes.append(f"{n:g} extra {SASS_NAME[w]} of B per tile")
    if short:
        notes.append("SASS has fewer loads than any plan: " +
                     ", ".join(f"{SASS_NAME[w]} short by {-v:g}" for w, v in surplus.items() if v < 0))
    return LoadPlan(_uniform(ru.len_A, wa), _uniform(ru.len_B, wb), tuple(extra_a), tuple(extra_b),
                    origin="sass" if not short else "sass-approx", note="; ".join(notes))


SASS_NAME = {1: "LDS", 2: "LDS.64", 4: "LDS.128"}


def resolve_plan(cfg: KernelConfig, plan: "str | LoadPlan | None") -> LoadPlan | None:
    """``"source"`` (default), ``"compiler"``, ``"sass"`` (from ``model.facts`` when it has this config,
    else ``"compiler"``) or a :class:`LoadPlan`, checked against the config's runs."""
    if plan is None or plan == "source":
        return source_plan(cfg)
    if plan == "compiler":
        return compiler_plan(cfg)
    if plan == "sass":
        return sass_plan(cfg) or compiler_plan(cfg)
    if not isinstance(plan, LoadPlan):
        raise ConfigError(f"unknown load plan {plan!r} (source, compiler, sass or a LoadPlan)", limit="plan")
    ru = _runs(cfg)
    if ru is None:
        return None
    for name, segs, length, align in (("A", plan.lds_A, ru.len_A, ru.align_A), ("B", plan.lds_B, ru.len_B, ru.align_B)):
        for s, w in segs:
            if w not in (1, 2, 4) or s % w or s < 0 or s + w > length or align % w:
                raise ConfigError(f"{cfg.label}: load plan segment ({s}, {w}) of {name} is not an aligned "
                                  f"1/2/4-float load inside a run of {length} (alignment {align})", limit="plan")
    for name, extra, align in (("A", plan.extra_A, ru.align_A), ("B", plan.extra_B, ru.align_B)):
        for w, n in extra:
            if w not in (1, 2, 4) or align % w or n < 0:
                raise ConfigError(f"{cfg.label}: extra {name} loads ({w}, {n}) need width 1/2/4 dividing the "
                                  f"alignment {align} and a count >= 0", limit="plan")
    return plan


OBSERVED_SASS_LDS: dict[str, dict[str, int]] = {
    "02:BM=32,BN=32,BK=32": {"LDS": 32, "LDS.128": 8},
    "02:BM=16,BN=16,BK=16": {"LDS": 16, "LDS.128": 4},
    "02:BM=8,BN=8,BK=8": {"LDS": 8, "LDS.128": 2},
    "03:BM=64,BN=64,BK=8,TM=8": {"LDS": 16, "LDS.128": 16},
    "04:BM=128,BN=128,BK=8,TM=8,TN=8": {"LDS.128": 32},
    "04:BM=64,BN=64,BK=8,TM=8,TN=2": {"LDS": 4, "LDS.64": 8, "LDS.128": 16},
    "04:BM=64,BN=64,BK=16,TM=4,TN=4": {"LDS.128": 32},
    "04:BM=32,BN=128,BK=32,TM=2,TN=16": {"LDS": 4, "LDS.128": 144},
    "05:BM=128,BN=128,BK=8,TM=8,TN=8": {"LDS.128": 32},
    "05:BM=64,BN=32,BK=8,TM=4,TN=8": {"LDS.128": 24},
    "05:BM=64,BN=32,BK=8,TM=4,TN=16": {"LDS.128": 40},
    "05:BM=64,BN=64,BK=16,TM=8,TN=8": {"LDS.128": 64},
    "06:BM=128,BN=128,BK=8,TM=8,TN=8": {"LDS.128": 32},
    "06:BM=128,BN=64,BK=32,TM=16,TN=4": {"LDS.128": 160},
    "04:BM=32,BN=32,BK=8,TM=2,TN=8": {"LDS": 2, "LDS.128": 20},
    "04:BM=32,BN=32,BK=16,TM=8,TN=4": {"LDS": 8, "LDS.128": 48},
    "04:BM=32,BN=128,BK=8,TM=16,TN=4": {"LDS": 20, "LDS.128": 40},
    "04:BM=32,BN=128,BK=32,TM=16,TN=8": {"LDS": 64, "LDS.128": 192},
    "04:BM=32,BN=32,BK=16,TM=16,TN=2": {"LDS": 36, "LDS.64": 16, "LDS.128": 64},
    "04:BM=32,BN=32,BK=8,TM=8,TN=2": {"LDS": 4, "LDS.64": 8, "LDS.128": 16},
    "04:BM=32,BN=32,BK=32,TM=16,TN=2": {"LDS": 36, "LDS.64": 32, "LDS.128": 128},
    "04:BM=64,BN=128,BK=16,TM=8,TN=16": {"LDS": 16, "LDS.128": 96},
}
"""Shared loads per K tile of the main loop of the configs whose ncu counters ``tests/test_simulate.py``
checks: the first 14 read from ``cuobjdump --dump-sass`` of nvcc 13.0 ``-O3 -arch=sm_90`` builds on
the project's H200 machine, the last 8 from ``model.facts`` (NVRTC, as CuPy compiles; it agrees with
nvcc on all 17 configs where both were read). The fallback of :func:`sass_plan` when ``model.facts``
has no entry."""


def sass_plan(cfg: KernelConfig, arch: str = "sm_90") -> LoadPlan | None:
    """:func:`plan_from_sass` on the main-loop SASS mix of ``cfg`` for ``arch``: from ``model.facts``
    (``facts_for(cfg, arch).sass_loop`` and ``.loop_tiles``) when it has the config, else from
    :data:`OBSERVED_SASS_LDS` (sm_90 only); None when neither has it."""
    loop, tiles = None, 1
    try:
        from .facts import facts_for  # noqa: PLC0415 - optional: the shipped compiler facts
        f = facts_for(cfg, arch)
    except Exception:  # noqa: BLE001 - no facts module / no cache: fall back
        f = None
    if f is not None and getattr(f, "loop_found", True) and f.sass_loop:
        loop, tiles = dict(f.sass_loop), (f.loop_tiles or 1)
    elif arch == "sm_90" and cfg.key in OBSERVED_SASS_LDS:
        loop = OBSERVED_SASS_LDS[cfg.key]
    if loop is None:
        return None
    return plan_from_sass(cfg, loop, tiles)


# ==================================================================================================
# Warp-level counting primitives
# ==================================================================================================


def _distinct_per_bank_max(words: np.ndarray, active: np.ndarray) -> np.ndarray:
    """``words``/``active``: (..., L). The largest number of distinct words in one bank, per row (0 when
    no lane is active)."""
    shape = words.shape[:-1]
    L = words.shape[-1]
    w = np.where(active, words, -1).reshape(-1, L)
    w.sort(axis=1)
    new = w >= 0
    new[:, 1:] &= w[:, 1:] != w[:, :-1]
    rows = np.broadcast_to(np.arange(w.shape[0])[:, None], w.shape)
    key = rows[new] * BANKS + (w[new] % BANKS)
    counts = np.bincount(key, minlength=w.shape[0] * BANKS).reshape(w.shape[0], BANKS)
    return counts.max(axis=1).reshape(shape)


def shared_wavefronts(addr, active, width: int, op: str = "ld") -> tuple[np.ndarray, np.ndarray]:
    """Wavefronts and ideal wavefronts of warp-level shared-memory instructions (the module doc's rule).

    ``addr``: (R, 32) word addresses (the first 4-byte word each lane accesses, a multiple of
    ``width``); ``active``: (R, 32) bool; ``width``: 1, 2 or 4 words (32-, 64-, 128-bit); ``op``: "ld" or
    "st". Returns two int arrays of shape (R,); conflicts = wavefronts - ideal."""
    addr = np.asarray(addr, dtype=np.int64).reshape(-1, WARP_SIZE)
    active = np.asarray(active, dtype=bool).reshape(-1, WARP_SIZE)
    if width not in (1, 2, 4):
        raise ValueError(f"shared access width must be 1, 2 or 4 words, got {width}")
    R = addr.shape[0]
    units = width                         # 1, 2, 4 units of 32, 16, 8 lanes
    lanes = WARP_SIZE // units
    words = (addr[:, :, None] + np.arange(width)).reshape(R, units, lanes * width)
    wact = np.repeat(active, width, axis=1).reshape(R, units, lanes * width)
    deg = _distinct_per_bank_max(words, wact)                              # (R, units)
    uact = active.reshape(R, units, lanes).any(axis=2)
    if op == "ld" and units > 1:
        # a pair of units merges when the bytes its 4-lane quads need fit one wavefront: the sum over
        # the pair's quads of (distinct addresses in the quad) x width x 4 bytes <= 128
        q = np.where(active, addr, -1).reshape(R, WARP_SIZE // 4, 4)
        q.sort(axis=2)
        qnew = q >= 0
        qnew[:, :, 1:] &= q[:, :, 1:] != q[:, :, :-1]
        pairs = units // 2
        need = qnew.sum(axis=2).reshape(R, pairs, -1).sum(axis=2) * width * BYTES_PER_ELEMENT
        p_single = need <= UNIT_BYTES
        p_deg = _distinct_per_bank_max(words.reshape(R, pairs, 2 * lanes * width),
                                       wact.reshape(R, pairs, 2 * lanes * width))
        p_any = uact.reshape(R, pairs, 2).any(axis=2)
        wf = np.where(p_single, p_deg, deg.reshape(R, pairs, 2).sum(axis=2)).sum(axis=1)
        ideal = np.where(p_single, p_any, uact.reshape(R, pairs, 2).sum(axis=2)).sum(axis=1)
    else:
        wf = deg.sum(axis=1)
        ideal = uact.sum(axis=1)
    return wf.astype(np.int64), ideal.astype(np.int64)


def global_requests_sectors(addr, active) -> tuple[np.ndarray, np.ndarray]:
    """Requests (0/1) and distinct 32-byte sectors of warp-level global instructions.

    ``addr``: (R, 32) word (float) addresses of each lane's first element, relative to a 32-byte aligned
    origin; vector accesses are naturally aligned, so a lane's 4, 8 or 16 bytes lie in one sector."""
    addr = np.asarray(addr, dtype=np.int64).reshape(-1, WARP_SIZE)
    active = np.asarray(active, dtype=bool).reshape(-1, WARP_SIZE)
    s = np.where(active, addr // SECTOR_WORDS, -1)
    s.sort(axis=1)
    new = s >= 0
    new[:, 1:] &= s[:, 1:] != s[:, :-1]
    return active.any(axis=1).astype(np.int64), new.sum(axis=1).astype(np.int64)


def _distinct_per_warp(addr, active, words: int) -> np.ndarray:
    """Distinct ``words``-word blocks the active lanes of each warp-level instruction touch (of the word each lane's
    address names)."""
    addr = np.asarray(addr, dtype=np.int64).reshape(-1, WARP_SIZE)
    active = np.asarray(active, dtype=bool).reshape(-1, WARP_SIZE)
    s = np.where(active, addr // words, -1)
    s.sort(axis=1)
    new = s >= 0
    new[:, 1:] &= s[:, 1:] != s[:, :-1]
    return new.sum(axis=1).astype(np.int64)


def global_lines(addr, active) -> np.ndarray:
    """Distinct 128-byte cache lines touched by the active lanes of each warp-level global instruction:
    the L1 tag stage handles one line per cycle, so this is the instruction's cost in L1 wavefronts
    (a coalesced 32-float row is 1 line; a column walk over 32 rows is 32)."""
    return _distinct_per_warp(addr, active, 4 * SECTOR_WORDS)


# ==================================================================================================
# Kernel descriptions (the index maps of gpu/kernels/NN_*.cu)
# ==================================================================================================

Valid = tuple[int, int, int]      # rows_valid, cols_valid, k_valid of a block / K tile


@dataclass(frozen=True)
class _Global:
    """One global access (a set of warp instructions of one width) of a block in one K tile
    (``per="tile"``) or once per block (``per="block"``, the C store).

    ``fn(rows_valid, cols_valid, k_valid) -> (offsets, active)``, arrays (S, threads padded to whole
    warps): offsets in floats from the tile's origin (``r*ld + c``), the origin's residue mod 8 is added
    per class. ``deps``: the dimensions whose validity ``fn`` reads ("m", "n", "k")."""

    matrix: str
    op: str
    width: int
    deps: frozenset
    fn: Callable[[int, int, int], tuple[np.ndarray, np.ndarray]]
    per: str = "tile"


@dataclass(frozen=True)
class _Shared:
    """Shared-memory warp instructions of one block in one K tile: ``addr``/``active`` (S, threads
    padded), each row repeated ``weight`` times."""

    op: str
    width: int
    addr: np.ndarray
    active: np.ndarray
    weight: int = 1


@dataclass
class _Kernel:
    threads: int
    tpad: int
    m_tile: int
    n_tile: int
    k_tile: int
    globals: list
    shared: list
    ffma_per_tile: int                # per active thread per K tile
    bars_per_warp: Callable[[int], int]   # T -> barriers per warp
    thread_active: Callable[[int, int], np.ndarray] | None = None   # naive: (rv, cv) -> (tpad,)
    ldg_slots: int = 0                # static global-load instructions per K tile (integer estimate)
    sts_slots: int = 0
    one_d_grid: bool = False          # rungs 07/08: blockIdx.x enumerates the output tiles (launch_order)
    c_store_repeats: int = 1          # split-K: every non-empty K slice adds its partial C once
    per_iteration_bars: int | None = None   # barriers per warp per K tile (rungs 07/08)
    slices: tuple = ()                # rungs 07/08: (k_begin, k_end) of each K slice


def _lanes(threads: int) -> tuple[np.ndarray, np.ndarray, int]:
    tpad = -(-threads // WARP_SIZE) * WARP_SIZE
    tid = np.arange(tpad, dtype=np.int64)
    return tid, tid < threads, tpad


def _describe(cfg: KernelConfig, M: int, N: int, K: int, plan: LoadPlan | None) -> _Kernel:
    r = cfg.rung
    if r == 1:
        return _naive(cfg, M, N, K)
    if r in (2, 3, 4):
        return _tiled_scalar(cfg, M, N, K, plan)
    if r in (5, 6):
        return _tiled_float4(cfg, M, N, K, plan)
    if r in WARP_TILED:
        return _warp_tiled(cfg, M, N, K, plan)
    raise ConfigError(f"{cfg.label}: the simulator covers rungs 01-11 (cuBLAS has no index maps)", limit="rung")


def _naive(cfg: KernelConfig, M: int, N: int, K: int) -> _Kernel:
    p = cfg.p
    BX, BY, CO = p["BX"], p["BY"], p["COALESCED"]
    g = geometry(cfg)
    tid, real, tpad = _lanes(BX * BY)
    tx, ty = tid % BX, tid // BX                     # CUDA linearises x fastest
    row, col = (ty, tx) if CO else (tx, ty)          # offsets inside the block's output tile

    def act(rv: int, cv: int) -> np.ndarray:
        return real & (row < rv) & (col < cv)        # 'if (row >= M || col >= N) return;'

    deps = frozenset("mn")
    # per k step: a[k] = A[row*K + k] (origin m0*K + k), b[k*N] = B[k*N + col] (origin k*N + n0)
    ga = _Global("A", "ld", 1, deps, lambda rv, cv, kv: ((row * K)[None], act(rv, cv)[None]))
    gb = _Global("B", "ld", 1, deps, lambda rv, cv, kv: (col[None], act(rv, cv)[None]))
    gc = _Global("C", "st", 1, deps, lambda rv, cv, kv: ((row * N + col)[None], act(rv, cv)[None]), per="block")
    return _Kernel(BX * BY, tpad, g.BM, g.BN, 1, [ga, gb, gc], [], 1, lambda T: 0, thread_active=act,
                   ldg_slots=2)


def _tile_loads_scalar(cfg, M, N, K, tid, real, NT) -> tuple[list, list]:
    """Rungs 02-04: the linear A / B tile loops (scalar LDG -> scalar STS), zero-filled outside."""
    g = geometry(cfg)
    BM, BN, BK = g.BM, g.BN, g.BK
    ia = tid[None, :] + NT * np.arange(-(-BM * BK // NT), dtype=np.int64)[:, None]
    ib = tid[None, :] + NT * np.arange(-(-BK * BN // NT), dtype=np.int64)[:, None]
    in_a = real[None, :] & (ia < BM * BK)
    in_b = real[None, :] & (ib < BK * BN)
    ra, ca = ia // BK, ia % BK
    rb, cb = ib // BN, ib % BN
    ga = _Global("A", "ld", 1, frozenset("mk"),
                 lambda rv, cv, kv: (ra * K + ca, in_a & (ra < rv) & (ca < kv)))
    gb = _Global("B", "ld", 1, frozenset("kn"),
                 lambda rv, cv, kv: (rb * N + cb, in_b & (rb < kv) & (cb < cv)))
    sa = _Shared("st", 1, ia, in_a)                   # As[r*BK + c] = As[i]
    sb = _Shared("st", 1, BM * BK + ib, in_b)         # Bs[r*BN + c] = Bs[i]
    return [ga, gb], [sa, sb]


def _lds(op_addr: np.ndarray, real: np.ndarray, per_width: Mapping[int, int]) -> list:
    """The inner loop's shared loads of one operand: one simulated instruction per width (all
    instructions of one width differ by a lane-uniform offset), weighted by how many there are per
    K tile."""
    return [_Shared("ld", w, op_addr[None, :], real[None, :], weight=n)
            for w, n in sorted(per_width.items()) if n]


def _tiled_scalar(cfg: KernelConfig, M: int, N: int, K: int, plan: LoadPlan | None) -> _Kernel:
    g = geometry(cfg)
    BM, BN, BK, TM, TN = g.BM, g.BN, g.BK, g.TM, g.TN
    NT = g.threads
    tid, real, tpad = _lanes(NT)
    globs, shared = _tile_loads_scalar(cfg, M, N, K, tid, real, NT)
    ru = _runs(cfg)
    assert plan is not None and ru is not None
    if cfg.rung == 2:
        ty, tx = tid // BN, tid % BN
        a_base, b_base = ty * BK, BM * BK + tx                          # As[ty][kk], Bs[kk][tx]
        crow, ccol = ty[None], tx[None]                                  # one output per thread
    elif cfg.rung == 3:
        tc, tr = tid % BN, tid // BN
        a_base, b_base = (tr * TM) * BK, BM * BK + tc                    # As[(tr*TM+i)*BK+kk], Bs[kk*BN+tc]
        i = np.arange(TM, dtype=np.int64)[:, None]
        crow, ccol = tr[None] * TM + i, np.broadcast_to(tc[None], (TM, tpad))
    else:
        tx, ty = tid % (BN // TN), tid // (BN // TN)
        a_base, b_base = (ty * TM) * BK, BM * BK + tx * TN               # As[(ty*TM+i)*BK+kk], Bs[kk*BN+tx*TN+j]
        i = np.repeat(np.arange(TM, dtype=np.int64), TN)[:, None]
        j = np.tile(np.arange(TN, dtype=np.int64), TM)[:, None]
        crow, ccol = ty[None] * TM + i, tx[None] * TN + j                # scalar stores, (i, j) order
    per = plan.per_tile(ru)
    shared += _lds(a_base, real, per["A"])
    shared += _lds(b_base, real, per["B"])
    creal = np.broadcast_to(real[None], crow.shape)
    gc = _Global("C", "st", 1, frozenset("mn"),
                 lambda rv, cv, kv: (crow * N + ccol, creal & (crow < rv) & (ccol < cv)), per="block")
    a_iters, b_iters = -(-BM * BK // NT), -(-BK * BN // NT)
    return _Kernel(NT, tpad, BM, BN, BK, globs + [gc], shared, BK * TM * TN, lambda T: 2 * T,
                   ldg_slots=a_iters + b_iters, sts_slots=a_iters + b_iters)


def _tiled_float4(cfg: KernelConfig, M: int, N: int, K: int, plan: LoadPlan | None) -> _Kernel:
    g = geometry(cfg)
    BM, BN, BK, TM, TN = g.BM, g.BN, g.BK, g.TM, g.TN
    NT = g.threads
    tid, real, tpad = _lanes(NT)
    A4, B4 = BM * BK // 4, BK * BN // 4
    a_vec, b_vec, c_vec = K % 4 == 0, N % 4 == 0, N % 4 == 0      # device allocations are 256 B aligned
    ia = tid[None, :] + NT * np.arange(-(-A4 // NT), dtype=np.int64)[:, None]
    ib = tid[None, :] + NT * np.arange(-(-B4 // NT), dtype=np.int64)[:, None]
    in_a, in_b = real[None, :] & (ia < A4), real[None, :] & (ib < B4)
    ra, ca = ia // (BK // 4), 4 * (ia % (BK // 4))
    rb, cb = ib // (BN // 4), 4 * (ib % (BN // 4))
    e4 = np.arange(4, dtype=np.int64)

    def a_vec_fn(rv, cv, kv):
        return ra * K + ca, in_a & a_vec & (ra < rv) & (ca + 3 < kv)

    def a_sc_fn(rv, cv, kv):       # 4 predicated scalar loads per slot, lanes off the vector path
        vec = a_vec & (ra < rv) & (ca + 3 < kv)
        off = (ra * K + ca)[:, None, :] + e4[None, :, None]
        act = (in_a & ~vec & (ra < rv))[:, None, :] & ((ca[:, None, :] + e4[None, :, None]) < kv)
        return off.reshape(-1, tpad), act.reshape(-1, tpad)

    def b_vec_fn(rv, cv, kv):
        return rb * N + cb, in_b & b_vec & (rb < kv) & (cb + 3 < cv)

    def b_sc_fn(rv, cv, kv):
        vec = b_vec & (rb < kv) & (cb + 3 < cv)
        off = (rb * N + cb)[:, None, :] + e4[None, :, None]
        act = (in_b & ~vec & (rb < kv))[:, None, :] & ((cb[:, None, :] + e4[None, :, None]) < cv)
        return off.reshape(-1, tpad), act.reshape(-1, tpad)

    globs = [_Global("A", "ld", 4, frozenset("mk"), a_vec_fn), _Global("A", "ld", 1, frozenset("mk"), a_sc_fn),
             _Global("B", "ld", 4, frozenset("kn"), b_vec_fn), _Global("B", "ld", 1, frozenset("kn"), b_sc_fn)]
    # AsT[(c+e)*BM + r] = v.e (4 scalar STS per slot); Bs[r*BN + c] = v (one STS.128)
    sts_a = ((ca[:, None, :] + e4[None, :, None]) * BM + ra[:, None, :]).reshape(-1, tpad)
    act_a = np.broadcast_to(in_a[:, None, :], (in_a.shape[0], 4, tpad)).reshape(-1, tpad)
    shared = [_Shared("st", 1, sts_a, act_a), _Shared("st", 4, BM * BK + rb * BN + cb, in_b)]
    tx, ty = tid % (BN // TN), tid // (BN // TN)
    ru = _runs(cfg)
    assert plan is not None and ru is not None
    per = plan.per_tile(ru)
    shared += _lds(ty * TM, real, per["A"])                        # AsT[kk*BM + ty*TM + i]
    shared += _lds(BM * BK + tx * TN, real, per["B"])               # Bs[kk*BN + tx*TN + j]
    # C: for i < TM, j < TN step 4: float4 store when cVec && col+3 < N, else guarded scalars
    i = np.repeat(np.arange(TM, dtype=np.int64), TN // 4)[:, None]
    j = np.tile(np.arange(0, TN, 4, dtype=np.int64), TM)[:, None]
    crow, ccol = ty[None] * TM + i, tx[None] * TN + j
    creal = np.broadcast_to(real[None], crow.shape)

    def c_vec_fn(rv, cv, kv):
        return crow * N + ccol, creal & (crow < rv) & c_vec & (ccol + 3 < cv)

    def c_sc_fn(rv, cv, kv):
        vec = c_vec & (ccol + 3 < cv)
        off = (crow * N + ccol)[:, None, :] + e4[None, :, None]
        act = (creal & (crow < rv) & ~vec)[:, None, :] & ((ccol[:, None, :] + e4[None, :, None]) < cv)
        return off.reshape(-1, tpad), act.reshape(-1, tpad)

    globs += [_Global("C", "st", 4, frozenset("mn"), c_vec_fn, per="block"),
              _Global("C", "st", 1, frozenset("mn"), c_sc_fn, per="block")]
    bars = (lambda T: 2 * T) if cfg.rung == 5 else (lambda T: T + 1)
    slots = -(-A4 // NT) + -(-B4 // NT)
    return _Kernel(NT, tpad, BM, BN, BK, globs, shared, BK * TM * TN, bars, ldg_slots=5 * slots,
                   sts_slots=4 * -(-A4 // NT) + -(-B4 // NT))


def _warp_tiled(cfg: KernelConfig, M: int, N: int, K: int, plan: LoadPlan | None) -> _Kernel:
    """Rungs 07 (warp tiling, register-staged tile loads), 08 (cp.async pipeline), 09 (rung 08 with
    bank-aware operands), 10 (rung 08, branch-free loop) and 11 (rung 10, predicate-free steady loop): the index maps of the CONTRACT blocks of
    ``gpu/kernels/07_warptile.cu``, ``08_async_pipeline.cu``, ``09_bank_aware.cu``, ``10_lean_pipeline.cu`` and ``11_steady_loop.cu``.

    * Warp-level layout: warp ``w`` owns rows ``wr*WM..``, columns ``wc*WN..`` (``wr = w // (BN/WN)``);
      lane ``l`` sits at (``tr``, ``tc``) of :func:`warp_lane_layout` (interleaved by 2). The inner loop's shared loads
      are LDS.128 of ``AsT[kk*LDA + wr*WM + wi*WSUBM + tr*TM + i]`` (LDA = BM + 4) and
      ``Bs[kk*BN + wc*WN + wj*WSUBN + tc*TN + j]``: per K tile ``BK*WMITER*TM/4`` and ``BK*WNITER*TN/4``
      instructions per warp; all loads of one operand differ by a lane-uniform offset, so one
      instruction per operand is simulated and weighted (the load plan).
    * Rung 07 tile loads (registers staged, as rung 06): A's float4s in lane pairs (``s = i % 2``,
      ``r = (i/2) % BM``, ``c = 4*(2*((i/2)//BM) + s)``): LDG.128 (or 4 guarded scalar LDG off the vector
      path) and 4 scalar STS into the padded transposed tile; B as rung 06 (LDG.128, STS.128).
    * Rung 08 copies (cp.async): A element by element (``k = e % 8``, ``r = (e/8) % BM``,
      ``kc = e // (8*BM)``), 4-byte copies; B in 16-byte copies (4-byte ones when N % 4 != 0). A copy is
      counted as a global load (request, sectors, lines: LDGSTS goes through L1TEX like LDG) AND as a
      shared store of its width at its destination (the copy engine writes shared memory through the
      same banks), with no register staging and no separate STS instruction in the issue count
      (``sts_slots`` 0: the copy is one instruction).
    * Rung 09 (``b_pair_swap``): A as rung 08; B element by element (``r = e // BN``, ``c = e % BN``), 4-byte
      copies into ``Bs[r*BN + (c ^ 1)]`` (a warp reads 128 contiguous bytes and writes 32 banks). The inner
      loop's LDS.128 addresses are rung 08's (only the contents are permuted).
    * Rung 10 (``b_element_fallback``): rung 08's copies, except off B's vector path (N % 4 != 0), where B is
      copied as rung 09 copies it, unswapped (``Bs[r*BN + c]``). Its zero-filled copies of tiles past the
      slice touch no global sector and are not counted (they are real LDGSTS instructions: the SASS mix has them).
    * Rung 11 (``clamped_copies``): rung 10's copies, except that rows of A beyond M and columns of B beyond N
      are read from the matrix's last row (column group), not zero-filled: only K bounds a copy.
    * Out-of-range elements: rung 07 predicates them off (zero in registers); rung 08 copies with
      src-size 0 (zero-fill): no global sector is touched, the shared store still happens.
    * C: as rung 06 (STG.128 / guarded scalars); with SPLITK > 1 scalar atomic adds (RED) of every element
      (rung 12, ``vector_reduction``: one 16-byte reduction per float4 on the vector path, as the STG.128),
      once per non-empty K slice (``c_store_repeats``).
    * Barriers per warp: rung 07 ``T_slice + 1`` (prologue + one per tile), rung 08 ``T_slice``; counted
      per K slice.
    """
    g = geometry(cfg)
    BM, BN, BK = g.BM, g.BN, g.BK
    WM, WN = g.warp_tile
    WMI, WNI = g.warp_iters
    TM, TN = g.thread_step
    WSUBM, WSUBN = WM // WMI, WN // WNI
    LDA = BM + g.a_row_pad
    NT = g.threads
    tid, real, tpad = _lanes(NT)
    async_ = g.async_copy
    b_vec = N % 4 == 0
    a_vec = K % 4 == 0
    c_vec = N % 4 == 0
    e4 = np.arange(4, dtype=np.int64)
    globs: list = []
    shared: list = []
    if not async_:
        A4 = BM * BK // 4
        ia = tid[None, :] + NT * np.arange(-(-A4 // NT), dtype=np.int64)[:, None]
        in_a = real[None, :] & (ia < A4)
        h = ia >> 1
        ra, ca = h % BM, 4 * (2 * (h // BM) + (ia & 1))

        def a_vec_fn(rv, cv, kv):
            return ra * K + ca, in_a & a_vec & (ra < rv) & (ca + 3 < kv)

        def a_sc_fn(rv, cv, kv):
            vec = a_vec & (ra < rv) & (ca + 3 < kv)
            off = (ra * K + ca)[:, None, :] + e4[None, :, None]
            act = (in_a & ~vec & (ra < rv))[:, None, :] & ((ca[:, None, :] + e4[None, :, None]) < kv)
            return off.reshape(-1, tpad), act.reshape(-1, tpad)

        globs += [_Global("A", "ld", 4, frozenset("mk"), a_vec_fn), _Global("A", "ld", 1, frozenset("mk"), a_sc_fn)]
        sts_a = ((ca[:, None, :] + e4[None, :, None]) * LDA + ra[:, None, :]).reshape(-1, tpad)
        act_a = np.broadcast_to(in_a[:, None, :], (in_a.shape[0], 4, tpad)).reshape(-1, tpad)
        shared.append(_Shared("st", 1, sts_a, act_a))
        a_slots, a_sts = ia.shape[0], 4 * ia.shape[0]
    else:
        AE = BM * BK
        ea = tid[None, :] + NT * np.arange(-(-AE // NT), dtype=np.int64)[:, None]
        in_a = real[None, :] & (ea < AE)
        ka, ra, kca = ea % 8, (ea // 8) % BM, ea // (8 * BM)
        ca = 8 * kca + ka

        def a_cp_fn(rv, cv, kv):
            if g.clamped_copies:                     # rung 11: rows beyond M read from row M-1, only K bounds
                return np.minimum(ra, rv - 1) * K + ca, in_a & (ca < kv)
            return ra * K + ca, in_a & (ra < rv) & (ca < kv)

        globs.append(_Global("A", "ld", 1, frozenset("mk"), a_cp_fn))
        shared.append(_Shared("st", 1, ca * LDA + ra, in_a))
        a_slots, a_sts = ea.shape[0], 0
    by_element = g.b_pair_swap or (g.b_element_fallback and not b_vec)
    if by_element:
        # rung 09: B element by element (4-byte cp.async, zero-filled outside B) into pair-swapped positions;
        # rung 10 off the vector path: the same walk, unswapped
        swap = 1 if g.b_pair_swap else 0
        BE = BK * BN
        eb = tid[None, :] + NT * np.arange(-(-BE // NT), dtype=np.int64)[:, None]
        in_eb = real[None, :] & (eb < BE)
        rbe, cbe = eb // BN, eb % BN

        def b_cp_fn(rv, cv, kv):
            if g.clamped_copies:
                return rbe * N + np.minimum(cbe, cv - 1), in_eb & (rbe < kv)
            return rbe * N + cbe, in_eb & (rbe < kv) & (cbe < cv)

        globs.append(_Global("B", "ld", 1, frozenset("kn"), b_cp_fn))
        shared.append(_Shared("st", 1, BK * LDA + rbe * BN + (cbe ^ swap), in_eb))
        b_slots = eb.shape[0]
    B4 = BK * BN // 4
    ib = tid[None, :] + NT * np.arange(-(-B4 // NT), dtype=np.int64)[:, None]
    in_b = real[None, :] & (ib < B4)
    rb, cb = ib // (BN // 4), 4 * (ib % (BN // 4))

    def b_vec_fn(rv, cv, kv):
        if g.clamped_copies:                         # rung 11: columns beyond N read from N-4 .. N-1
            return rb * N + np.minimum(cb, cv - 4), in_b & b_vec & (rb < kv)
        if async_:                                   # N % 4 == 0: gn < N implies gn + 3 < N
            return rb * N + cb, in_b & b_vec & (rb < kv) & (cb < cv)
        return rb * N + cb, in_b & b_vec & (rb < kv) & (cb + 3 < cv)

    def b_sc_fn(rv, cv, kv):
        vec = b_vec & (rb < kv) & ((cb < cv) if async_ else (cb + 3 < cv))
        if async_:
            vec = np.broadcast_to(b_vec, vec.shape) & in_b    # 4-byte copies only off the vector path
        off = (rb * N + cb)[:, None, :] + e4[None, :, None]
        act = (in_b & ~vec & (rb < kv))[:, None, :] & ((cb[:, None, :] + e4[None, :, None]) < cv)
        return off.reshape(-1, tpad), act.reshape(-1, tpad)

    if not by_element:
        globs += [_Global("B", "ld", 4, frozenset("kn"), b_vec_fn), _Global("B", "ld", 1, frozenset("kn"), b_sc_fn)]
        b_slots = ib.shape[0]
        if async_ and not b_vec:
            sts_b = (BK * LDA + (rb * BN + cb)[:, None, :] + e4[None, :, None]).reshape(-1, tpad)
            act_b = np.broadcast_to(in_b[:, None, :], (in_b.shape[0], 4, tpad)).reshape(-1, tpad)
            shared.append(_Shared("st", 1, sts_b, act_b))
        else:
            shared.append(_Shared("st", 4, BK * LDA + rb * BN + cb, in_b))
    # inner loop: LDS.128 fragments (weights from the load plan)
    warp, lane = tid // WARP_SIZE, tid % WARP_SIZE
    wr, wc = warp // (BN // WN), warp % (BN // WN)
    tr, tc = warp_lane_layout(lane, WSUBN // TN)
    ru = _runs(cfg)
    assert plan is not None and ru is not None
    per = plan.per_tile(ru)
    shared += _lds(wr * WM + tr * TM, real, per["A"])
    shared += _lds(BK * LDA + wc * WN + tc * TN, real, per["B"])
    # C store
    rows = (np.arange(WMI, dtype=np.int64)[:, None] * WSUBM + np.arange(TM, dtype=np.int64)[None, :]).ravel()
    cols = (np.arange(WNI, dtype=np.int64)[:, None] * WSUBN + np.arange(0, TN, 4, dtype=np.int64)[None, :]).ravel()
    i = np.repeat(rows, cols.size)[:, None]
    j = np.tile(cols, rows.size)[:, None]
    crow, ccol = (wr * WM + tr * TM)[None] + i, (wc * WN + tc * TN)[None] + j
    creal = np.broadcast_to(real[None], crow.shape)
    split = g.split_k > 1
    vec_ok = (not split) or g.vector_reduction      # rung 12: split-K adds a float4 with one 16-byte reduction

    def c_vec_fn(rv, cv, kv):
        return crow * N + ccol, creal & (crow < rv) & vec_ok & c_vec & (ccol + 3 < cv)

    def c_sc_fn(rv, cv, kv):
        vec = vec_ok & c_vec & (ccol + 3 < cv)
        off = (crow * N + ccol)[:, None, :] + e4[None, :, None]
        act = (creal & (crow < rv) & ~vec)[:, None, :] & ((ccol[:, None, :] + e4[None, :, None]) < cv)
        return off.reshape(-1, tpad), act.reshape(-1, tpad)

    globs += [_Global("C", "st", 4, frozenset("mn"), c_vec_fn, per="block"),
              _Global("C", "st", 1, frozenset("mn"), c_sc_fn, per="block")]
    slices = tuple(k_slices(cfg, K))
    live = sum(1 for b, e in slices if e > b)
    bars = (lambda T: T) if async_ else (lambda T: T + 1)
    return _Kernel(NT, tpad, BM, BN, BK, globs, shared, BK * g.TM * g.TN, bars,
                   ldg_slots=(a_slots + (b_slots if async_ else 5 * b_slots)) if async_ else 5 * (a_slots + b_slots),
                   sts_slots=a_sts + (0 if async_ else b_slots), one_d_grid=True, c_store_repeats=live,
                   per_iteration_bars=1, slices=slices)


def warp_lane_layout(lane, lane_cols: int):
    """(tr, tc) of each lane in a warp-tiled step (rungs 07/08): lanes interleaved by 2, so that every
    4-lane quad covers 2 x 2 (row, column) positions (``tr = (lane // (2 C))*2 + lane % 2``,
    ``tc = (lane // 2) % C``, C = ``lane_cols``), or plain row-major when C or 32/C is 1."""
    C = lane_cols
    if C >= 2 and WARP_SIZE // C >= 2:
        return (lane // (2 * C)) * 2 + (lane & 1), (lane // 2) % C
    return lane // C, lane % C


def pipeline_depth(cfg: KernelConfig) -> dict:
    """How far ahead a config's tile loads run, as data for the timing model: ``stages`` shared buffers,
    ``tiles_in_flight`` tiles loading while one is computed (rung 06/07: 1, through registers; rung 08:
    STAGES - 1, by cp.async), ``register_staged`` (the loads pass through registers: the thread must
    store them after they land) and ``async_copy``."""
    g = geometry(cfg)
    if g.async_copy:
        return {"stages": g.stages, "tiles_in_flight": g.stages - 1, "register_staged": False, "async_copy": True}
    if cfg.rung in (6, 7):
        return {"stages": 2, "tiles_in_flight": 1, "register_staged": True, "async_copy": False}
    return {"stages": max(1, g.stages), "tiles_in_flight": 0, "register_staged": cfg.rung >= 2,
            "async_copy": False}


# ==================================================================================================
# Block / tile classes
# ==================================================================================================


def _dim_hist(count: int, tile: int, extent: int, coef: int, need_valid: bool) -> list[tuple[int, int, int]]:
    """[(valid, residue, how many)] over the ``count`` tiles of one dimension: ``valid`` = elements of
    the tile inside the matrix (0 when not needed), ``residue`` = (start * coef) mod 8."""
    starts = np.arange(count, dtype=np.int64) * tile
    valid = np.minimum(tile, extent - starts) if need_valid else np.zeros(count, dtype=np.int64)
    res = (starts % SECTOR_WORDS) * (coef % SECTOR_WORDS) % SECTOR_WORDS
    keys, counts = np.unique(valid * SECTOR_WORDS + res, return_counts=True)
    return [(int(k // SECTOR_WORDS), int(k % SECTOR_WORDS), int(c)) for k, c in zip(keys, counts)]


def _classes(kern: _Kernel, M: int, N: int, K: int, gm: int, gn: int, T: int, acc: _Global,
             coef: tuple[int, int, int]) -> dict[tuple[int, int, int, int], int]:
    """{(rows_valid, cols_valid, k_valid, residue): number of (block, tile) pairs} for ``acc``."""
    per_tile = acc.per == "tile"
    dims = [_dim_hist(gm, kern.m_tile, M, coef[0], "m" in acc.deps),
            _dim_hist(gn, kern.n_tile, N, coef[1], "n" in acc.deps),
            _dim_hist(T, kern.k_tile, K, coef[2], "k" in acc.deps) if per_tile else [(0, 0, 1)]]
    out: dict[tuple[int, int, int, int], int] = {}
    for (mv, mr, mc), (nv, nr, nc), (kv, kr, kc) in itertools.product(*dims):
        key = (mv, nv, kv, (mr + nr + kr) % SECTOR_WORDS)
        out[key] = out.get(key, 0) + mc * nc * kc
    return out


# residue coefficients (m0, n0, k0) of each matrix's tile origin: A m0*K + k0, B k0*N + n0, C m0*N + n0
def _coefs(M: int, N: int, K: int) -> dict[str, tuple[int, int, int]]:
    return {"A": (K, 0, 1), "B": (0, 1, N), "C": (N, 1, 0)}


# ==================================================================================================
# simulate
# ==================================================================================================


def _int_estimate(kern: _Kernel, rung: int) -> int:
    """Rough integer / control instructions per warp per K tile (naive: per k step): loop control
    (counter, compare, branch, two pointer bumps = 5), 3 per static global-load instruction (address,
    guard compare, select) and 1 per shared store. Only an estimate: ``model.facts`` has the SASS mix."""
    if rung == 1:
        return 4        # two 64-bit pointer bumps (2 instructions each); unroll 4 amortises the loop control
    return 5 + 3 * kern.ldg_slots + kern.sts_slots


@functools.lru_cache(maxsize=None)
def simulate(cfg: KernelConfig, M: int, N: int, K: int, plan: "str | LoadPlan | None" = "source") -> AccessCounts:
    """Per-launch access counts of ``cfg`` at M x N x K (see the module doc). ``plan`` chooses the
    widths of the inner loop's shared loads: ``"source"`` (default), ``"compiler"``, ``"sass"`` or a
    :class:`LoadPlan`. Cached on all arguments."""
    M, N, K = validate_size(M, N, K)
    if cfg.rung == 0:
        raise ConfigError("cuBLAS (rung 00) has no index maps to simulate", limit="rung")
    lp = resolve_plan(cfg, plan)
    kern = _describe(cfg, M, N, K, lp)
    gx, gy, _ = grid(cfg, M, N)
    gm, gn = (gy, gx) if (cfg.rung != 1 or cfg.p["COALESCED"]) else (gx, gy)
    if kern.one_d_grid:
        gm, gn = -(-M // kern.m_tile), -(-N // kern.n_tile)
    T = -(-K // kern.k_tile)
    blocks = gm * gn
    warps = kern.tpad // WARP_SIZE
    coefs = _coefs(M, N, K)

    # ---- global ----
    tot = dict(gld_requests=0, gld_sectors=0, gst_requests=0, gst_sectors=0, gld_bytes=0, gst_bytes=0)
    it = dict(gld_requests=0, gld_sectors=0, gld_bytes=0, gld_lines=0, gst_requests=0, gst_sectors=0)
    full = (kern.m_tile, kern.n_tile, kern.k_tile)
    for acc in kern.globals:
        classes = _classes(kern, M, N, K, gm, gn, T, acc, coefs[acc.matrix])
        by_valid: dict[tuple[int, int, int], list[tuple[int, int]]] = {}
        for (mv, nv, kv, rho), n in classes.items():
            by_valid.setdefault((mv, nv, kv), []).append((rho, n))
        pre = "gld" if acc.op == "ld" else "gst"
        # the interior representative: all deps valid, the most common residue
        interior = None
        for (mv, nv, kv), lst in by_valid.items():
            if (mv or full[0], nv or full[1], kv or full[2]) == full:
                rho, n = max(lst, key=lambda x: (x[1], -x[0]))
                interior = ((mv, nv, kv), rho)
        for (mv, nv, kv), lst in by_valid.items():
            off, act = acc.fn(mv or full[0], nv or full[1], kv or full[2])
            off = off.reshape(-1, WARP_SIZE)
            act = act.reshape(-1, WARP_SIZE)
            nbytes = int(act.sum()) * acc.width * BYTES_PER_ELEMENT
            for rho, n in lst:
                req, sec = global_requests_sectors(off + rho, act)
                r_, s_ = int(req.sum()), int(sec.sum())
                rep = kern.c_store_repeats if acc.per == "block" else 1
                tot[f"{pre}_requests"] += rep * n * r_
                tot[f"{pre}_sectors"] += rep * n * s_
                tot[f"{pre}_bytes"] += rep * n * nbytes
                if interior == ((mv, nv, kv), rho):
                    it[f"{pre}_requests"] += r_
                    it[f"{pre}_sectors"] += s_
                    if acc.op == "ld":
                        it["gld_bytes"] += nbytes
                        it["gld_lines"] += int(global_lines(off + rho, act).sum())

    # ---- shared (the same in every block and K tile) ----
    sh = dict(lds_instructions=0, lds_wavefronts=0, lds_bank_conflicts=0,
              sts_instructions=0, sts_wavefronts=0, sts_bank_conflicts=0)
    for s in kern.shared:
        a = np.asarray(s.addr).reshape(-1, WARP_SIZE)
        m = np.asarray(s.active).reshape(-1, WARP_SIZE)
        wf, ideal = shared_wavefronts(a, m, s.width, s.op)
        pre = "lds" if s.op == "ld" else "sts"
        sh[f"{pre}_instructions"] += s.weight * int(m.any(axis=1).sum())
        sh[f"{pre}_wavefronts"] += s.weight * int(wf.sum())
        sh[f"{pre}_bank_conflicts"] += s.weight * int((wf - ideal).sum())
    tiles = blocks * T

    # ---- FFMA, barriers, integer estimate ----
    if kern.thread_active is not None:            # naive: threads outside C return at once
        ffma_t = ffma_w = 0
        it_ffma_t = it_ffma_w = 0
        for (mv, _, mc), (nv, _, nc) in itertools.product(_dim_hist(gm, kern.m_tile, M, 0, True),
                                                          _dim_hist(gn, kern.n_tile, N, 0, True)):
            a = kern.thread_active(mv, nv)
            nt, nw = int(a.sum()), int(a.reshape(-1, WARP_SIZE).any(axis=1).sum())
            ffma_t += mc * nc * nt * K
            ffma_w += mc * nc * nw * K
            if (mv, nv) == (kern.m_tile, kern.n_tile):
                it_ffma_t, it_ffma_w = nt, nw
        active_warps_total = ffma_w // max(1, K)
    else:
        ffma_t = tiles * kern.threads * kern.ffma_per_tile
        ffma_w = tiles * warps * kern.ffma_per_tile
        it_ffma_t, it_ffma_w = kern.threads * kern.ffma_per_tile, warps * kern.ffma_per_tile
        active_warps_total = blocks * warps
    int_per = _int_estimate(kern, cfg.rung)
    bar_w = blocks * warps * kern.bars_per_warp(T)
    if kern.per_iteration_bars is not None:     # rungs 07/08: per K slice (split-K)
        bar_w = warps * sum(blocks * kern.bars_per_warp(-(-(e - b) // kern.k_tile))
                            for b, e in kern.slices if e > b)
    per_it = BlockIteration(
        warps=warps, threads=kern.threads,
        gld_requests=it["gld_requests"], gld_sectors=it["gld_sectors"], global_load_bytes_requested=it["gld_bytes"],
        gld_lines=it["gld_lines"],
        lds_instructions=sh["lds_instructions"], lds_wavefronts=sh["lds_wavefronts"],
        lds_bank_conflicts=sh["lds_bank_conflicts"], sts_instructions=sh["sts_instructions"],
        sts_wavefronts=sh["sts_wavefronts"], sts_bank_conflicts=sh["sts_bank_conflicts"],
        ffma_thread=it_ffma_t, ffma_warp=it_ffma_w,
        bar_warp=(warps * 2 if cfg.rung in (2, 3, 4, 5) else warps if cfg.rung == 6
                  else warps * kern.per_iteration_bars if kern.per_iteration_bars is not None else 0),
        int_warp_est=(it_ffma_w if cfg.rung == 1 else warps) * int_per,
        gst_requests=it["gst_requests"], gst_sectors=it["gst_sectors"])
    return AccessCounts(
        config_key=cfg.key, M=M, N=N, K=K, plan=lp, blocks=blocks, warps_per_block=warps, k_iterations=T,
        gld_requests=tot["gld_requests"], gld_sectors=tot["gld_sectors"],
        gst_requests=tot["gst_requests"], gst_sectors=tot["gst_sectors"],
        lds_instructions=tiles * sh["lds_instructions"], lds_wavefronts=tiles * sh["lds_wavefronts"],
        lds_bank_conflicts=tiles * sh["lds_bank_conflicts"],
        sts_instructions=tiles * sh["sts_instructions"], sts_wavefronts=tiles * sh["sts_wavefronts"],
        sts_bank_conflicts=tiles * sh["sts_bank_conflicts"],
        ffma_thread=ffma_t, ffma_warp=ffma_w, bar_warp=bar_w,
        ldg_instructions=tot["gld_requests"], stg_instructions=tot["gst_requests"],
        int_warp_est=(ffma_w if cfg.rung == 1 else active_warps_total * T) * int_per,
        global_load_bytes_requested=tot["gld_bytes"], global_store_bytes_requested=tot["gst_bytes"],
        unique_dram_bytes_min=(M * K + K * N + M * N) * BYTES_PER_ELEMENT,
        per_block_iteration=per_it)


# ==================================================================================================
# Comparison with ncu rows
# ==================================================================================================

EXACT_FIELDS = ("gld_requests", "gld_sectors", "gst_requests", "gst_sectors", "ffma_thread",
                "lds_instructions", "sts_instructions", "lds_ideal_wavefronts", "sts_ideal_wavefronts")
"""Compared with ncu for equality: they follow from the addresses alone."""

BOUNDED_FIELDS = ("lds_wavefronts", "lds_bank_conflicts", "sts_wavefronts", "sts_bank_conflicts")
"""Compared one-sided: ncu >= simulated, the excess at most :data:`EXCESS_TOLERANCE` of the measured
wavefronts. In real kernels (not in one-warp probes) ncu counts some wavefronts / bank conflicts more
than the addresses cause - the same number in both counters, so ``wavefronts - conflicts`` (the ideal)
still agrees exactly. The excess is not a function of the addresses (two runs of rung 02 32x32x32 at
2048^3: 2,530,108 and 2,534,607 extra STS wavefronts); the likely cause is shared accesses colliding in
the L1 data banks with other traffic of the SM (global-load data arriving in L1 at the same time). On
the H200 rows it reached 0.8 % of the wavefronts for loads and 15 % for stores (rung 02 stores its
tiles right after its global loads return); rung 06, which stores its next tile after the compute
phase, shows almost none (0.002 %)."""

EXCESS_TOLERANCE = {"lds": 0.02, "sts": 0.25}

IDEAL_METRICS = {
    "lds_ideal_wavefronts": (NCU_METRICS["lds_wavefronts"], NCU_METRICS["lds_bank_conflicts"]),
    "sts_ideal_wavefronts": (NCU_METRICS["sts_wavefronts"], NCU_METRICS["sts_bank_conflicts"]),
}


@dataclass(frozen=True)
class MetricDiff:
    """One simulated field against ncu. ``rule`` is ``"=="`` or ``">="`` (ncu may exceed the simulation
    by at most ``tolerance`` x measured wavefronts, see :data:`BOUNDED_FIELDS`)."""

    field: str
    metric: str
    simulated: int
    measured: float | None
    rule: str = "=="
    allowed_excess: float = 0.0

    @property
    def excess(self) -> float | None:
        return None if self.measured is None else self.measured - self.simulated

    @property
    def ok(self) -> bool:
        if self.measured is None:
            return True
        if self.rule == "==":
            return int(round(self.measured)) == self.simulated
        return 0 <= self.excess <= self.allowed_excess

    @property
    def rel(self) -> float | None:
        """(measured - simulated) / measured (kerncraft's sign: positive = the simulation is short)."""
        if self.measured in (None, 0):
            return None
        return (self.measured - self.simulated) / self.measured


def _metric(metrics: Mapping, name: str) -> float | None:
    v = metrics.get(name)
    return None if v is None else float(v)


def compare_ncu_row(row: Mapping, plan: "str | LoadPlan | None" = "sass") -> tuple[AccessCounts, list[MetricDiff]]:
    """Simulate the config and size of one ``gemmscope.ncu`` row (experiments/SCHEMA.md) and pair the
    fields of :data:`EXACT_FIELDS` and :data:`BOUNDED_FIELDS` with the row's metrics (``measured`` None
    where the row lacks a metric). ``plan`` defaults to ``"sass"``: the shared-load widths of the
    compiled code."""
    cfg = KernelConfig.parse(row["config_key"])
    sim = simulate(cfg, int(row["M"]), int(row["N"]), int(row["K"]), plan)
    metrics = row.get("metrics") or {}
    out = []
    for f in EXACT_FIELDS:
        if f in IDEAL_METRICS:
            wf, bc = (_metric(metrics, m) for m in IDEAL_METRICS[f])
            meas = None if wf is None or bc is None else wf - bc
            name = "wavefronts - bank_conflicts (" + ("ld" if f.startswith("lds") else "st") + ")"
            simv = getattr(sim, f"{f[:3]}_wavefronts") - getattr(sim, f"{f[:3]}_bank_conflicts")
            out.append(MetricDiff(f, name, int(simv), meas))
        else:
            out.append(MetricDiff(f, NCU_METRICS[f], int(getattr(sim, f)), _metric(metrics, NCU_METRICS[f])))
    for f in BOUNDED_FIELDS:
        pre = f[:3]
        wf = _metric(metrics, NCU_METRICS[f"{pre}_wavefronts"])
        allowed = 0.0 if wf is None else EXCESS_TOLERANCE[pre] * wf
        out.append(MetricDiff(f, NCU_METRICS[f], int(getattr(sim, f)), _metric(metrics, NCU_METRICS[f]),
                              rule=">=", allowed_excess=allowed))
    return sim, out


def format_diff_table(rows: list, only_bad: bool = False) -> str:
    """A text table of ``[(row, AccessCounts, [MetricDiff])]``: config, size, field, simulated, ncu,
    (ncu - sim)/ncu and the rule; rows that break their rule are flagged."""
    lines = [f"{'config':<34} {'size':<16} {'field':<21} {'simulated':>15} {'ncu':>15} {'(ncu-sim)/ncu':>13}  rule"]
    for row, _sim, diffs in rows:
        size = f"{row['M']}x{row['N']}x{row['K']}"
        for d in diffs:
            if only_bad and d.ok:
                continue
            meas = "-" if d.measured is None else f"{d.measured:,.0f}"
            rel = "" if d.rel is None else f"{d.rel:+.3%}"
            rule = "==" if d.rule == "==" else f">= (excess <= {d.allowed_excess:,.0f})"
            flag = "" if d.ok else "   <-- FAILS"
            lines.append(f"{row['config_key']:<34} {size:<16} {d.field:<21} {d.simulated:>15,} {meas:>15} "
                         f"{rel:>13}  {rule}{flag}")
    return "\n".join(lines)


# ==================================================================================================
# Store lines of one block (the timing model's epilogue)
# ==================================================================================================


def global_sectors(addr, active) -> np.ndarray:
    """Distinct 32-byte sectors touched by the active lanes of each warp-level global instruction (of the word each
    lane's address names: a 16-byte store that starts a sector lies in it)."""
    return _distinct_per_warp(addr, active, SECTOR_WORDS)


@functools.lru_cache(maxsize=4096)
def _probe_describe(cfg: KernelConfig, K: int | None = None, N: int | None = None) -> _Kernel:
    """The kernel description at the interior, sector-aligned probe (:func:`model.counts.probe_size`) the C-store
    counts and the tag banks use; ``K`` or ``N`` set a leading dimension of their own."""
    g = geometry(cfg)
    return _describe(cfg, 2 * g.BM, N or 2 * g.BN, K or max(64, 4 * g.BK), resolve_plan(cfg, "source"))


@functools.lru_cache(maxsize=None)
def block_store_counts_partial(cfg: KernelConfig, rv: int, cv: int, element: bool) -> tuple[int, int]:
    """(128-byte lines, 32-byte sectors) the C stores of one block touch, each summed over its warp-level store
    instructions, when only ``rv`` rows and ``cv`` columns of its tile lie inside C (a block on C's last block row
    or column: its lanes outside C are predicated off, and a store none of whose lanes is inside touches nothing).
    At the interior, sector-aligned probe (``element``: every 16-byte store as four 4-byte ones)."""
    kern = _probe_describe(cfg)
    rv, cv = min(int(rv), kern.m_tile), min(int(cv), kern.n_tile)
    lines = sectors = 0
    for acc in kern.globals:
        if acc.op != "st":
            continue
        off, act = acc.fn(rv, cv, kern.k_tile)
        off = np.asarray(off).reshape(-1, WARP_SIZE)
        act = np.asarray(act).reshape(-1, WARP_SIZE)
        for e in (range(acc.width) if element and acc.width > 1 else (0,)):
            lines += int(global_lines(off + e, act).sum())
            sectors += int(global_sectors(off + e, act).sum())
    return lines, sectors


@functools.lru_cache(maxsize=None)
def copy_duplicate_wavefronts(cfg: KernelConfig, k_res: int, n_res: int, rv: int, cv: int) -> int:
    """Data-stage wavefronts one block's 4-byte asynchronous copies (``cp.async`` of 4 bytes, ``LDGSTS``) take in one
    iteration beyond the broadcast rule, when only ``rv`` rows and ``cv`` columns of its tile lie inside C: a kernel
    that copies the rows of A beyond M, or the columns of B beyond N, clamped into the matrix (rungs 11, 12) makes
    lanes read the same word, and a 4-byte copy does not broadcast it - each such lane takes a wavefront of its own
    (Nsight Compute on the H200, ``experiments/results/h200/logs/l1break-2026-12-02``: rung 12 at 6144 x 14 x 4096 ran
    its L1 data pipe at 75 % of its peak against 37 % at N = 16, its 16-byte copies, about 900 wavefronts more a
    block and K tile where its 24 all-clamped and 8 part-clamped copies of B count 888 more). A's rows K words apart
    and B's N (``k_res``, ``n_res``: their residues mod 32, as the bank a row starts in depends on)."""
    g = geometry(cfg)
    if not g.async_copy:
        return 0
    K = 64 * BANKS + int(k_res)
    N = 64 * BANKS + int(n_res)
    kern = _describe(cfg, 2 * g.BM, N, max(K, 4 * g.BK), resolve_plan(cfg, "source"))
    rv, cv = min(int(rv), kern.m_tile), min(int(cv), kern.n_tile)
    extra = 0
    for acc in kern.globals:
        if acc.op != "ld" or acc.width != 1:
            continue
        off, act = acc.fn(rv, cv, kern.k_tile)
        off = np.asarray(off, dtype=np.int64).reshape(-1, WARP_SIZE)
        act = np.asarray(act, dtype=bool).reshape(-1, WARP_SIZE)
        # each lane's own word (a multiple of the banks apart per lane: the same bank) against the broadcast's
        own = off + BANKS * (off.max(initial=0) + 1) * np.arange(1, WARP_SIZE + 1)
        extra += int((_distinct_per_bank_max(own, act) - _distinct_per_bank_max(off, act)).sum())
    return extra


def _block_store_counts(cfg: KernelConfig, element: bool) -> tuple[int, int]:
    """(128-byte lines, 32-byte sectors) one interior block's C stores touch, each summed over its warp-level store
    instructions, at an interior, sector-aligned probe (``element``: every 16-byte store as four 4-byte ones)."""
    kern = _probe_describe(cfg)
    return block_store_counts_partial(cfg, kern.m_tile, kern.n_tile, element)


def block_store_sectors(cfg: KernelConfig, element: bool = False) -> int:
    """32-byte sectors that one interior block's C stores touch, summed over its warp-level store instructions, as
    :func:`block_store_lines` counts lines (``element``: C's rows not 16-byte aligned, 16-byte stores as four 4-byte
    ones, each in the sector of its 16 bytes): the SM's store path takes a cycle for each
    (:data:`model.facts.STORE_PATH`)."""
    return _block_store_counts(cfg, element)[1]


def block_store_lines(cfg: KernelConfig, element: bool = False) -> int:
    """128-byte lines that one interior block's C stores touch, summed over its warp-level store
    instructions: the L1 tag stage handles one line a cycle (a store whose 32 lanes write 32 rows of C touches 32).
    ``element``: the same stores where C's rows are not 16-byte aligned (N % 4 != 0), so that a kernel's
    16-byte stores fall back to four 4-byte ones each (rungs 05-12's ``cVec``), each touching the lines
    its word does."""
    return _block_store_counts(cfg, element)[0]


# ==================================================================================================
# The L1 tag stage's banks
# ==================================================================================================


@functools.lru_cache(maxsize=8)
def _bank_table(columns: tuple[int, ...]) -> np.ndarray:
    """The bank of every line index below 2^len(columns) (the hash of :func:`tag_banks` as a lookup table)."""
    idx = np.arange(1 << len(columns), dtype=np.int64)
    out = np.zeros_like(idx)
    for i, c in enumerate(columns):
        if c:
            out ^= ((idx >> i) & 1) * c
    return out.astype(np.int8)


def tag_banks(lines: np.ndarray, columns: tuple[int, ...]) -> np.ndarray:
    """The L1 tag bank of each 128-byte line index: the XOR of ``columns[i]`` over the index's set bits ``i``
    (:data:`model.facts.L1_TAG_BANKS`, four banks numbered 0-3; bits beyond the columns do not count)."""
    lines = np.asarray(lines, dtype=np.int64)
    return _bank_table(tuple(columns))[lines & ((1 << len(columns)) - 1)].astype(np.int64)


def tag_bank_max(addr, active, columns: tuple[int, ...]) -> np.ndarray:
    """Per warp-level global load (rows of ``addr``: absolute word addresses, ``active``: lanes), the most distinct
    128-byte lines it looks up in one L1 tag bank: the tag stage looks up one line a bank a cycle, so this is the
    load's cycles there (at least one for an active load)."""
    addr = np.asarray(addr, dtype=np.int64).reshape(-1, WARP_SIZE)
    active = np.asarray(active, dtype=bool).reshape(-1, WARP_SIZE)
    lines = np.where(active, addr // (4 * SECTOR_WORDS), -1)
    lines.sort(axis=1)
    new = lines >= 0
    new[:, 1:] &= lines[:, 1:] != lines[:, :-1]
    bank = tag_banks(np.maximum(lines, 0), columns)
    counts = np.zeros((len(lines), 4), dtype=np.int64)
    rows = np.broadcast_to(np.arange(len(lines))[:, None], lines.shape)
    np.add.at(counts, (rows[new], bank[new]), 1)
    return counts.max(axis=1)


TAG_SAMPLE_TILES = 8      # block rows / columns sampled
_TAG_SAMPLE_K = 32         # k steps sampled (a naive block's: every line phase of a row of A); 32 words of K in tiles


@functools.lru_cache(maxsize=None)
def _tag_operand(cfg: KernelConfig, matrix: str, ld: int, tiles: int, k_tiles: int,
                 columns: tuple[int, ...]) -> float:
    """Tag-bank cycles of one interior block's 4-byte loads of ``matrix`` (the steady path's: active at the probe
    size) in one K tile, its leading dimension ``ld`` (A: K, B: N), averaged over ``tiles`` block rows (A) or columns
    (B) and ``k_tiles`` K tiles; see :func:`tag_bank_cycles`."""
    kern = _probe_describe(cfg, K=ld) if matrix == "A" else _probe_describe(cfg, N=ld)
    probe = _probe_describe(cfg)
    full = (kern.m_tile, kern.n_tile, kern.k_tile)
    cm, cn, ck = _coefs(0, ld if matrix == "B" else 1, ld if matrix == "A" else 1)[matrix]
    blocks = np.arange(tiles) * (kern.m_tile if matrix == "A" else kern.n_tile)
    ks = np.arange(k_tiles) * kern.k_tile
    origins = ((cm if matrix == "A" else cn) * blocks[:, None] + ck * ks[None, :]).ravel()
    total = 0.0
    for acc, pacc in zip(kern.globals, probe.globals):
        if acc.op != "ld" or acc.per != "tile" or acc.matrix != matrix or acc.width != 1:
            continue
        if not np.asarray(pacc.fn(*full)[1]).any():
            continue                    # not the steady path's (an element path: the per-line rule, as before)
        off, act = acc.fn(*full)
        off = np.asarray(off, dtype=np.int64).reshape(-1, WARP_SIZE)
        act = np.asarray(act, dtype=bool).reshape(-1, WARP_SIZE)
        addr = origins[:, None, None] + off[None, :, :]
        per = tag_bank_max(addr.reshape(-1, WARP_SIZE), np.broadcast_to(act, addr.shape).reshape(-1, WARP_SIZE),
                           columns)
        total += float(per.reshape(len(origins), -1).sum(axis=1).mean())
    return total


def _tile_loads(kern: _Kernel):
    """``(access, offsets, active)`` of each global load of ``kern``'s K tile that some lane of an interior block
    issues (offsets in words, both ``(warps, 32)``)."""
    full = (kern.m_tile, kern.n_tile, kern.k_tile)
    for acc in kern.globals:
        if acc.op != "ld" or acc.per != "tile":
            continue
        off, act = acc.fn(*full)
        off = np.asarray(off, dtype=np.int64).reshape(-1, WARP_SIZE)
        act = np.asarray(act, dtype=bool).reshape(-1, WARP_SIZE)
        if act.any():
            yield acc, off, act


@functools.lru_cache(maxsize=None)
def _probe_narrow(cfg: KernelConfig, matrix: str) -> tuple[float, float]:
    """(warp-level requests, 128-byte lines) per interior block and K tile of the steady path's 4-byte loads of
    ``matrix`` at the probe size."""
    req = lines = 0.0
    for acc, off, act in _tile_loads(_probe_describe(cfg)):
        if acc.matrix != matrix or acc.width != 1:
            continue
        r_, _ = global_requests_sectors(off, act)
        req += float(r_.sum())
        lines += float(global_lines(off, act).sum())
    return req, lines


def lines_leading_dimension(ld: int, unit_words: int = 32) -> int:
    """A leading dimension (words) with the same segments for :func:`warp_lines` as ``ld`` at segments of up to
    ``unit_words`` words: below twice the segment itself, else two segments plus its residue (rows at least two
    segments apart, their phase kept)."""
    ld, u = int(ld), max(int(unit_words), 32)
    return ld if ld < 2 * u else 2 * u + ld % u


@functools.lru_cache(maxsize=None)
def warp_lines(cfg: KernelConfig, tiles: int, K: int | None = None, N: int | None = None,
               unit_bytes: int = 128) -> float:
    """Distinct aligned ``unit_bytes`` segments (default: 128-byte lines) one warp's global loads (the steady
    path's, interior) touch in ``tiles`` consecutive K tiles (k steps, for the naive kernel), averaged over the
    block's warps that load: the independent L2 / DRAM requests a warp waits for, where its loads that fall in one
    line wait for one request (the naive kernel's A, one row walked a word a k step: a line for 32 k steps; its B, a
    new row each k step, a line of its own unless N is below 32 words), and lines in one DRAM page arrive together
    (``unit_bytes`` = the page: ``experiments/batch_latency.py``). At A's leading dimension ``K`` and B's ``N``
    (default: the probe size's; pass them through :func:`lines_leading_dimension`), each matrix aligned. The timing
    model spreads them over the latencies the SASS loop waits in series (:func:`model.timing._waited_latency`)."""
    probe = _probe_describe(cfg, K=K, N=N)
    g = geometry(cfg)
    coefs = _coefs(2 * g.BM, N or 2 * g.BN, K or max(64, 4 * g.BK))
    per_warp: dict[int, list[np.ndarray]] = {}
    for acc, off, act in _tile_loads(probe):
        step = coefs[acc.matrix][2] * probe.k_tile
        tag = 0 if acc.matrix == "A" else 1 << 40            # A's and B's segments apart
        words = max(int(unit_bytes) // BYTES_PER_ELEMENT, 1)
        lines = (off[None, :, :] + step * np.arange(max(int(tiles), 1))[:, None, None]) // words + tag
        for w in np.flatnonzero(act.any(axis=1)):
            per_warp.setdefault(int(w), []).append(lines[:, w, act[w]].ravel())
    if not per_warp:
        return 0.0
    return float(np.mean([np.unique(np.concatenate(v)).size for v in per_warp.values()]))


@functools.lru_cache(maxsize=None)
def tag_bank_cycles(cfg: KernelConfig, K: int, N: int, gm: int, gn: int,
                    columns: tuple[int, ...]) -> tuple[tuple[float, float, float], ...]:
    """The L1 tag banks' cost of one interior block's 4-byte global loads at these leading dimensions: per operand
    (A, B) with more than one line a load, ``(cycles, requests, lines)`` - the most distinct lines a load looks up in
    one tag bank (:func:`tag_bank_max`), summed over the block's loads of its steady path in one K tile (k step, for
    the naive kernel), averaged over the first ``min(gm, 8)`` block rows (A), ``min(gn, 8)`` block columns (B) and
    32 words of K (at least 8 K tiles), with absolute addresses (A's tile origin ``m0 K + k0``, B's ``k0 N + n0``, the
    matrices aligned); requests and lines at the profile's probe size, for the per-line rule
    (:data:`model.facts.L1_TAG`) beside which the timing model takes them as a floor
    (:func:`model.timing._l1_wavefronts`). Why: the uncoalesced naive kernel's k step costs up to 27 % more at
    K = 449 than at 479 with the same lines, sectors and banks (kscan32, ``experiments/l1_pairs.py``)."""
    probe = _probe_describe(cfg)
    kt = max(-(-K // probe.k_tile), 1)
    ks = max(_TAG_SAMPLE_K // probe.k_tile, 8)      # K tiles: every line phase (32 words), at least eight tiles
    out = []
    for matrix, ld, tiles, k_tiles in (("A", int(K), min(int(gm), TAG_SAMPLE_TILES), min(kt, ks)),
                                       ("B", int(N), min(int(gn), TAG_SAMPLE_TILES), ks)):
        req, lines = _probe_narrow(cfg, matrix)
        if not req or lines <= req:
            continue            # one line a load: its bank is never busier than the per-line rule
        out.append((_tag_operand(cfg, matrix, ld, tiles, k_tiles, columns), req, lines))
    return tuple(out)
