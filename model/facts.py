"""Compiler facts of the kernel configs, read from the shipped cache (no compiler needed).

``model/data/compiler_facts/<arch>.json`` holds, per config key and target architecture, what NVRTC
(the compiler CuPy uses on the device, same options) and ptxas made of the kernel: registers per
thread, static shared memory, local memory (stack / spills) and the SASS instruction mix, over the
whole function, over the main K loop's body and over its steady-state iteration. The files are produced by
``python -m tools.compiler_facts ... --ship`` (``tools/compiler_facts.py``, which needs the optional
``requirements-facts.txt``); this module only reads them.

    >>> from model.facts import load_facts, registers_for
    >>> registers_for(cfg, "sm_90")          # or registers_for(cfg, load_gpu("h200"))
    167

Families in the histograms are SASS mnemonics with modifiers stripped (``IMAD.MOV.U32`` -> ``IMAD``),
memory instructions keeping their width (``LDS``, ``LDS.64``, ``LDS.128``, ``LDG``, ``LDG.128``,
``STS``, ``STG.128``, ``LDL``/``STL`` = local memory).
"""
from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

__all__ = ["FACTS_DIR", "Facts", "available_archs", "facts_for", "load_facts", "registers_for", "stale_keys"]

FACTS_DIR: Path = Path(__file__).resolve().parent / "data" / "compiler_facts"
KERNEL_DIR: Path = Path(__file__).resolve().parent.parent / "gpu" / "kernels"


def _frozen(d: Mapping[str, int] | None) -> Mapping[str, int]:
    return MappingProxyType(dict(d or {}))


BANK_CONFLICT_CYCLES = {"quad": 1.5, "pairs": 1.0, "three": 1.0}
"""Dispatch cycles of one register-bank conflict counted under each rule of ``tools/bank_conflicts.py``.
``quad`` (sm_90): 1.5, the excess dispatch stall Nsight Compute's per-instruction sampling measured on the H200
(2.0, 1.5 and 1.2 cycles per conflicting FFMA over the others in three kernels, 2026-11-30,
``experiments/results/h200/logs/source-2026-11-30/``). ``pairs`` / ``three`` (other GPUs, not measured here):
one extra operand read, one cycle."""

FFMA_DISPATCH_CYCLES = {"sm_90": 0.25}
"""Dispatch-stall cycles of every FFMA, beside its register-bank conflicts: the base rate at which the dispatch
unit holds an FFMA whose operands conflict in no bank. Measured on the H200 by Nsight Compute's per-instruction
stall sampling (``stall_dispatch`` per executed FFMA with no three uncached sources in one bank, 2026-11-30,
``experiments/results/h200/logs/source-2026-11-30/``): 0.16 (rung 10's 128x256x8), 0.25 (rung 07's 128x128x16
w64x32) and 0.36 (rung 07's 128x128x16 w64x64) cycles; 0.25 is their middle. It does not depend on how many
uncached sources the FFMA has, nor on a conflict in the instruction before it. Every warp holds at the same
FFMAs, so the timing model adds these cycles to an iteration like the other fixed stalls, once per round
(``Profile.bank_conflicts``). Other architectures: not measured here, 0."""
INSTRUCTION_FETCH = {"sm_90": (32768, 6.7)}
"""(L0 instruction-cache bytes per scheduler, bytes a cycle a scheduler fetches from beyond it) per architecture.
A main loop whose code does not fit the L0 is fetched again every iteration: the loop's path bytes / the rate is
a floor under the iteration (:func:`model.timing._round_cycles`), one stream per scheduler (its warps run the
loop in phase). Measured on the H200 by ``experiments/icache.py`` (``experiments/results/h200/icache-2026-11-30.json``,
2026-11-30): a loop of N independent FFMAs issues at 1.01-1.05 cycles per instruction up to 24 KB, 1.16 at
32.05 KB and 2.42-2.49 from 40 KB to 128 KB with one warp per scheduler (16 B / 2.42 = 6.6 B a cycle), 1.11-1.17
per instruction and scheduler with two warps (7.1 B a cycle). The values were first inferred from Nsight
Compute's per-instruction sampling of our kernels (``experiments/results/h200/logs/source2-2026-11-30/``):
loops of 19-21 KB wait 0.01-0.06 cycles per instruction for instructions, rung 07's 41 KB spilling tile 0.12
with two warps per scheduler and 0.88 alone, issuing one every 2.63 cycles (16 B / 2.63 = 6.1; 6.7 taken); the
blind rounds lean7 and edge_val8 were predicted with (32768, 6.7), and the microbenchmark, run after them,
agrees. Other architectures: not measured, no floor."""

CODE_CACHE = {"sm_90": (131072, 2.7)}
"""(bytes of the SM's instruction cache beyond the L0 that keeps a kernel's code between blocks and launches, bytes a
cycle a scheduler fetches code that is not in it) per architecture: code beyond this cache comes from L2. Measured on
the H200 by ``experiments/icache_cold.py`` (``experiments/results/h200/icache_cold-2026-12-01.json``, 2026-12-01):
loops of 48-128 KB run at the L0-miss rate of :data:`INSTRUCTION_FETCH` (2.42-2.44 cycles per instruction, one warp
per scheduler), loops of 192 and 256 KB at 5.88-5.91 (16 B / 5.9 = 2.7 B a cycle; 2.6 with two warps a scheduler);
a relaunched kernel, and the second block of an SM, find code of up to 128 KB still cached (their first pass costs
no more than a later one). A kernel whose SASS exceeds the cache makes every block fetch from L2 the code it runs
once (before and after its main loop) and its first pass over the loop (:func:`model.timing.evaluate`). Other
architectures: not measured, no charge."""

STORE_PATH = {"sm_90": (0.976, 1.017)}
"""(cycles per 128-byte line, cycles per 32-byte sector) one warp-level global store holds the SM's store path, per
architecture: a store of ``L`` lines and ``S`` sectors costs ``L x line + S x sector`` cycles, whether its lanes write
4 or 16 bytes. Measured on the H200 by ``experiments/store_patterns.py``
(``experiments/results/h200/store_patterns-2026-12-01b.json``, 2026-12-01, one block of 8 warps on each of four SMs,
so that the L2 does not pace the stores): eight patterns (the tiled kernels' C epilogues in 16-byte and 4-byte stores,
one line, one sector a row, 32 rows), 6.6-63 cycles a store, least squares without an intercept (residuals within 4
cycles). A 4-byte and a 16-byte store over the same 32 sectors cost the same (41.4 and 41.5 cycles), so an epilogue
that falls back to 4-byte stores (C's rows not 16-byte aligned) takes four times as long. The timing model charged one
cycle a line before (the load tag stage's rule), a fifth of a 16-byte epilogue's cost. Other architectures: not
measured, one cycle a line (no sector charge)."""

DRAM_FETCH_BYTES = {"sm_90": 64}
"""Bytes the L2 fills from DRAM when a sector misses, per architecture. Measured on the H200 by
``experiments/dram_fetch.py`` (``experiments/results/h200/dram_fetch-2026-12-01.json``, 2026-12-01): one thread reading
the four sectors of 1,024 lines in turn after an L2 flush pays DRAM's latency for sectors 0 and 2 (669-690 cycles,
medians of three repeats) and an L2 hit's for sectors 1 and 3 (301-305): 64 bytes. Other architectures: not
measured, one 32-byte sector (:mod:`model.timing`)."""

L2_REDUCTION_RAMP = {"sm_90": (0.937, 1.052)}
"""(start, end) of the range of buffer sizes, in L2 capacities, over which float reductions passing through a buffer
again and again go from all hitting the L2 to all missing it, per architecture: a buffer of ``start`` x L2 or less
stays in the L2, one of ``end`` x L2 or more is read from DRAM and written back on every pass (LRU), and the share
that misses grows linearly in between (the lines of a buffer near the L2's size do not spread evenly over its sets,
so some sets overflow first). Measured on the H200 by ``experiments/red_beyond_l2.py``
(``experiments/results/h200/red_beyond_l2-2026-12-01b.json`` and ``-c.json``, 2026-12-01): the rate of 16-byte
reductions is 3.15 TB/s up to 55 MiB and 1.42 TB/s from 80 MiB, in address order and in the split-K epilogue's
128 x 128 tile order alike; the share of misses that blend of the two rates implies, from 52 to 72 MiB 1 MiB apart,
fitted by least squares with a linear ramp (the fit's only data). Other architectures: not measured, a sharp step
at the L2's capacity (:func:`model.timing.evaluate`)."""

SLOT_CLASS_ISSUE_CYCLES = {"sm_90": {"ac": 1.00}}
"""Issue cycles an FFMA's register-bank conflict takes from its scheduler, by the class of its uncached sources
(``tools.bank_conflicts.SLOT_CLASSES``; ``ac``: a and c in one bank of four), per architecture. Measured on the H200
by Nsight Compute (tenth session, ``experiments/results/h200/logs/dispatch-2026-12-01/``): over 67 profiled kernels
(1.2e11 FFMA executions) a kernel's dispatch-stall samples per FFMA are 0.064 + 1.92 ab + 1.00 ac + 3.37 three (least
squares; left out one at a time within 0.068 rms), where the ``ac`` FFMA itself records 0.36 (0.22 without a class):
its extra operand read holds the scheduler's dispatch, and the other warps' FFMAs queued behind it record the stall.
So the cycles are the scheduler's, not the warp's: the timing model adds them to a warp's issue
(``Profile.instructions_per_warp``), paid once per warp, where :data:`FFMA_DISPATCH_CYCLES` and the ``three`` class's
:data:`BANK_CONFLICT_CYCLES` stay fixed stalls paid once per round. Why it matters: four-lane-column warp tiles
(``WN / WNITER / TN = 4``) leave 12-18 % of their FFMAs in class ``ac`` (the compiler keeps B, not A, in the reuse
cache), eight-column ones under 3 %, and issue 6-9 % less often (Nsight Compute, the same log). Not fitted on timing
rows. The regression's ``ab`` term (1.92) charged the same way was tried and left out: with it rung 10's
four-warp tiles went 9-11 % pessimistic (README, twelfth session); the choice was made with the shipped rows in
view, so the blind rounds after it are its test. Other architectures: not measured, no charge."""

L1_TAG = {"sm_90": (0.82, 3.31)}
"""(cycles a global-load instruction spends in the L1 tag stage beside its lines, 128-byte lines the stage looks up a
cycle) per architecture, for loads that stream (a main loop's: each line is fetched into the L1 once, or read again
for a few iterations while its next sectors arrive): one warp's load costs ``max(1, c0 + lines / rate)`` cycles.
Measured on the H200 by ``experiments/l1_lines.py`` (``experiments/results/h200/l1_lines-2026-12-01.json``,
2026-12-01, one 32-warp block per SM): loads whose lanes walk K along 4, 8, 16 and 32 rows of A in distinct banks
cost 2.16, 3.10, 5.65 and 10.52 cycles a warp-load (the least-squares line: 0.82 + lines / 3.31); the same loads
hitting in L1 every time cost 1.20, 2.38, 4.32 and 8.38 (0.26 + lines / 3.93), one or two lines a load 1.0. Rows in
one bank cost one data-stage wavefront each (32 rows: 32.0 cycles, whether they hit or stream), so the data stage
and the tag stage bind in turn (:func:`model.timing._l1_wavefronts`). Other architectures: not measured, the tag
stage at 3 lines a cycle with no per-load term (the figure inferred from the H200's naive-kernel rows before this
benchmark)."""



L1_TAG_BANKS = {"sm_90": (1, 2, 1, 2, 3, 1, 2, 3, 2, 1, 2, 1, 3, 1, 3, 2, 1, 3)}
"""The L1 tag stage's banks per architecture: four banks, each looking up one 128-byte line a cycle; a line's bank is
the XOR of ``columns[i]`` over the set bits ``i`` of its index (byte address / 128), bits 0-17. A warp's load of
4-byte words costs the tag stage at least the most distinct lines it looks up in one bank
(:func:`model.simulate.tag_bank_max`; :func:`model.timing._l1_wavefronts` takes the longer of that and the per-line
rule :data:`L1_TAG`, which was measured at one stride, and the data stage's wavefronts). Measured on the H200
(2026-12-02, one block of 8-32 warps per SM, every load a hit): ``experiments/l1_pairs.py`` - 427 loads of 2, 4 and 8
lines 1-160 lines apart and one or two powers of two up to 2^17 lines apart
(``experiments/results/h200/l1_pairs2-2026-12-02.json``, ``l1_pairs_bits-2026-12-02.json``) - gives the columns, every
load within 0.005 cycles; ``experiments/l1_stride.py`` checks them on 33 + 102 other loads (8, 16 and 32 rows 447-1031
words apart, ``l1_stride_rerun-...``, ``l1_stride_step-...``: within 0.01 cycles on average with the buffer's address
known; Nsight Compute's ``l1tex__t_output_wavefronts`` per request equals the cycles). At K = 449 a column walk of 32
rows costs 13-15 cycles a load, at 455 9-12. Other architectures: not measured (:data:`L1_TAG`'s rule alone)."""


@dataclass(frozen=True)
class Facts:
    """What the compiler made of one config for one architecture."""

    config_key: str
    arch: str
    nvrtc_version: str
    registers: int
    """Registers per thread (cuobjdump REG)."""
    shared_static_bytes: int
    """Static ``__shared__`` bytes (0 for the rungs that use dynamic shared memory)."""
    local_bytes: int
    """Local memory per thread: the stack frame (spills, local arrays; cuobjdump STACK) plus any
    ``.local`` section (cuobjdump LOCAL); 0 = no spills."""
    spill_stores: int
    """Bytes of spill stores / loads reported by ptxas (``--ptxas-options=-v``)."""
    spill_loads: int
    barriers: int
    sass_total: Mapping[str, int] = field(default_factory=lambda: _frozen(None))
    """Instruction-family histogram of the whole function (static count, padding excluded)."""
    sass_loop: Mapping[str, int] = field(default_factory=lambda: _frozen(None))
    """Histogram of the main K loop's body: one iteration (see ``tools/compiler_facts.py``)."""
    sass_loop_path: Mapping[str, int] = field(default_factory=lambda: _frozen(None))
    """Histogram of the steady-state iteration: one path through the loop body (interior tile, aligned
    loads, not the last tile); equal to ``sass_loop`` when the body has no branches."""
    loop_found: bool = False
    loop_ffma: int | None = None
    loop_instructions: int | None = None
    loop_path_instructions: int | None = None
    loop_branches: int | None = None
    """Conditional branches inside the loop besides the back edge (0: every count is one iteration)."""
    loop_tiles: int | None = None
    """K tiles (BK*TM*TN FFMAs each; k steps for the naive rung) per loop iteration: >1 when the
    compiler unrolled the K loop."""
    expected_loop_ffma: int | None = None
    loop_ffma_ok: bool | None = None
    total_instructions: int = 0
    prologue_instructions: int | None = None
    epilogue_instructions: int | None = None
    stack_bytes: int = 0
    shared_reserved_bytes: int | None = None
    name: str = ""
    """Mangled kernel name."""
    source_sha256: str = ""
    """Digest of the kernel file that was compiled (see :func:`stale_keys`)."""
    # The main loop's structure (``tools.compiler_facts.loop_structure``): one warp alone issuing the
    # steady-state path in order, waiting on its source registers.
    loop_trace_cycles: tuple | None = None
    """Cycles of one steady-state loop iteration of one warp alone, ``[global latency][shared latency]`` on
    the grid of ``trace_schema`` (global 0..1600 step 100 cycles, shared 20 and 40 cycles)."""
    prologue_trace_cycles: tuple | None = None
    """The same for the code before the loop, once."""
    loop_latency_chain: float | None = None
    """Global-load latencies that add up in one iteration (the trace's slope at long latency)."""
    loop_global_loads: int | None = None
    """Global loads (LDG, LDGSTS) in one steady iteration."""
    loop_load_waits: int | None = None
    """Issue stalls on a global load's result per steady iteration."""
    loop_loads_in_flight: int | None = None
    """The most global loads in flight when the warp first waits for one."""
    loop_order: str = ""
    """Order of global loads (G), shared stores (S), shared loads (L), FFMA runs (F), barriers (B)."""
    trace_schema: Mapping[str, Any] | None = None
    loop_element_path_instructions: int | None = None
    """Instructions of the main loop's *element path* (``tools.compiler_facts.steady_path(..., longest=True)``): the
    same bytes as the steady iteration by its longest path - the guarded element loads a kernel takes when A's or
    B's rows are not 16-byte aligned (K or N not a multiple of 4); equal to ``loop_path_instructions`` when the loop
    has no such branch. None: facts made before the field."""
    loop_element_trace_cycles: tuple | None = None
    """``loop_trace_cycles`` of the element path (the same grid). None: facts made before the field."""
    loop_bank_rule: str | None = None
    """The rule ``loop_bank_conflicts`` was counted with (``tools.bank_conflicts.BANK_RULE``); None: ``pairs``."""
    loop_bank_conflicts: int | None = None
    """Register-bank conflicts of the steady iteration's FFMAs (the operand reuse cache taken into account:
    ``tools/bank_conflicts.py``, rule ``loop_bank_rule``: ``quad`` on sm_90, ``pairs`` before): the timing model
    charges each :data:`BANK_CONFLICT_CYCLES` dispatch cycles (:attr:`bank_conflict_cycles`). None: facts made
    before the field."""

    loop_slot_classes: Mapping[str, int] | None = None
    """FFMAs of the steady iteration by the class of their uncached sources (``tools.bank_conflicts.SLOT_CLASSES``:
    ``{"three": n, "ab": n, "ac": n}``; ``three`` equals ``loop_bank_conflicts`` under the ``quad`` rule): the timing
    model charges :data:`SLOT_CLASS_ISSUE_CYCLES` issue cycles for each (:meth:`slot_class_issue_cycles`). None: facts
    made before the field (no charge)."""

    epilogue_path_instructions: int | None = None
    """Instructions an interior block runs after the main loop (``tools.compiler_facts.epilogue_path``): the path from
    the loop's exit that stores the most bytes with the fewest instructions - the interior tile's aligned stores, not the
    guarded element paths of edge tiles - without the loops of K tiles after the main loop. ``epilogue_instructions``
    counts every instruction after the loop: all the store paths, and the loop that drains a pipeline's last STAGES - 1
    tiles (rungs 11/12: 4,644 against 441 for rung 11's classic config). Not used by the timing model: charged in place
    of ``epilogue_instructions`` (twelfth session), with the code fetched beyond the instruction cache cut to the code a
    block runs or not, it made sizes <= 512^3 worse (8.7 -> 9.0-9.3 % over all rows) and did not mend rung 11 at very
    small K (README, twelfth session). None: facts made before the field."""
    epilogue_tile_loop_instructions: int | None = None
    """Instructions of the loops after the main loop that compute K tiles (the drain of rungs 11/12, the naive kernel's
    remainder loop): their iterations are K tiles, which the timing model counts with the main loop's; their code is
    fetched once a block like the rest of the epilogue."""

    loop_queue: Mapping[str, Any] | None = None
    """The steady iteration's *ordering* cost at the shared-memory pipe (``tools.sched_sim.loop_queue``): one
    scheduler's warps simulated cycle by cycle over the steady path's SASS, with the SM's pipe serving the simulated
    accesses' wavefronts (``simulated``), the same warps with a free pipe (``issue_bound``) and the pipe's busy cycles
    (``pipe_bound``), with ``blocks`` resident blocks per SM, per SASS loop iteration. The timing model charges what
    ``simulated`` exceeds its own combination of the two bounds by. None: not simulated (no charge)."""

    @property
    def queue_cycles(self) -> tuple[float, float, float]:
        """``(simulated, issue_bound, pipe_bound)`` cycles per SASS loop iteration of one round, with
        ``queue_blocks`` blocks per SM (zeros when not simulated)."""
        q = self.loop_queue
        if not q:
            return (0.0, 0.0, 0.0)
        i = list(q["global_latencies"]).index(0.0)     # the order alone: every global load's latency hidden
        return (float(q["simulated"][i]), float(q["issue_bound"][i]), float(q["pipe_bound"]))

    @property
    def queue_blocks(self) -> int:
        """Resident blocks per SM the ordering cost was simulated at (0 when not simulated)."""
        return int(self.loop_queue["blocks"]) if self.loop_queue else 0

    @property
    def bank_conflict_cycles(self) -> float:
        """Dispatch cycles of the steady iteration's register-bank conflicts (0 when not counted)."""
        return float(self.loop_bank_conflicts or 0) * BANK_CONFLICT_CYCLES[self.loop_bank_rule or "pairs"]

    @property
    def slot_class_issue_cycles(self) -> float:
        """Issue cycles of the steady iteration's register-bank conflicts by class (:data:`SLOT_CLASS_ISSUE_CYCLES`;
        0 when the classes are not counted or not measured for this architecture)."""
        cost = SLOT_CLASS_ISSUE_CYCLES.get(self.arch, {})
        return float(sum(c * (self.loop_slot_classes or {}).get(k, 0) for k, c in cost.items()))

    @property
    def spills(self) -> bool:
        return bool(self.local_bytes or self.spill_stores or self.spill_loads)

    def loop(self, fam: str) -> int:
        """Static count of one instruction family in the whole main-loop body (0 if absent or no loop)."""
        return int(self.sass_loop.get(fam, 0))

    def per_iteration(self, fam: str) -> int:
        """Count of one instruction family in the steady-state iteration (``sass_loop_path``)."""
        return int(self.sass_loop_path.get(fam, 0))

    def per_iteration_all_widths(self, base: str) -> int:
        """e.g. ``per_iteration_all_widths("LDS")`` = LDS + LDS.64 + LDS.128 + ... per steady iteration."""
        return sum(v for k, v in self.sass_loop_path.items() if k == base or k.startswith(base + "."))

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Facts":
        names = set(cls.__dataclass_fields__)
        kw = {k: v for k, v in d.items() if k in names}
        kw["sass_total"] = _frozen(d.get("sass_total"))
        kw["sass_loop"] = _frozen(d.get("sass_loop"))
        kw["sass_loop_path"] = _frozen(d.get("sass_loop_path"))
        for k in ("loop_trace_cycles", "prologue_trace_cycles", "loop_element_trace_cycles"):
            if kw.get(k) is not None:
                kw[k] = tuple(tuple(r) for r in kw[k])
        if kw.get("loop_slot_classes") is not None:
            kw["loop_slot_classes"] = MappingProxyType(dict(kw["loop_slot_classes"]))
        if kw.get("loop_queue") is not None:
            kw["loop_queue"] = MappingProxyType(dict(kw["loop_queue"]))
        if kw.get("trace_schema") is not None:
            kw["trace_schema"] = MappingProxyType(dict(kw["trace_schema"]))
        for k in ("spill_stores", "spill_loads", "barriers", "local_bytes", "stack_bytes", "shared_static_bytes"):
            if kw.get(k) is None:
                kw[k] = 0
        return cls(**kw)


def _arch_of(arch_or_gpu: Any) -> str:
    return arch_or_gpu if isinstance(arch_or_gpu, str) else getattr(arch_or_gpu, "arch")


def available_archs() -> tuple[str, ...]:
    """Architectures with a shipped facts file, e.g. ``("sm_80", "sm_86", "sm_89", "sm_90")``."""
    return tuple(sorted(p.stem for p in FACTS_DIR.glob("sm_*.json")))


@functools.lru_cache(maxsize=None)
def load_facts(arch: str) -> Mapping[str, Facts]:
    """{config key: :class:`Facts`} for ``arch`` (a read-only mapping; empty if none shipped).

    Configs whose compile failed are left out."""
    arch = _arch_of(arch)
    path = FACTS_DIR / f"{arch}.json"
    if not path.exists():
        return MappingProxyType({})
    data = json.loads(path.read_text())
    raw = data.get("archs", {}).get(arch, {}).get("facts", {})
    return MappingProxyType({k: Facts.from_json(d) for k, d in raw.items() if "error" not in d})


def facts_for(cfg, arch) -> Facts | None:
    """Facts of ``cfg`` (a :class:`~model.registry.KernelConfig` or its key) for ``arch`` (``"sm_90"`` or
    a :class:`~model.spec.GPUSpec`), or None when not in the cache."""
    key = cfg if isinstance(cfg, str) else cfg.key
    return load_facts(_arch_of(arch)).get(key)


def registers_for(cfg, arch) -> int | None:
    """Registers per thread the compiler gives ``cfg`` on ``arch`` (None when not in the cache)."""
    f = facts_for(cfg, arch)
    return None if f is None else f.registers


def stale_keys(arch) -> list[str]:
    """Config keys whose facts were made from a kernel file that has changed since (to regenerate)."""
    from .registry import RUNGS

    digests = {}
    for r in RUNGS.values():
        if r.file and (KERNEL_DIR / r.file).exists():
            digests[r.number] = hashlib.sha256((KERNEL_DIR / r.file).read_bytes()).hexdigest()[:16]
    out = []
    for k, f in load_facts(_arch_of(arch)).items():
        d = digests.get(int(k.split(":")[0]))
        if f.source_sha256 and d and f.source_sha256 != d:
            out.append(k)
    return out
