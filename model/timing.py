"""The timing model: latency hiding by the resident warps, the SM's pipes, L2 and DRAM traffic, waves.

A pure function of (GPU spec, kernel config, problem size) that returns a
:class:`~model.roofline.Prediction` naming the limit that sets the predicted time, with every limit's
time. No term is keyed on the kernel's rung: every number comes from the kernel's *structure* as the
model sees it, so a new kernel is predicted by the same code.

Inputs
------
* the **warp-level access simulator** (:mod:`model.simulate`): per interior block and K tile (one
  iteration of the main loop), the global-load line wavefronts, the shared-memory wavefronts (bank
  conflicts included), the FFMAs, the C-store sectors of one block, the K depth of one iteration;
* the **compiler facts** (:mod:`model.facts`, NVRTC + nvdisasm for the GPU's architecture):
  registers per thread (occupancy), the SASS instructions of one steady-state iteration (issue), and
  the **main-loop structure**: one warp alone issuing the steady-state path in order with a register
  scoreboard, each instruction held for the stall count the compiler wrote in its control code (the
  fixed-latency waits: bits 105-108 of the 128-bit encoding, ``nvdisasm -hex``; Jia et al. 2018, sec. 2.1)
  (``tools.compiler_facts.warp_trace``), gives the cycles of one iteration as a function of
  the global- and shared-load latencies. That table carries every latency the code exposes: all loads
  issued before their first use (one latency per iteration), each load stored to shared memory before
  the next is issued (one latency per load, added up), loads issued a whole compute phase ahead of
  their use (double buffering: hidden up to the phase's length), cp.async groups waited on S-1 tiles
  later. The same trace of the code before the loop gives the prologue (address set-up, the first
  tile of a pipelined kernel);
* the **launch geometry and occupancy** (:mod:`model.occupancy`; optionally a forced cap on the
  resident blocks per SM, see ``max_blocks_per_sm``);
* the **GPU spec** and its ``[timing]`` table (:func:`rates`).

Mechanisms
----------
*Latency hiding by warps (Little's law; Volkov, "Understanding Latency Hiding on GPUs", PhD thesis,
UC Berkeley 2016).* Each resident warp alternates between *delay* - the cycles its iteration spends
waiting, ``Z = T1 - I/4`` where ``T1`` is the single-warp trace time of one iteration and ``I`` its
instructions (the ``3I/4`` of a warp's own issue that the other schedulers cannot use is in ``Z``:
Seidmann's approximation of the 4-scheduler station by one server of a quarter the service time
plus a delay) - and *service* at the SM's pipes, ``s = (issue^p + (shared + L1)^p)^(1/p)`` per warp
and iteration: issue ``I/4`` (4 schedulers, one instruction a cycle each), shared ``S/r`` (``r``
wavefronts a cycle from the shared bandwidth), L1 ``G``: the global loads' wavefronts in the L1 data
stage (bank conflicts included: A's rows K words apart, B's N; :func:`model.counts.global_load_wavefronts`)
or their 128-byte lines in the tag stage at ~3 a cycle, whichever is longer (one line a cycle where the
data stage is not known). Shared and global wavefronts *add*: shared memory and the L1 are one SRAM
array behind one data stage (the L1TEX unit; Nsight Compute counts both kinds in
``l1tex__data_pipe_lsu_wavefronts``), so they cannot overlap each other, only the issue. The exponent
``p`` says how far the data stage and the issue overlap.

*Fixed stalls are not hidden.* The lone warp's iteration at zero global-load latency, ``t0`` (its issue paced
by the control codes' stall counts, its waits on shared loads), exceeds its ``I`` instructions by the fixed
stalls. Every warp of the SM runs the same code in the same phase (a barrier each iteration, blocks started
together), so those stalls fall in the same cycles and no other warp fills them: ``t0 - I`` is added to the
iteration after the mean value analysis rather than given to it as a delay. (Nsight Compute at 4096^3: rung
10's branch-free loop, with a fifth of rung 08's stall cycles, runs 5-15 % faster at the same geometry; hidden
as a delay, the difference would be 0.2-3 %.) Register-bank conflicts join them: on sm_90 an FFMA whose three
source registers not served by the operand reuse cache share one of four banks (index mod 4) waits 1.5 cycles
at dispatch (Nsight Compute's per-instruction stall sampling on the H200, ``tools/bank_conflicts.py``, rule
``quad``); on older GPUs the compiler facts keep the two-bank count ``pairs`` (Jia et al. 2018), one cycle each.
So does every FFMA's base dispatch stall, 0.25 cycles on the H200 (the same sampling, FFMAs without a bank
conflict: :data:`model.facts.FFMA_DISPATCH_CYCLES`). Added once per round, these stalls weigh on a scheduler
in inverse proportion to its warps: a lone warp per scheduler (4-warp blocks, one per SM) pays them in full.
The H200 rows of rungs 07-10 show it: per scheduler and instruction 1.4-1.8 cycles with one warp, 1.2-1.4 with
two, against 1 + (c1 - 1) / w for a lone-warp rate c1 (fifth session of 2026-11-30).

*Conflicts that hold the scheduler.* An FFMA whose uncached ``a`` and ``c`` sources share a bank of four (class
``ac``, ``tools.bank_conflicts.SLOT_CLASSES``) holds its scheduler's dispatch: over 67 kernels Nsight Compute finds
the kernel's dispatch stall per FFMA rising by 1.00 cycle for each, where the FFMA itself records 0.36 (the other
warps' FFMAs queued behind it record the rest). Those cycles are the scheduler's, lost to every warp on it, so they
are issue cycles (:data:`model.facts.SLOT_CLASS_ISSUE_CYCLES`), paid once per warp, and lengthen the lone warp's
iteration alike (its fixed stalls unchanged). Four-lane-column warp tiles leave 12-18 % of their FFMAs in class
``ac``, eight-column ones under 3 %: the former issue 6-9 % less often at the same geometry, and the model had them
4-12 % too fast (twelfth session, 2026-12-01).

*The order of the asynchronous copies.* A loop whose shared-memory writes are ``cp.async`` copies (``LDGSTS``)
issues them where ptxas placed them: with ``SPREAD = 1`` a whole tile's copies in one cluster, whose wavefronts
occupy the SM's shared-memory pipe while the shared loads of the next FFMAs queue behind them (Nsight Compute,
``experiments/results/h200/logs/burst-2026-12-01``: short- and long-scoreboard stalls at the FFMAs behind the
cluster). The compiler facts keep, per config, one scheduler's warps simulated cycle by cycle over the steady path's
SASS (``tools.sched_sim``: control codes, scoreboard, barrier, cp.async groups, the pipe serving the simulated
accesses' wavefronts at one a cycle per SM) at zero global-load latency: the simulated iteration, the same warps with
a free pipe and the pipe's busy cycles (:attr:`model.facts.Facts.loop_queue`). What the simulated iteration exceeds
its two bounds combined as the pipes are (exponent ``p``) is added to the round, like the fixed stalls. Register-staged
stores (a global load, then ``STS``) enter the pipe when their data arrives, which the simulation does not know:
they are not charged (with them, the cross-validated error of the rungs that stage through registers rose from 9.4 %
to 10.2 %).

*Instruction fetch.* A main loop whose code exceeds the L0 instruction cache (32 KB a scheduler on sm_90,
measured by ``experiments/icache.py`` and seen in Nsight Compute's ``no_instruction`` stalls:
:data:`model.facts.INSTRUCTION_FETCH`) is fetched
again every iteration at the rate beyond the L0 (6.7 B a cycle): its path bytes / that rate is a floor under a
round, one stream per scheduler (its warps run the loop in phase). Rung 07's spilling 41 KB tile, alone on its
scheduler at skinny shapes, runs at this floor; loops of 19-21 KB never meet it.

*Blocks partly outside C.* A kernel whose threads outside C return before the loop (the naive kernel)
runs only the warps of an edge block that have a thread inside C, and their loads touch only the active
lanes' lines: the launch's mean block replaces the interior one (:func:`_partial_blocks`). At a skinny
M or N every block is an edge block (at N = 1 one warp of 32 runs, alone on its SM).

*The load/store pipe's issue rate.* A warp's memory instruction (global, shared, local) is accepted by
the SM's LD/ST units, ``[sm].ld_st_units`` per SM: it holds its pipe ``warp_size / ld_st_units``
cycles whatever its width, so the shared and L1 terms are each at least that many cycles per
instruction. 32 units (GV100, GA100, GH100: 1 cycle) never bind beyond the wavefront count; 16 units
(TU10x, GA10x, AD10x: 2 cycles, NVIDIA's architecture whitepapers' SM figures) halve the rate of
narrow loads: the naive kernel's two 4-byte loads per FFMA and the shared-memory kernel's 4-byte
shared loads run at half the H200's per-cycle rate on an RTX A6000 or RTX 4060. **Mean value analysis** (Reiser & Lavenberg 1980)
of the ``n`` resident warps in this closed network gives the time of one iteration of all of them:
``Z + s`` for one warp (latency exposed), ``n s`` when enough warps hide it - the seed's 16x16 versus
32x32 question is this ``n``.

*Loaded latency.* A loop with a barrier waits, every iteration, for the slowest of all its warps' tile
loads: the global-load latency the trace waits is ``latency_scale x`` the L2 hit latency (``latency_scale`` is
one of the calibrated parameters), plus DRAM's extra latency (unloaded, DRAM - L2) in the share of the
iterations whose tiles come from DRAM (:func:`_wave_walks`): the blocks of a wave start together and walk K in
step, so a tile the wave touches first (every tile of the first wave: the L2 is flushed before every timed
launch) or again after the L2 lost it is read from DRAM once and waited for by every block of the wave that
shares it (a hit on a miss in flight waits for the miss). Per operand, that share is its DRAM reads over the
panel bytes the waves touch: at 4096^3 with 128 x 128 tiles a wave reads the 64 MB of B again (the L2 kept
none of it) and nearly every iteration waits for DRAM, though the L2 serves each tile to the 4-32 blocks that
share it (a miss ratio of a few percent, the share this model took before 2026-12-01). Nsight Compute on the
rung-04 classic config there (one block per SM, nothing hides the wait): 761 cycles of ``long_sb`` and 281 of
``barrier`` stalls per iteration, against the 708-cycle latency of the miss-ratio model. Fitted with the share,
``latency_scale`` fell from 2.09 to 1.2: the loaded L2 latency is near the unloaded one, DRAM's the difference. The
L2 fills a 64-byte fetch from DRAM (``experiments/dram_fetch.py``: of a line's four sectors read in turn, the first
and third cost DRAM's 680 cycles, the second and fourth an L2 hit's 300), so a tile of A, which reads
``4 BK`` contiguous bytes of each row per iteration, asks DRAM only every ``64 / (4 BK)`` iterations. A loop
without a barrier (each warp on its own, e.g. the naive kernel) waits only for its own few sectors per exposure:
the unloaded L2 hit latency, or DRAM's when one of them is read from DRAM, with the probability the traffic model's
L2 miss ratio gives (:func:`_waited_latency`: these warps drift apart, and a read from DRAM is waited for by the
warp that missed; in a launch of one wave, whose blocks all start at once, the wave's share: the naive kernel at
small sizes, 8x8 to 16x16 blocks at 336x304x400 32-42 % optimistic in `edge_val12` before). This is the seed's 16x16 versus 32x32 case: 32 warps of one 1024-thread block hide most
of the latency, as the forced-residency measurements show.

*A block's warps stretch its compute phase.* Between two barriers the ``W`` warps of a block share the
SM's schedulers, each issuing at ``1/phi`` of a lone warp's rate (``phi = ceil(W / 4)``): a load issued a
compute phase ahead of its use (double buffering, cp.async) is hidden by a phase ``phi`` times longer
than the lone-warp trace's. The trace's global-latency stall is taken at ``lg / phi`` and scaled by
``phi``; a load waited on right after it is issued stays exposed in full (``phi x lg / phi``).

*Rounds, waves and the tail.* With ``b`` blocks resident per SM (occupancy, or the forced cap), an SM
given ``n = ceil(blocks / SMs)`` blocks runs ``n // b`` full rounds of ``b`` blocks and one partial
round (the last, partly filled wave; the even deal - the blocks after the first wave go to the slots that free
first, ``experiments/block_trace.py``, and where those free in random order the busiest SM takes more:
:func:`busiest_sm_rounds`, whose time is reported beside the prediction, ``time_refill_random_s``), each of ``ceil(K / k_tile)`` iterations plus the block's
**prologue** (its traced latency) and **epilogue** (its instructions and C stores: a cycle a line and a cycle a
sector of each store, ``experiments/store_patterns.py``; four 4-byte stores for each 16-byte one where C's rows are
not 16-byte aligned). A loop without a barrier
whose blocks drift apart (more than one wave) overlaps them with the other resident blocks' loops: the
epilogue's instructions fill the loop's idle issue slots, 1/b of the prologue's latency is exposed
(Nsight Compute on the naive kernel at K = 24: ``experiments/results/h200/logs/naive-2026-12-01/``).

*Code beyond the instruction cache.* The SM keeps a kernel's code beyond the L0 in an instruction cache that
holds 128 KB on the H200 (``experiments/icache_cold.py``: loops of up to 128 KB stream at the L0-miss rate, 192 KB
and more at 2.7 B a cycle from L2; a relaunched kernel and the second block of an SM find code that fits still
there: :data:`model.facts.CODE_CACHE`). A kernel whose SASS exceeds it streams in from L2, in its first round of
blocks and at that rate per scheduler (the same whether 1 or 132 SMs fetch: ``experiments/icache_share.py``), the
code its blocks run - not the code they jump over (the element path's copy of the K loop; the steady loop when a
block's tiles all fit the drain loop) - beside the prologue and the first iteration, once for each warp a scheduler
holds when the blocks run the steady loop (warps that drift apart there fetch apart) and once when all their tiles
run in the drain loop (in phase, one stream). Why (``fetch14``, fourteenth session, a development sweep): rung 11's
classic config at one round of one block an SM pays 80-86 KB of fetch at K = 256 (it runs 84 KB of its 194) and
46-55 KB at K = 32 (drain loop only: 49 KB), with two blocks an SM (``rounds12``) 171-184 KB at K >= 64 and 48-61 KB
at K = 32; rung 11's 128x256 tile (eight warps, one block an SM) as the classic config with two. Where the code a
block runs with its steady loop exceeds the cache (the BK = 32 tiles below), the first round pays the whole SASS
(244-251 KB of 258 measured with the steady loop, 150-173 KB without it: over-charged there). Later rounds find the code their blocks run in
the cache when it fits - the code before the loop, the loop, and after it the epilogue path and the drain loop
(:attr:`model.facts.Facts.epilogue_path_instructions`; rung 11's classic config runs 85 KB of its 194) - and pay
nothing more; where it does not fit (rung 11/12's BK = 32 tiles run about 150 KB, two 69 KB loops) every round fetches
its once-run code and its first pass over the loop again, the part the fetch exceeds the work it feeds by added to
the round. Why: ``kscan`` (2026-12-01) put 39-54 us a block beyond the loop on the BK = 32 tiles against 5-15
predicted, with Nsight Compute's ``no_instruction`` stalls at 75 % of their once-run code; ``rounds12`` (twelfth
session) measured rounds of blocks at K = 32-512: rung 11's classic config costs 10.1 us a round at K = 32 as the
kernels that fit do (the model charged 24.6, every round) and 30-35 us once, in its first round, at K >= 64; the
BK = 32 tile pays every round (35 and 54 us a round at K = 64 and 128, 37 and 49 charged). Not modelled: launches of
1-8 blocks pay 15-45 % more fetch than launches of 16 and more (fetch14; Nsight Compute,
``ncu_fetch-2026-12-01.jsonl``, counts the code read from L2 once per GPC in use, by the GPC's instruction cache).
Later development data points elsewhere (``logs/fetch19-2026-12-01/``, ``logs/source6-2026-12-01/``): the fetch
extrapolates to about the whole SASS at no K tiles, and ``experiments/icache_loops.py`` finds two loops past the L0
behind code a block jumps over fetched again on every launch where the same loops alone stay cached - which code a
launch finds cached is not yet known, so the rule above stands until it is.

*Traffic (L2 and DRAM).* L2 serves every tile load (``A x ceil(N/BN) + B x ceil(M/BM)`` bytes, less what
co-resident blocks of one SM share in L1) and C's stores (the simulated store sectors); DRAM reads the
unique A and B plus the re-reads of the panels that the blocks of one wave (in launch order) touch and
that the previous wave's traffic (its panels and its C: stores allocate in L2) evicted from L2, and writes
back the C that later waves evicted before the kernel ended. The L2 that keeps what every SM reads is the
L2 over its partitions (two on GA100/GH100: each partition caches what its own SMs read; see
``_L2_PARTITIONS``). The memory system is further pipes of the same network: the SMs' time and the L2
and DRAM times combine as the SM's pipes do, ``(t_sm^p + t_l2^p + t_dram^p)^(1/p)`` with the same ``p``
(traffic that does not bind still costs time as it comes close to binding), plus the launch overhead.

*Split-K's reductions.* With ``S`` K slices each block adds its partial tile into C with float atomics: the L2
reduces every sector request at the GPU's measured reduction rate (``[timing].l2_reduction_bytes_per_s``:
``experiments/microbench.py``, the epilogue's own pattern; 3.4e12 B/s on the H200, half its L2 read bandwidth; half
the L2 bandwidth where not measured), in the L2 time and in the round's epilogue, whose blocks all reduce at once.

*Spills.* Spilled registers (``LDL`` in the loop) are reloaded right before use: each adds the L1 latency
(or L2's, when the warps' local memory does not fit in the L1 left beside the shared-memory carveout the
driver picks: the smallest supported step that holds the resident blocks), divided by the reloads in
flight together (``spill_overlap``, calibrated). Spill loads and stores (``LDL``, ``STL``, every width) also
take the load/store pipe. (Tried in the fourth session of 2026-11-30 and left out: the single-warp trace run at
local-memory latencies, charging the reloads the warp waits for; it under-charged the heavily spilling rung 04/06
configs by up to 2.6x.)

Calibration
-----------
``p``, ``latency_scale`` and ``spill_overlap`` are dimensionless and fitted by least squares on log-time
over measured H200 rows (``tools/calibrate.py``; ``model/data/calibration.json`` says on which rows).
The errors :mod:`analysis.compare` reports are leave-one-rung-out cross-validated.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from .errors import ConfigError
from .facts import (CODE_CACHE, DRAM_FETCH_BYTES, FFMA_DISPATCH_CYCLES, INSTRUCTION_FETCH, L1_TAG, L1_TAG_BANKS,
                    L2_REDUCTION_RAMP, STORE_PATH)
from .occupancy import blocks_per_sm_array, occupancy
from .registry import BYTES_PER_ELEMENT, KernelConfig, geometry, min_registers, validate, validate_size
from .roofline import Prediction, Roof

_SASS_BYTES = 16
"""Bytes of one Volta-and-later SASS instruction (128-bit encoding)."""
_SECTOR_BYTES = 32
"""Bytes of an L2 sector: what the L2 fetches from DRAM at the least (where the fetch is not measured)."""
CALIBRATION_FILE = Path(__file__).resolve().parent / "data" / "calibration.json"
LIMITS = ("issue", "shared", "l1", "latency", "l2", "dram")


@dataclass(frozen=True)
class TimingParams:
    """The three dimensionless parameters (see the module docstring)."""

    p: float = 3.0              # overlap exponent of the SM's pipes (1 = no overlap, inf = max)
    latency_scale: float = 1.5  # loaded global-load latency in units of the L2 hit latency
    spill_overlap: float = 2.0  # spill reloads whose latencies overlap
    calibrated_on: str = "defaults (not calibrated)"

    def to_json(self) -> dict:
        return {"p": self.p, "latency_scale": self.latency_scale, "spill_overlap": self.spill_overlap,
                "calibrated_on": self.calibrated_on}


def _params(d: Mapping) -> TimingParams:
    return TimingParams(float(d.get("p", 3.0)), float(d.get("latency_scale", 1.5)),
                        float(d.get("spill_overlap", 2.0)), d.get("calibrated_on", ""))


@lru_cache(maxsize=None)
def load_loro_params(path: Path = CALIBRATION_FILE) -> dict[int, TimingParams]:
    """{rung: parameters calibrated without that rung} from the shipped calibration (empty if none)."""
    if not path.exists():
        return {}
    d = json.loads(path.read_text())
    return {int(k): _params(v) for k, v in d.get("loro", {}).items()}


def load_params(path: Path = CALIBRATION_FILE) -> TimingParams:
    """The shipped calibration (all rows), or the defaults when none is shipped."""
    if not path.exists():
        return TimingParams()
    return _params(json.loads(path.read_text())["all"])


# --------------------------------------------------------------------------------------------------
# Per-GPU rates
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rates:
    clock_hz: float
    sms: int
    schedulers: int
    shared_wavefronts_per_cycle: float
    l2_bytes_per_s: float
    dram_bytes_per_s: float
    l2_latency_cycles: float
    l1_latency_cycles: float
    shared_latency_cycles: float
    launch_overhead_s: float
    l2_bytes: int
    notes: tuple[str, ...]
    lsu_cycles: float = 1.0   # cycles a warp's memory instruction holds the SM's load/store pipe
    dram_latency_cycles: float = 0.0
    l2_reduction_bytes_per_s: float = 0.0   # float reductions (RED.ADD.F32): 32 B x sector requests a second
    dram_reduction_bytes_per_s: float = 0.0  # float reductions into a buffer beyond the L2: its bytes a second
    l2_spread_cycles: float = 0.0    # standard deviation of one L2 hit's latency (0: every load at the mean)
    dram_spread_cycles: float = 0.0  # of one DRAM access's
    batch_wait_per_load_cycles: float = 0.0  # each further load a warp waits for together adds this beyond the slowest
    dram_page_bytes: int = 128       # a warp's lines within one such DRAM page arrive together (one latency draw)


# Architectural estimates for a GPU whose spec has no [timing] entry for a field. They are published
# microbenchmark figures of the architecture family (in SM cycles), never another GPU's measurement:
#   L2 hit latency: Volta 193, Turing 188 (Jia et al. 2018/2019), Ampere A100 ~200, Ada ~ 270 (Chips and
#   Cheese), Hopper ~260 (Luo et al., "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture", 2024);
#   L1 hit: 28-33 (Jia et al.; Luo et al.); shared: 19-30 (same sources).
_ARCH_L2_LATENCY = {"sm_70": 193.0, "sm_75": 188.0, "sm_80": 200.0, "sm_86": 200.0, "sm_89": 270.0, "sm_90": 260.0}
_ARCH_L1_LATENCY = {"sm_70": 28.0, "sm_75": 32.0, "sm_80": 33.0, "sm_86": 33.0, "sm_89": 33.0, "sm_90": 33.0}
_ARCH_SHARED_LATENCY = {"sm_70": 19.0, "sm_75": 19.0, "sm_80": 23.0, "sm_86": 23.0, "sm_89": 23.0, "sm_90": 29.0}
_L2_BYTES_PER_CYCLE_PER_SM = 32.0   # estimate: sustained L2 read bandwidth per SM and SM cycle
_DRAM_EFFICIENCY = 0.85             # estimate: sustained read bandwidth / datasheet bandwidth
_LAUNCH_OVERHEAD_S = 5.0e-6         # estimate: CUDA-event time of an empty kernel launch


@lru_cache(maxsize=None)
def rates(gpu) -> Rates:
    """The GPU's rates from its spec: the ``[timing]`` table where it has a field, else an architectural
    estimate (named in ``notes``). No GPU borrows another GPU's measured numbers."""
    t = gpu.timing
    notes: list[str] = []

    def get(name, estimate, what):
        v = t.get(name)
        if v is None:
            notes.append(f"{what}: estimated {estimate:.4g} (no [timing].{name} in the spec)")
            return float(estimate)
        return float(v)

    clock = t.get("sustained_clock_hz")
    if clock is None:
        clock = gpu.boost_clock_hz
        if gpu.key != "h200" or "shared_bandwidth_bytes_per_s" not in t:
            notes.append("clock: the boost clock (no [timing].sustained_clock_hz in the spec)")
    clock = float(clock)
    arch = gpu.arch
    shared = get("shared_bandwidth_bytes_per_s", gpu.sm_count * gpu.shared_banks * gpu.shared_bank_bytes * clock,
                 "shared-memory bandwidth (32 banks x 4 B per cycle)")
    dram = t.get("dram_read_bandwidth_bytes_per_s")
    if dram is None:
        dram = gpu.copy_bandwidth_bytes_per_s or _DRAM_EFFICIENCY * gpu.dram_bandwidth_bytes_per_s
        notes.append(f"DRAM read bandwidth: estimated {dram / 1e9:.0f} GB/s (no [timing] field)")
    l2 = get("l2_bandwidth_bytes_per_s", _L2_BYTES_PER_CYCLE_PER_SM * gpu.sm_count * clock,
             f"L2 bandwidth ({_L2_BYTES_PER_CYCLE_PER_SM:.0f} B per SM and cycle)")
    lat = get("l2_latency_cycles", _ARCH_L2_LATENCY.get(arch, 220.0), f"L2 latency ({arch} microbenchmarks)")
    l1 = get("l1_latency_cycles", _ARCH_L1_LATENCY.get(arch, 33.0), f"L1 latency ({arch} microbenchmarks)")
    sh = get("shared_latency_cycles", _ARCH_SHARED_LATENCY.get(arch, 25.0), f"shared latency ({arch} microbenchmarks)")
    launch = get("launch_overhead_s", _LAUNCH_OVERHEAD_S, "launch overhead")
    dlat = get("dram_latency_cycles", 2.3 * lat, "DRAM latency (2.3 x the L2 latency)")
    # a reduction reads and writes its sector in the L2: half the L2's bandwidth where it was not measured
    red = get("l2_reduction_bytes_per_s", l2 / 2.0, "L2 float reductions (half the L2 bandwidth: read and write)")
    # a reduction whose sector is not in the L2 reads it from DRAM and writes it back: half the DRAM copy bandwidth
    # (read + write bytes) where not measured (the H200 measures 1.41 TB/s against 1.95 from its copy bandwidth)
    copy = t.get("dram_copy_bandwidth_bytes_per_s") or gpu.copy_bandwidth_bytes_per_s or float(dram)
    dred = get("dram_reduction_bytes_per_s", float(copy) / 2.0,
               "float reductions beyond the L2 (half the DRAM copy bandwidth: every sector read and written back)")
    # A warp waiting for several loads at once waits for the slowest (experiments/batch_latency.py): where the spec
    # has no measured spread, every load takes the mean latency and the batch costs nothing beyond its issue
    sd2 = float(t.get("l2_latency_spread_cycles", 0.0))
    sdd = float(t.get("dram_latency_spread_cycles", 0.0))
    per_load = float(t.get("batch_wait_per_load_cycles", 0.0))
    page = int(t.get("dram_page_bytes", 128))
    if not (sd2 or sdd or per_load):
        notes.append("latency spread: none measured (a batch of loads waits one latency; experiments/batch_latency.py)")
    return Rates(clock, gpu.sm_count, gpu.sub_partitions, shared / (gpu.sm_count * clock * 128.0), l2, float(dram),
                 lat, l1, sh, launch, gpu.l2_bytes, tuple(notes), gpu.warp_size / gpu.ld_st_units_per_sm,
                 max(dlat, lat), red, dred, sd2, sdd, per_load, page)


# --------------------------------------------------------------------------------------------------
# Per-config profile (size-independent counts per block and iteration)
# --------------------------------------------------------------------------------------------------

_BANK_RESIDUES = 32     # model.counts.BANK_RESIDUES: banks of the L1 data array
# The L1 tag stage where the architecture's is not measured (model.facts.L1_TAG): about 3 lines a cycle, no per-load
# term. No published figure: inferred from the H200 development rows (ladder, edge_dev, edge_val*) of the naive
# kernel walking A's column at an odd K, before experiments/l1_lines.py measured the H200's.
_L1_TAG_DEFAULT = (0.0, 3.0)


def l1_tag(arch: str) -> tuple[float, float]:
    """(cycles a global load spends in the L1 tag stage beside its lines, lines a cycle) of ``arch``."""
    return L1_TAG.get(arch, _L1_TAG_DEFAULT)

TRACE_GLOBAL = np.arange(0.0, 1601.0, 100.0)    # tools.compiler_facts.TRACE_GLOBAL_LATENCIES
TRACE_SHARED = np.array([20.0, 40.0])           # tools.compiler_facts.TRACE_SHARED_LATENCIES


@dataclass(frozen=True)
class Profile:
    """Counts of one interior block in one steady-state iteration of its main loop."""

    warps: int                    # W, warps per block
    k_tile: int                   # K depth of one iteration
    instructions_per_warp: float  # I, SASS instructions per warp and iteration
    shared_wavefronts: float      # S, per block and iteration (loads + stores)
    l1_lines: float               # G, 128-byte line wavefronts of global loads per block and iteration
    gld_sectors: float            # 32-byte sectors of the global loads per block and iteration
    store_sectors: float          # C-store sectors of one block (its epilogue)
    store_lines: float            # C-store 128-byte line wavefronts of one block (L1 tag stage)
    store_lines_element: float    # the same where C's rows are not 16-byte aligned (16-byte stores as 4-byte ones)
    store_sectors_element: float  # C-store sectors (summed over store instructions) there
    registers: int
    source: str                   # "sass" (compiler facts with the loop trace) or "estimate"
    trace: tuple                  # T1(Lg, Ls): single-warp cycles of one iteration on the TRACE_* grid
    prologue: tuple               # the same for the code before the loop (once per block)
    epilogue_instructions: float  # per warp, once per block
    latency_chain: float          # global latencies that add up per iteration (the trace's slope)
    barriers: float = 0.0         # barriers per warp and iteration (simulator)
    local_loads: float = 0.0      # spill reloads (LDL) per warp and iteration
    local_bytes: float = 0.0      # local memory per thread, bytes
    global_load_instructions: float = 0.0   # warp-level LDG per block and iteration
    shared_instructions: float = 0.0        # warp-level LDS + STS per block and iteration
    local_stores: float = 0.0               # spill stores (STL) per warp and iteration
    bank_conflicts: float = 0.0             # dispatch-stall cycles of the FFMAs per warp and iteration: bank conflicts + base rate
    global_load_wavefronts: tuple = ()      # (A by K mod 32, B by N mod 32): L1 data-stage wavefronts per block-iteration
    l1_tag_limited: bool = False            # the data-stage wavefronts are known (see _l1_wavefronts)
    exit_pattern: tuple = (0, 0, 0)         # (threads, BX, COALESCED) when threads outside C return (_partial_blocks)
    fetch_cycles: float = 0.0               # a scheduler's instruction fetch per iteration when the loop exceeds the L0 i-cache
    queue_cycles: tuple = (0.0, 0.0, 0.0)   # (simulated, issue bound, pipe bound) cycles of an iteration of a round of queue_blocks blocks
    queue_blocks: int = 0                   # resident blocks per SM queue_cycles was simulated at (0: not simulated)
    async_copies: float = 0.0               # asynchronous copies (LDGSTS) per warp and iteration
    code_bytes: tuple = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)  # SASS bytes: before the main loop, the loop, after it, the
    # whole kernel, the code a block runs (before the loop, the loop, the epilogue path and the drain loop; the whole
    # kernel where the facts have no epilogue path), the drain loop; and the K tiles the drain loop takes (STAGES - 1
    # where the kernel has one, else 0)
    element_path_extra: float = 0.0         # instructions per warp and iteration the element path adds (K or N % 4 != 0)
    element_trace_extra: tuple = ()         # its lone-warp iteration minus the steady one, on the trace grid
    held_issue_cycles: float = 0.0          # of instructions_per_warp: cycles its FFMAs' a-c bank conflicts hold the scheduler
    loop_tiles: int = 1                     # K tiles (k steps) one iteration of the SASS loop covers


_COUNT_FIELDS = ("warps", "ffma_warp", "lds_instructions", "sts_instructions", "gld_requests", "bar_warp",
                 "int_warp_est", "lds_wavefronts", "sts_wavefronts", "gld_lines", "gst_sectors", "k_tile", "store_lines",
                 "store_lines_element", "store_sectors_element",
                 "gld_sectors")
"""What a profile takes from :func:`model.counts.steady_counts` and :func:`model.counts.steady_extras`."""


def _profile_columns(cnt: Mapping[str, np.ndarray], facts: Sequence, geos: Sequence,
                     registers: Sequence[int | None] | None, cfgs: Sequence[KernelConfig] | None = None
                     ) -> dict[str, np.ndarray]:
    """The profile of many configs as columns (one entry per config): the one definition of the profile,
    used by :func:`profile` (one config) and :func:`_arrays_for` (a whole space).

    ``cnt``: the counts' columns (:data:`_COUNT_FIELDS`; one steady-state iteration: an interior-only
    problem of two tiles per dimension, K long enough that rows of A lie in different 128-byte lines, as
    at any real size: :func:`model.counts.probe_size`); ``facts``: the compiler facts of each config or
    None; ``geos``: the geometries; ``registers``: registers asked for per config (None: the facts', else
    :func:`~model.registry.min_registers`); ``cfgs``: the configs, for the L1 data-stage wavefronts of
    their global loads by leading-dimension residue (:func:`model.counts.global_load_wavefronts`;
    without them, or for a pattern it does not know, the 128-byte lines at every residue)."""
    n = len(geos)
    warps = np.maximum(cnt["warps"], 1.0)
    ffma_per_warp_it = cnt["ffma_warp"] / warps
    # Without a SASS loop: the simulator's instructions; one SASS loop iteration per iteration of ours.
    instr = (cnt["ffma_warp"] + cnt["lds_instructions"] + cnt["sts_instructions"] + cnt["gld_requests"]
             + cnt["bar_warp"] + cnt["int_warp_est"]) / warps
    per, ldl, stl, epi, local = np.ones(n), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
    bank, held = np.zeros(n), np.zeros(n)
    fetch = np.zeros(n)
    code = np.zeros((n, 7))
    elem = np.zeros(n)
    elem_trace = np.zeros((n, len(TRACE_GLOBAL), len(TRACE_SHARED)))
    queue, qblocks, copies = np.zeros((n, 3)), np.zeros(n), np.zeros(n)
    fregs = np.zeros(n, dtype=np.int64)
    traced, loop_trace, pro_trace = [], [], []
    for i, f in enumerate(facts):
        if f is None:
            continue
        fregs[i] = f.registers or 0
        local[i] = float(max(f.local_bytes, f.stack_bytes))
        if f.loop_found and f.loop_ffma and f.loop_path_instructions:
            per[i] = ffma_per_warp_it[i] / f.loop_ffma     # iterations of ours per SASS loop iteration
            instr[i] = f.loop_path_instructions * per[i]
            ldl[i] = f.per_iteration_all_widths("LDL") * per[i]
            stl[i] = f.per_iteration_all_widths("STL") * per[i]
            epi[i] = float(f.epilogue_instructions or 0)
            # the element path (K or N not a multiple of 4): its extra instructions and lone-warp cycles
            if f.loop_element_path_instructions and f.loop_element_trace_cycles and f.loop_trace_cycles:
                elem[i] = max(f.loop_element_path_instructions - f.loop_path_instructions, 0) * per[i]
                elem_trace[i] = np.maximum(np.asarray(f.loop_element_trace_cycles, dtype=np.float64)
                                           - np.asarray(f.loop_trace_cycles, dtype=np.float64), 0.0) * per[i]
            run = (f.total_instructions if f.epilogue_path_instructions is None else
                   (f.prologue_instructions or 0) + (f.loop_instructions or 0) + f.epilogue_path_instructions
                   + (f.epilogue_tile_loop_instructions or 0))
            code[i, :6] = [_SASS_BYTES * float(x or 0) for x in (f.prologue_instructions, f.loop_instructions,
                                                                  f.epilogue_instructions, f.total_instructions, run,
                                                                  f.epilogue_tile_loop_instructions)]
            # a pipelined kernel with a drain loop runs its last STAGES - 1 tiles there, after the steady loop
            code[i, 6] = float(max(geos[i].stages - 1, 0)) if f.epilogue_tile_loop_instructions else 0.0
            # dispatch stalls: the register-bank conflicts and every FFMA's base dispatch stall
            bank[i] = f.bank_conflict_cycles * per[i] + FFMA_DISPATCH_CYCLES.get(f.arch, 0.0) * ffma_per_warp_it[i]
            # the conflicts that hold the scheduler's dispatch (model.facts.SLOT_CLASS_ISSUE_CYCLES): issue cycles
            held[i] = f.slot_class_issue_cycles * per[i]
            instr[i] += held[i]
            # a loop larger than the L0 i-cache is fetched again every iteration (model.facts.INSTRUCTION_FETCH)
            l0, rate = INSTRUCTION_FETCH.get(f.arch, (math.inf, 1.0))
            if (f.loop_instructions or 0) * _SASS_BYTES > l0:
                fetch[i] = f.loop_path_instructions * _SASS_BYTES * per[i] / rate
            # the order of the loop's memory instructions at the shared pipe (model.facts.Facts.loop_queue)
            copies[i] = f.per_iteration_all_widths("LDGSTS") * per[i]
            if f.loop_queue:
                queue[i] = np.asarray(f.queue_cycles) * per[i]
                qblocks[i] = f.queue_blocks
        if f.loop_trace_cycles:
            traced.append(i)
            loop_trace.append(f.loop_trace_cycles)
            pro_trace.append(f.prologue_trace_cycles)
    # No loop trace: one exposed global latency and one shared latency per iteration (all loads issued
    # before their first use, then the shared loads before the FFMAs); the prologue one global latency.
    trace = instr[:, None, None] + TRACE_GLOBAL[None, :, None] + TRACE_SHARED[None, None, :]
    pro = np.repeat((TRACE_GLOBAL + 100.0)[None, :, None], n, axis=0).repeat(len(TRACE_SHARED), axis=2)
    has_trace = np.zeros(n, dtype=bool)
    if traced:
        # the held issue cycles lengthen the lone warp's iteration as they do its issue (its fixed stalls unchanged)
        trace[traced] = np.asarray(loop_trace, dtype=np.float64) * per[traced, None, None] + held[traced, None, None]
        pro[traced] = np.asarray(pro_trace, dtype=np.float64)
        has_trace[traced] = True
    asked = np.zeros(n, dtype=np.int64) if registers is None else np.array([r or 0 for r in registers], dtype=np.int64)
    regs = np.where(asked != 0, asked, np.where(fregs != 0, fregs, [min_registers(g) for g in geos]))
    gld_wf = np.zeros((n, 2, _BANK_RESIDUES))
    gld_wf[:, 0, :] = np.asarray(cnt["gld_lines"], dtype=np.float64)[:, None]
    has_wf = np.zeros(n, dtype=bool)
    exits = np.zeros((n, 3))
    if cfgs is not None:
        from .counts import exit_pattern, load_wavefronts_array
        wf, has = load_wavefronts_array(cfgs)
        gld_wf[has], has_wf[:] = wf[has], has
        for i, c in enumerate(cfgs):
            e = exit_pattern(c)
            if e is not None:
                exits[i] = e
    return {"warps": cnt["warps"], "k_tile": cnt["k_tile"].astype(np.int64), "instr": instr,
            "shared_wf": cnt["lds_wavefronts"] + cnt["sts_wavefronts"], "l1_lines": cnt["gld_lines"],
            "gld_sectors": cnt["gld_sectors"],
            "store_sectors": cnt["gst_sectors"], "store_lines": cnt["store_lines"],
            "store_lines_element": cnt["store_lines_element"],
            "store_sectors_element": cnt["store_sectors_element"], "trace": trace, "prologue": pro,
            "epilogue": epi, "local_loads": ldl, "local_bytes": local, "barriers": cnt["bar_warp"] / warps,
            "registers": regs.astype(np.int64), "has_trace": has_trace, "gld_instr": cnt["gld_requests"],
            "shared_instr": cnt["lds_instructions"] + cnt["sts_instructions"], "local_stores": stl,
            "bank_conflicts": bank, "gld_wf": gld_wf, "has_wf": has_wf, "exits": exits, "fetch": fetch,
            "queue": queue, "queue_blocks": qblocks, "copies": copies, "code": code, "elem": elem,
            "elem_trace": elem_trace, "held": held, "loop_tiles": np.maximum(np.round(1.0 / per), 1.0)}


@lru_cache(maxsize=100_000)
def profile(cfg: KernelConfig, arch: str, registers: int | None = None) -> Profile:
    """The :class:`Profile` of one config (its counts and compiler facts looked up one by one)."""
    from .counts import EXTRA_FIELDS, steady_counts, steady_extras
    from .facts import facts_for

    b, extras = steady_counts(cfg), steady_extras(cfg)
    cnt = {f: np.array([float(extras[f] if f in EXTRA_FIELDS else getattr(b, f))]) for f in _COUNT_FIELDS}
    c = {k: v[0] for k, v in _profile_columns(cnt, [facts_for(cfg, arch)], [geometry(cfg)], [registers],
                                              [cfg]).items()}
    tr = c["trace"]
    chain = float((tr[-1, 0] - tr[-2, 0]) / (TRACE_GLOBAL[-1] - TRACE_GLOBAL[-2]))
    return Profile(warps=b.warps, k_tile=int(c["k_tile"]), instructions_per_warp=float(c["instr"]),
                   shared_wavefronts=float(c["shared_wf"]), l1_lines=float(c["l1_lines"]),
                   gld_sectors=float(c["gld_sectors"]),
                   store_sectors=float(c["store_sectors"]), store_lines=float(c["store_lines"]),
                   store_lines_element=float(c["store_lines_element"]),
                   store_sectors_element=float(c["store_sectors_element"]),
                   registers=int(c["registers"]), source="sass" if c["has_trace"] else "estimate",
                   trace=tuple(map(tuple, tr.tolist())), prologue=tuple(map(tuple, c["prologue"].tolist())),
                   epilogue_instructions=float(c["epilogue"]), latency_chain=chain, barriers=float(c["barriers"]),
                   local_loads=float(c["local_loads"]), local_bytes=float(c["local_bytes"]),
                   global_load_instructions=float(c["gld_instr"]), shared_instructions=float(c["shared_instr"]),
                   bank_conflicts=float(c["bank_conflicts"]),
                   global_load_wavefronts=tuple(map(tuple, c["gld_wf"].tolist())),
                   l1_tag_limited=bool(c["has_wf"]),
                   exit_pattern=tuple(int(x) for x in c["exits"]),
                   local_stores=float(c["local_stores"]), fetch_cycles=float(c["fetch"]),
                   queue_cycles=tuple(float(x) for x in c["queue"]), queue_blocks=int(c["queue_blocks"]),
                   async_copies=float(c["copies"]), code_bytes=tuple(float(x) for x in c["code"]),
                   element_path_extra=float(c["elem"]), element_trace_extra=tuple(map(tuple, c["elem_trace"].tolist())),
                   held_issue_cycles=float(c["held"]), loop_tiles=int(c["loop_tiles"]))


# --------------------------------------------------------------------------------------------------
# Vectorised core
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProfileArrays:
    """Per-config columns of :class:`Profile` and the geometry (one entry per config / row)."""

    BM: np.ndarray
    BN: np.ndarray
    k_tile: np.ndarray
    warps: np.ndarray
    instr: np.ndarray
    shared_wf: np.ndarray
    l1_lines: np.ndarray
    gld_sectors: np.ndarray  # 32-byte sectors of the global loads per block and iteration
    store_sectors: np.ndarray
    store_lines: np.ndarray
    store_lines_element: np.ndarray  # the C stores' lines where C's rows are not 16-byte aligned
    store_sectors_element: np.ndarray  # and their sectors, summed over the store instructions
    trace: np.ndarray        # (rows, len(TRACE_GLOBAL), len(TRACE_SHARED))
    prologue: np.ndarray
    epilogue: np.ndarray
    local_loads: np.ndarray
    local_bytes: np.ndarray
    barriers: np.ndarray     # barriers per warp and iteration
    smem: np.ndarray
    bps: np.ndarray          # resident blocks per SM from the occupancy calculator
    gld_instr: np.ndarray    # warp-level global loads per block and iteration
    shared_instr: np.ndarray  # warp-level shared loads and stores per block and iteration
    local_stores: np.ndarray  # spill stores per warp and iteration
    bank_conflicts: np.ndarray  # dispatch-stall cycles of the FFMAs per warp and iteration (bank conflicts + base)
    gld_wf: np.ndarray       # (rows, 2, 32): L1 data-stage wavefronts of A by K mod 32, of B by N mod 32
    has_wf: np.ndarray       # gld_wf known (else it holds the 128-byte lines): see _l1_wavefronts
    exits: np.ndarray        # (rows, 3): (threads, BX, COALESCED) when threads outside C return, else 0
    fetch: np.ndarray        # instruction-fetch floor of an iteration (cycles; 0: the loop fits the L0 i-cache)
    queue: np.ndarray        # (rows, 3): simulated, issue-bound and pipe-bound cycles of an iteration of a round (Facts.loop_queue)
    queue_blocks: np.ndarray  # resident blocks per SM queue was simulated at (0: not simulated)
    copies: np.ndarray       # asynchronous copies (LDGSTS) per warp and iteration
    code: np.ndarray         # (rows, 7): SASS bytes before the main loop, of the loop, after it, of the whole kernel, run,
    #                          of the drain loop; the K tiles the drain loop takes
    elem: np.ndarray         # instructions per warp and iteration the element path adds (Facts.loop_element_path_instructions)
    elem_trace: np.ndarray   # (rows, trace grid): the element path's lone-warp iteration minus the steady path's
    split_k: np.ndarray      # K slices (launch-level option; 1 = off): blocks x S, each K/S deep
    swizzle: np.ndarray      # block-order group (launch-level option; 1 = row-major launch order)
    vred: np.ndarray         # 1: split-K slices add C with 16-byte vector reductions where C's rows are 16-byte aligned
    cfg: np.ndarray          # the KernelConfig of each entry (object array): the simulator's C stores of edge blocks
    loop_tiles: np.ndarray   # K tiles (k steps) one iteration of the SASS loop covers

    def __getitem__(self, idx) -> "ProfileArrays":
        return ProfileArrays(**{f.name: getattr(self, f.name)[idx] for f in fields(self)})

    def __len__(self) -> int:
        return len(self.BM)


def _interp_trace(table: np.ndarray, lg: np.ndarray, ls) -> np.ndarray:
    """Bilinear interpolation (linear extrapolation) of per-row trace tables at (lg per row, ls: a scalar
    or one per row)."""
    ws = (np.asarray(ls, dtype=np.float64) - TRACE_SHARED[0]) / (TRACE_SHARED[1] - TRACE_SHARED[0])
    step = TRACE_GLOBAL[1] - TRACE_GLOBAL[0]
    x = np.clip(lg / step, 0.0, None)
    i = np.minimum(np.floor(x).astype(np.int64), len(TRACE_GLOBAL) - 2)
    fr = x - i
    rows = np.arange(table.shape[0])

    def t(j):       # the table at (lg grid point j per row, ls)
        return table[rows, j, 0] * (1.0 - ws) + table[rows, j, 1] * ws
    return t(i) * (1.0 - fr) + t(i + 1) * fr


def _mva(s, Z, n):
    """Mean value analysis of a closed network: ``n`` customers (warps), each alternating a delay of ``Z``
    cycles and service ``s`` at one queue (the SM's pipes). Returns the cycle time ``Z + R(n)`` of one
    customer: ``Z + s`` for one, tending to ``n s`` when the queue is saturated (Reiser & Lavenberg 1980)."""
    s = np.asarray(s, dtype=np.float64)
    Z = np.broadcast_to(np.asarray(Z, dtype=np.float64), s.shape)
    B = np.broadcast_to(np.asarray(n), s.shape)
    Q = np.zeros_like(s)
    R = s.copy()
    for k in range(1, int(B.max(initial=1)) + 1):
        Rk = s * (1.0 + Q)
        on = k <= B
        R = np.where(on, Rk, R)
        Q = np.where(on, k / (Z + Rk) * Rk, Q)
    return Z + R


def _class_blocks(gm: int, gn: int) -> np.ndarray:
    """Blocks of a gm x gn launch in each class (interior, last block row, last block column, corner)."""
    return np.array([(gm - 1) * (gn - 1), gn - 1, gm - 1, 1], dtype=np.float64)


def _config_codes(cfgs: Sequence[KernelConfig]) -> tuple[np.ndarray, list]:
    """A small integer per config of ``cfgs`` (equal configs, equal codes) and the config of each code, so that the
    configs can take part in :func:`_distinct_rows`."""
    _, first, code = np.unique([c.key for c in cfgs], return_index=True, return_inverse=True)
    return code.reshape(-1), [cfgs[i] for i in first]


def _edge_rows(pa: ProfileArrays, M, N, gm, gn, take, *cols):
    """The rows of a launch with edge blocks (a tile partly outside C) that ``take`` selects, grouped so that a
    function of them runs once per distinct case: (their indices, the distinct cases as tuples (config, block tile
    (BM, BN), the four classes' (valid rows, valid columns), gm, gn, then ``cols``' values), each row's case)."""
    M, N, gm, gn = (np.broadcast_to(np.asarray(x, dtype=np.int64), (len(pa),)) for x in (M, N, gm, gn))
    rv, cv = M - (gm - 1) * pa.BM, N - (gn - 1) * pa.BN
    ex = np.flatnonzero(take & ((rv < pa.BM) | (cv < pa.BN)))
    if not len(ex):
        return ex, [], np.zeros(0, dtype=np.int64)
    cols = [np.broadcast_to(np.asarray(c, dtype=np.int64), (len(pa),))[ex] for c in cols]
    code, of_code = _config_codes(pa.cfg[ex])
    rows, inv = _distinct_rows(code, rv[ex], cv[ex], gm[ex], gn[ex], *cols)
    cases = []
    for c, r_, c_, m_, n_, *rest in rows:
        cfg = of_code[c]
        bm, bn = int(geometry(cfg).BM), int(geometry(cfg).BN)
        cases.append((cfg, ((bm, bn), (r_, bn), (bm, c_), (r_, c_)), int(m_), int(n_), *rest))
    return ex, cases, inv


def _edge_copies(pa: ProfileArrays, M, N, K, gm, gn) -> np.ndarray:
    """Per row: the L1 data-stage wavefronts a block's 4-byte asynchronous copies take in one iteration beyond the
    broadcast rule, averaged over the launch's blocks: a kernel that copies the rows of A beyond M or the columns of
    B beyond N clamped into the matrix has lanes of its edge blocks read one word, and a 4-byte copy does not
    broadcast it (:func:`model.simulate.copy_duplicate_wavefronts`). Interior blocks, and kernels whose copies are 16
    bytes or zero-filled, take none. The launch's mean, not the busiest SM's (:func:`_busiest_sm_block` deals block b
    to SM b mod SMs, which puts every last-column block on the same few SMs when the grid's width divides the SM
    count): the H200 deals a wave's blocks to its SMs in another order (``experiments/dispatch.py``: interleaved over
    the GPCs' TPC pairs) and later waves to the SMs that free first, so the edge blocks spread (rung 12 at
    1601x2689x1507, 22 block columns, one of them one column wide: 38 % too slow with the busiest SM's mean, edge_val31)."""
    from .simulate import copy_duplicate_wavefronts
    out = np.zeros(len(pa))
    ex, cases, inv = _edge_rows(pa, M, N, gm, gn, pa.copies > 0, np.asarray(K) % _BANK_RESIDUES,
                                np.asarray(N) % _BANK_RESIDUES)
    if not len(ex):
        return out
    val = np.empty(len(cases))
    for q, (cfg, classes, m_, n_, kr, nr) in enumerate(cases):
        w = np.array([copy_duplicate_wavefronts(cfg, kr, nr, a, b) for a, b in classes], dtype=np.float64)
        n_cls = _class_blocks(m_, n_)
        val[q] = float(n_cls @ w) / n_cls.sum()
    out[ex] = val[inv]
    return out


def _l1_wavefronts(pa: ProfileArrays, K, N, arch: str, extra=0.0, M=None, lines0=None) -> np.ndarray:
    """L1 cycles of one block's global loads in one iteration (before the load/store pipe's floor): the
    data stage's wavefronts at this size's leading dimensions (A's rows K words apart, B's N; bank
    conflicts included, :func:`model.counts.global_load_wavefronts`), or the tag stage's, whichever is longer.
    The tag stage takes ``c0 + lines / rate`` cycles a load (:func:`l1_tag`, measured on the H200 by
    ``experiments/l1_lines.py``: a load whose lanes walk 32 rows of A costs 10.5 cycles, 1 line 1 cycle), at least
    one (the load/store pipe's floor, :func:`_round_cycles`); over a block's loads ``c0 loads + lines / rate`` (the
    sum over loads where the loads of an iteration touch similar numbers of lines, as they do). Where the data stage is not known per
    residue, one line a cycle (the data stage of a line-per-wavefront access).

    With ``M`` and an architecture whose tag banks are known (:data:`model.facts.L1_TAG_BANKS`: sm_90), each operand's
    4-byte loads take at least the lines each looks up in its busiest tag bank at this size's leading dimensions
    (:func:`model.simulate.tag_bank_cycles`): the per-line rule was measured on streaming loads at one stride (rows
    1031 words apart); at another stride the same lines can crowd fewer banks (the naive kernel's column walk of 32
    rows at K = 449: 13-15 cycles a load against 10.5; kscan32: up to 27 % slower than at K = 479). The banks are
    counted for an interior block; where the naive kernel's edge blocks run fewer lanes (:func:`_partial_blocks`),
    in the share of the interior block's lines ``lines0`` (its ``l1_lines`` before them) that they touch."""
    rows = np.arange(len(pa))
    kr = np.asarray(K, dtype=np.int64) % _BANK_RESIDUES
    nr = np.asarray(N, dtype=np.int64) % _BANK_RESIDUES
    data = pa.gld_wf[rows, 0, kr] + pa.gld_wf[rows, 1, nr] + extra
    c0, rate = l1_tag(arch)
    tag = c0 * pa.gld_instr + pa.l1_lines / rate
    cols = L1_TAG_BANKS.get(arch)
    if cols is not None and M is not None:
        from .simulate import TAG_SAMPLE_TILES, tag_bank_cycles
        # each operand's 4-byte loads take the longer of the per-line rule (streaming loads at the stride it was
        # measured at) and the lines their busiest tag banks look up at this size's leading dimensions
        # (model.facts.L1_TAG_BANKS): the banks are a floor; wider loads keep the rule
        K_, N_, M_ = (np.broadcast_to(np.asarray(x, dtype=np.int64), rows.shape) for x in (K, N, M))
        code, of_code = _config_codes(pa.cfg)
        keys, inv = _distinct_rows(code, K_, N_, np.minimum(-(-M_ // pa.BM), TAG_SAMPLE_TILES),
                                   np.minimum(-(-N_ // pa.BN), TAG_SAMPLE_TILES))
        floor = np.array([sum(max(at - (c0 * req + lines / rate), 0.0)
                              for at, req, lines in tag_bank_cycles(of_code[c], k, n, a, b, cols))
                          for c, k, n, a, b in keys])[inv]
        share = pa.l1_lines / np.maximum(pa.l1_lines if lines0 is None else lines0, 1.0)
        tag = tag + floor * share
    return np.where(pa.has_wf > 0, np.maximum(data, tag), pa.l1_lines + extra)


def _partial_blocks(pa: ProfileArrays, M, N, gm, gn, sms: int) -> ProfileArrays:
    """The blocks of a kernel whose threads outside C return before the loop (the naive kernel), averaged
    over the launch: a block whose tile lies partly outside C runs only its warps with a thread inside,
    and their loads touch the lines of the active lanes only (:func:`model.counts.exit_block_counts`).
    The launch has ``(gm-1)(gn-1)`` interior blocks, ``gn-1`` of the last block row (``M - (gm-1) BM``
    valid rows), ``gm-1`` of the last column and one corner; the mean active warps, lines and loads of the
    blocks the busiest SM runs replace the interior block's (:func:`_busiest_sm_block`; with no more blocks than
    SMs, the slowest block). At a skinny M or N every block is such a block: at N = 1 one warp of
    the uncoalesced 32x32 kernel's 32 runs, alone on its SM (latency-bound), at M = 1 every warp runs
    with one lane (2 lines a load instead of 33). Kernels whose threads all take part (tile loads and
    barriers) keep the interior counts."""
    ex = np.flatnonzero(pa.exits[:, 0] > 0)
    if not len(ex):
        return pa
    from .counts import exit_block_counts
    n = len(pa)
    M, N, gm, gn = (np.broadcast_to(np.asarray(x, dtype=np.int64), (n,))[ex] for x in (M, N, gm, gn))
    BM, BN = pa.BM[ex], pa.BN[ex]
    th, bx, co = (pa.exits[ex, j].astype(np.int64) for j in range(3))
    rv, cv = M - (gm - 1) * BM, N - (gn - 1) * BN
    rows, inv = _distinct_rows(th, bx, co, BM, BN, rv, cv, gm, gn)
    mean, full = np.empty((len(rows), 3)), np.empty((len(rows), 3))
    for q, (t, x, c, bm, bn, r_, c_, m_, n_) in enumerate(rows):
        counts = np.array([exit_block_counts(t, x, c, a, b) for a, b in ((bm, bn), (r_, bn), (bm, c_), (r_, c_))],
                          dtype=np.float64)
        mean[q] = _busiest_sm_block(counts, m_, n_, c, sms)
        full[q] = counts[0]
    (W, L, R), (W0, L0, R0) = mean[inv].T, full[inv].T
    lr, wr = L / np.maximum(L0, 1.0), W / np.maximum(W0, 1.0)
    out = {f.name: getattr(pa, f.name).copy() for f in fields(pa)}
    out["warps"][ex] = np.maximum(np.round(W), 1.0)    # whole warps: the customers of the mean value analysis
    out["l1_lines"][ex] = pa.l1_lines[ex] * lr
    out["gld_sectors"][ex] = pa.gld_sectors[ex] * lr
    out["gld_instr"][ex] = pa.gld_instr[ex] * R / np.maximum(R0, 1.0)
    out["gld_wf"][ex] = pa.gld_wf[ex] * lr[:, None, None]
    out["store_sectors"][ex] = pa.store_sectors[ex] * wr
    out["store_lines"][ex] = pa.store_lines[ex] * wr
    out["store_lines_element"][ex] = pa.store_lines_element[ex] * wr
    out["store_sectors_element"][ex] = pa.store_sectors_element[ex] * wr
    return ProfileArrays(**out)


def _edge_stores(pa: ProfileArrays, M, N, gm, gn, sms: int) -> tuple[ProfileArrays, np.ndarray]:
    """The C stores of a launch whose tiles lie partly outside C, for kernels whose threads all take part (no early
    return): a block on C's last block row or column predicates off its lanes outside C, so its stores touch only the
    lines and sectors of its elements inside C (:func:`model.simulate.block_store_counts_partial`; a store none of
    whose lanes is inside touches nothing). Of the four classes' counts (interior, last block row, last column,
    corner), the mean over the blocks the busiest SM runs (:func:`_busiest_sm_block`) replaces the interior block's
    store lines and sectors (16-byte and 4-byte forms: the SM's store path); the launch's mean over all its blocks is
    returned beside, per row, as a factor on the interior block's sectors (16-byte, 4-byte forms: C's L2 traffic and
    the L2's reductions). At a skinny N every block is such a block: at N = 3 a 128x128 tile stores 3 of its 128
    columns - 384 elements, not 16,384 (edge_val25: rung 12's split-K 16 at 2112x3x1088 measured 31 us where the
    interior block's stores gave 58.5)."""
    from .simulate import block_store_counts_partial
    launch = np.ones((len(pa), 2))
    ex, cases, inv = _edge_rows(pa, M, N, gm, gn, pa.exits[:, 0] == 0)
    if not len(ex):
        return pa, launch
    ratio, whole = np.empty((len(cases), 4)), np.empty((len(cases), 2))
    for q, (cfg, classes, m_, n_) in enumerate(cases):
        counts = np.array([[*block_store_counts_partial(cfg, a, b, False), *block_store_counts_partial(cfg, a, b, True)]
                           for a, b in classes], dtype=np.float64)
        sel = np.column_stack([counts[:, 0] + counts[:, 1], counts])
        ratio[q] = _busiest_sm_block(sel, m_, n_, 1, sms, by=0)[1:] / np.maximum(counts[0], 1.0)
        n_cls = _class_blocks(m_, n_)
        whole[q] = (n_cls @ counts[:, [1, 3]]) / n_cls.sum() / np.maximum(counts[0, [1, 3]], 1.0)
    ratio = ratio[inv]
    launch[ex] = whole[inv]
    out = {f.name: getattr(pa, f.name).copy() for f in fields(pa)}
    for j, name in enumerate(("store_lines", "store_sectors", "store_lines_element", "store_sectors_element")):
        out[name][ex] = getattr(pa, name)[ex] * ratio[:, j]
    return ProfileArrays(**out), launch


def _busiest_sm_block(counts: np.ndarray, gm: int, gn: int, coalesced: int, sms: int, by: int = 1) -> np.ndarray:
    """The mean (warps, lines, loads) of the blocks the busiest SM runs, for a launch whose edge blocks run fewer
    warps (:func:`_partial_blocks`). ``counts``: the four classes' (interior, last block row, last block column,
    corner). The blocks are dealt to the SMs in launch order (``blockIdx.x`` fastest: along N for the coalesced
    layout, along M for the other), block ``b`` to SM ``b mod SMs``; the SM whose blocks touch the most lines sets
    the time (``by``: the column that says which), and its blocks' mean replaces the interior block's. Why: at 36 x 3584 x 3584 the uncoalesced 32x32
    launch is 2 x 112 blocks, one block row full and one with 4 of 32 rows inside C; 132 SMs take blocks b and
    b + 132, of the same row, so half the SMs run two full blocks - the launch's mean block made it 77 % too fast
    (edge_val12, 2026-12-01). With one block per SM it is the slowest block."""
    ids = np.arange(gm * gn, dtype=np.int64)
    gx = gn if coalesced else gm
    ix, iy = ids % gx, ids // gx
    ri, ci = (iy, ix) if coalesced else (ix, iy)
    cls = (ri == gm - 1).astype(np.int64) + 2 * (ci == gn - 1).astype(np.int64)
    per = counts[cls]                                   # (blocks, 3)
    sm = ids % sms
    lines = np.bincount(sm, weights=per[:, by], minlength=sms)
    s = int(np.argmax(lines))
    return per[sm == s].mean(axis=0)


def _round_cycles(b, pa: ProfileArrays, lg, ldl_lat, r: Rates, prm: TimingParams, l1_wf=None):
    """Cycles of one iteration of ``b`` resident blocks (arrays), and its parts (issue, shared, L1, latency).

    The customers of the mean value analysis are the warps when the loop has no barrier (each warp runs
    on its own), the blocks when it has one (a barrier per iteration keeps a block's warps in the same
    phase: they wait for their loads together and compute together, so one block's warps cannot hide
    each other's latency - only other blocks can)."""
    W = pa.warps
    sync = pa.barriers > 0
    # A block's warps share their schedulers: between two barriers each issues at 1/phi of a lone warp's
    # rate (phi = ceil(W / schedulers)), so a load issued a compute phase ahead of its use (double
    # buffering) is hidden by a phase phi times longer than a lone warp's - the lone-warp trace with every
    # latency divided by phi, in time units phi times longer. A load waited on right away is exposed in
    # full either way (phi (I + lg/phi) - phi I = lg).
    phi = np.where(sync, np.ceil(W / r.schedulers), 1.0)
    t0 = _interp_trace(pa.trace, np.zeros_like(lg), r.shared_latency_cycles)
    t1 = t0 + phi * (_interp_trace(pa.trace, lg / phi, r.shared_latency_cycles) - t0)
    issue = pa.instr / r.schedulers                      # per warp, at the SM's 4 schedulers
    # Load/store pipe: a warp's memory instruction holds it for its wavefronts (shared) or 128-byte lines
    # (L1 tag stage), and at least warp_size / LD/ST units cycles - 2 on a 16-unit SM (GA102, AD10x), so
    # narrow loads (one line, one wavefront) run at half the rate of a 32-unit SM (GA100, GH100).
    shared = np.maximum(pa.shared_wf / r.shared_wavefronts_per_cycle, pa.shared_instr * r.lsu_cycles) / W
    if l1_wf is None:
        l1_wf = pa.l1_lines
    l1 = np.maximum(l1_wf, pa.gld_instr * r.lsu_cycles) / W + (pa.local_loads + pa.local_stores) * max(r.lsu_cycles, 1.0)
    p = prm.p
    # Shared and global wavefronts pass the same L1TEX data stage (one SRAM array): they add, and the sum
    # overlaps the issue as the exponent p says.
    s_w = (issue ** p + (shared + l1) ** p) ** (1.0 / p)
    spills = pa.local_loads * ldl_lat / prm.spill_overlap
    # Delay of one customer: the warp's stalls (T1 - I) plus the issue its own scheduler cannot share
    # (Seidmann): a lone warp issues I cycles, not I/4; a block's warps ceil(W/4) I on the busiest scheduler.
    own = np.where(sync, np.ceil(W / r.schedulers) * pa.instr - W * issue, pa.instr - issue)
    # The lone warp's stalls at zero global-load latency (the control codes' fixed-latency stalls, its waits
    # on shared loads): every warp of the SM runs the same code in the same phase (a barrier per iteration,
    # blocks started together), so they stall in the same cycles and no other warp fills them. They are
    # added to the iteration after the mean value analysis, not given to it as a delay other warps hide.
    # Dispatch stalls (an FFMA whose three uncached sources share a register bank, and every FFMA's base
    # dispatch stall, model.facts.FFMA_DISPATCH_CYCLES) hold the warp at the same instructions on every warp:
    # fixed stalls too (Profile.bank_conflicts is in cycles). Once per round: a scheduler with w warps pays
    # them once for its w x I issue cycles, so a lone warp per scheduler (4-warp blocks, one per SM) pays
    # them in full - the H200 data's lone-warp cycles per instruction, 1.4-1.8 against 1.1-1.4 traced.
    fixed = np.maximum(t0 - pa.instr, 0.0) + pa.bank_conflicts
    Z = np.maximum(t1 - np.maximum(t0, pa.instr), 0.0) + own + spills
    per = np.where(sync, W, 1.0)
    n = np.where(sync, b, b * W)
    # The order of the asynchronous copies (model.facts.Facts.loop_queue): a cluster of cp.async copies queues the
    # shared loads behind it at the SM's pipe while the FFMAs that need them wait, on every warp in the same cycles.
    # The simulated round (tools.sched_sim, queue_blocks resident blocks) beyond its issue bound and its pipe bound
    # combined as the pipes are above (exponent p) is that cost; a round of b blocks has b / queue_blocks of the
    # contending warps. Only loops whose shared-memory writes are asynchronous copies: they enter the pipe in the
    # order the warp issues them, which the simulation knows. A register-staged store (a global load, then STS)
    # enters it when its load's data arrives, line by line, which the simulation's fixed latency does not know
    # (with it, the cross-validated error on rungs that stage through registers rose from 9.4 % to 10.2 %).
    q_sim, q_issue, q_pipe = pa.queue[:, 0], pa.queue[:, 1], pa.queue[:, 2]
    beyond = np.maximum(q_sim - (q_issue ** p + q_pipe ** p) ** (1.0 / p), 0.0)
    queue = np.where((pa.queue_blocks > 0) & (pa.copies > 0), beyond * b / np.maximum(pa.queue_blocks, 1), 0.0)
    total = _mva(per * s_w, Z, n) + fixed + queue
    # Instruction fetch: a loop that does not fit the L0 i-cache streams its code in again every iteration, one
    # stream per scheduler (its warps run the loop in phase), at the rate beyond the L0: a floor under the round.
    total = np.maximum(total, pa.fetch)
    nw = b * W
    # the shared pipe's part carries its queue (the order of the copies); the latency part what is left
    return total, np.stack([np.maximum(nw * issue, pa.fetch), nw * shared + queue, nw * l1,
                            np.maximum(total - np.maximum(nw * s_w, pa.fetch) - queue, 0.0)])


def _distinct_rows(*cols) -> tuple[list[tuple], np.ndarray]:
    """The distinct rows of integer columns (tuples of Python ints) and each row's index among them, so
    that a scalar function of a row runs once per distinct row: the rows of a ranking (configs x sizes)
    repeat a few thousand argument tuples."""
    cols = [np.asarray(c, dtype=np.int64).reshape(-1) for c in cols]
    n = len(cols[0])
    key, size = np.zeros(n, dtype=np.int64), 1
    for c in cols:                       # one mixed-radix int64 key per row
        lo = int(c.min(initial=0))
        card = int(c.max(initial=0)) - lo + 1
        if size * card >= 2 ** 62:       # it would overflow: renumber the key so far first
            _, key = np.unique(key, return_inverse=True)
            key = key.reshape(n)
            size = int(key.max(initial=0)) + 1
        key, size = key * card + (c - lo), size * card
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    return list(zip(*(c[first].tolist() for c in cols))), inv.reshape(n)


# L2 partitions. GA100 and GH100 split the L2 in two partitions, each of which "localizes and caches data for
# memory accesses from SMs in the GPCs directly connected to the partition" (NVIDIA A100 Tensor Core GPU
# Architecture whitepaper, 2020, "L2 cache"; the H100 whitepaper, 2022, describes the same partitioned L2),
# and Chips and Cheese's microbenchmarks of the H100 discuss its split L2 (chipsandcheese.com, 2023-07-02,
# "Nvidia's H100: Funny L2, and tons of bandwidth"; S14 in shared/reference/gpu-specs-and-cupy.md). A tile
# that SMs of both partitions read is held in both, so the capacity that keeps A and B for a later wave is
# half the L2. The H200's ncu counts agree: C's store sectors reach the L2's tag stage 1.41-1.50 times
# (a store homed in the far partition is looked up in both), and at 2048^3, where A + B + C = 50 MB is less
# than the 60 MB L2, the multi-wave kernels still write 10-13 MB of C to DRAM during the kernel.
# GA10x and AD10x document one L2: 1.
_L2_PARTITIONS = {"sm_80": 2, "sm_90": 2}


def l2_reuse_bytes(gpu) -> float:
    """The L2 capacity (bytes) that holds data read by every SM: the L2 over its partitions (each partition
    keeps its own copy of what its SMs read)."""
    return float(gpu.l2_bytes) / _L2_PARTITIONS.get(gpu.arch, 1)


def _launch_bytes(m: int, n: int, k: int, bm: int, bn: int) -> tuple[int, int, float, float, float, float]:
    """(block rows gm, block columns gn, bytes of one A row panel, of one B column panel, of A + B, of C) of
    an m x n x k launch with bm x bn tiles: what the DRAM walks of :func:`_wave_walk_one` and
    :func:`_wave_walk_order` stream."""
    return (-(-m // bm), -(-n // bn), 4.0 * bm * k, 4.0 * bn * k, 4.0 * (m * k + k * n), 4.0 * m * n)


@lru_cache(maxsize=200_000)
def _wave_walk_one(m: int, n: int, k: int, bm: int, bn: int, w: int,
                   cap: float) -> tuple[float, float, float, float, float]:
    """(DRAM bytes read for A, for B, DRAM bytes written for C, the A and the B panel bytes the waves touch, each
    wave's distinct panels summed over the waves) of one launch: the blocks run in row-major launch order, ``w``
    at a time, against an L2 that keeps ``cap`` bytes (LRU, write-back, write-allocate). The reads over the
    touched bytes is the share of a wave's tile loads that come from DRAM (:func:`_wave_walks`).

    *Reads.* Each wave streams the A row panels and B column panels its blocks touch (K-slice by K-slice, all
    blocks of the wave together, so a panel shared by blocks of one wave is read from DRAM once), then writes
    its C tiles, which allocate lines in L2. A panel touched again by the next wave was last used one wave's
    stream ago: its reuse distance is that wave's panels plus its C. The blocks of a wave end (and the next
    wave's blocks start) spread over the time the wave writes its C, so the distance is spread over
    ``[panels, panels + C]``: the share of it beyond ``cap`` is read again.

    *Writes.* At the kernel's end the L2 holds the last ``cap`` bytes the launch touched (LRU); a wave's C
    is still there, dirty, when its own C and the footprint of the waves after it fit in ``cap``; the rest
    was evicted during the kernel and written to DRAM. (What stays dirty is written back after the kernel.)"""
    gm, gn, a_panel, b_panel, unique, c_all = _launch_bytes(m, n, k, bm, bn)
    nb = gm * gn
    starts = np.arange(0, nb, w, dtype=np.int64)
    ends = np.minimum(starts + w, nb) - 1
    length = ends - starts + 1
    r0, r1 = starts // gn, ends // gn
    ncols = np.where(length >= gn, gn, length)
    # the panels of the last block row / column hold only the rows / columns inside C: the mean panel
    foot_a = float(np.sum(r1 - r0 + 1)) * a_panel * m / (gm * bm)
    foot_b = float(np.sum(ncols)) * b_panel * n / (gn * bn)
    ua, ub = 4.0 * m * k, 4.0 * k * n                         # A and B once (unique = ua + ub)
    if unique + c_all <= cap:
        return ua, ub, 0.0, foot_a, foot_b
    # Writes: walk back from the last wave while the footprint of the waves after it (contiguous blocks:
    # rows r0 .. the last row; all columns once the range spans a whole row of blocks) leaves room for its C.
    nw = -(-nb // w)
    writes, later, last_row = c_all, 0.0, (nb - 1) // gn
    for i in range(nw - 1, -1, -1):
        s = i * w
        cw_i = c_all * (min(s + w, nb) - s) / nb
        kept = min(max((cap - later) / cw_i, 0.0), 1.0)
        if kept <= 0.0:
            break
        writes -= kept * cw_i
        later = c_all * (nb - s) / nb + (last_row - s // gn + 1) * a_panel + min(gn, nb - s) * b_panel
    writes = max(writes, 0.0)
    if nb <= w:
        return ua, ub, writes, foot_a, foot_b
    # Reads: nothing is read again when even the longest reuse distance fits.
    foot_max = min(gm, w // gn + 2) * a_panel + min(gn, w) * b_panel
    if (foot_max + c_all * w / nb) * max(1.0, gn / w) <= cap:
        return ua, ub, writes, foot_a, foot_b
    cw = c_all * length / nb                                  # C written by each wave
    foot = (r1 - r0 + 1) * a_panel + ncols * b_panel

    def miss(d, spread):
        return np.clip((d - cap) / np.maximum(spread, 1.0), 0.0, 1.0)
    # A: the row a wave shares with the previous wave (its first row, when the previous one ended there)
    shared_row = np.zeros(len(starts), dtype=bool)
    shared_row[1:] = r0[1:] == r1[:-1]
    prev_foot, prev_cw = np.append(foot[:1], foot[:-1]), np.append(cw[:1], cw[:-1])   # the previous wave's
    extra_a = float(np.sum(shared_row * a_panel * miss(prev_foot + prev_cw, prev_cw)))
    # B: columns seen before. A wave of >= gn blocks touches every column, as did the previous wave (reuse
    # distance: one wave's stream); a shorter wave meets its columns again one row of blocks later (reuse
    # distance: the streams of the gn / w waves in between).
    if w >= gn:
        extra_b = float(np.sum(ncols[1:] * b_panel * miss(prev_foot + prev_cw, prev_cw)[1:]))
    else:
        seen = r0 >= 1
        extra_b = float(np.sum(seen * ncols * b_panel * miss((foot + cw) * (gn / w), cw * (gn / w))))
    return ua + extra_a, ub + extra_b, writes, foot_a, foot_b


@lru_cache(maxsize=200_000)
def _l1_shared_fractions(gm: int, gn: int, sms: int, b: int) -> tuple[float, float]:
    """(A, B) tile loads that reach L2, as fractions, when the ``b`` blocks resident on one SM share
    their tiles in its L1: blocks are dispatched in launch order (row-major) round-robin over the SMs,
    so SM q holds blocks q, q + SMs, ..., q + (b-1) SMs; two of them in the same block row read the same
    A tiles at about the same time (one fetch from L2), two in the same column the same B tiles."""
    n = min(gm * gn, sms * b)
    if b <= 1 or n <= sms:
        return 1.0, 1.0
    # Distinct (SM, block row) pairs: block i is the first of its pair on SM i % sms unless the block
    # before it there (i - sms) is in the same row (rows only grow along an SM's blocks): i < sms, or
    # i % gn < sms (a row starts between i - sms and i). Blocks [0, x) with i % gn < sms: below(x).
    def below(x: int) -> int:
        return (x // gn) * sms + min(x % gn, sms)
    ra = n if sms >= gn else below(n)
    # Distinct (SM, block column) pairs: the columns of SM q's blocks q + k sms repeat with period
    # gn / gcd(sms, gn) in k, so the first that many blocks of each SM have distinct columns.
    cb = min(n, gn // math.gcd(sms, gn) * sms)
    return ra / n, cb / n


def _wave_walks(M, N, K, BM, BN, blocks_per_wave, cap, split_k=None, swizzle=None):
    """Per row: (DRAM bytes read for A and B, DRAM bytes written for C, the share of the waves' A tile loads that
    come from DRAM, the same for B), see :func:`_wave_walk_one` (row-major launch order) and
    :func:`_wave_walk_order` (the grouped order of ``swizzle`` > 1).

    Split-K (``split_k`` = S > 1): the slices run one after another in launch order (slice z after every
    tile of slice z-1), each a GEMM of depth K/S over its own A columns and B rows, all adding into the same
    C: S times the reads and writes of one slice, plus the C lines a slice evicted, read again by the
    next slice's atomics. The DRAM shares are those of one slice.

    *The DRAM share of a wave's tile loads* (per operand): the DRAM bytes read over the panel bytes the waves
    touch (each wave's distinct panels, summed over the waves). A panel a wave touches first (the L2 is flushed
    before every timed launch, so every panel of the first wave) or again after the L2 lost it comes from DRAM,
    and every block of the wave that shares it waits for that read: the wave's blocks start together and walk
    K in step, so they ask for the same tile within a DRAM latency of each other (a hit on a miss in flight
    waits for the miss). Its reads, not its blocks, set the share: at 4096^3 with 128 x 128 tiles a wave of
    132 blocks reads the 64 MB of B again (the L2 kept none of it) and 5 new A panels, nearly all from DRAM,
    while the L2 serves each tile to the 4-32 blocks that share it: a miss ratio of a few percent."""
    n = len(np.atleast_1d(M))
    S = np.ones(n, dtype=np.int64) if split_k is None else np.broadcast_to(np.asarray(split_k), (n,))
    G = np.ones(n, dtype=np.int64) if swizzle is None else np.broadcast_to(np.asarray(swizzle), (n,))
    rows, inv = _distinct_rows(M, N, K, BM, BN, blocks_per_wave, S, G)   # each once
    out = []
    for m, nn, k, bm, bn, w, s, g in rows:
        s = max(s, 1)
        ks = -(-k // s)
        args = (m, nn, ks, bm, bn, w, float(cap))
        ra, rb, wr, ta, tb = _wave_walk_one(*args) if g <= 1 else _wave_walk_order(*args, g)
        out.append((s * (ra + rb) + (s - 1) * wr, s * wr, min(ra / max(ta, 1.0), 1.0), min(rb / max(tb, 1.0), 1.0)))
    return np.array(out, dtype=np.float64).reshape(-1, 4)[inv].T


@lru_cache(maxsize=100_000)
def _wave_walk_order(m: int, n: int, k: int, bm: int, bn: int, w: int, cap: float,
                     group: int) -> tuple[float, float, float, float, float]:
    """:func:`_wave_walk_one` for the grouped launch order (``registry.launch_order`` with swizzle_group =
    ``group``: groups of ``group`` block rows walked column by column), by walking the waves: the same
    rules for any order. Reads: a panel last used by wave i and needed again by wave j > i was pushed
    through the L2 by the streams of waves i .. j-1 (their panels and their C), spread over their C; the
    share beyond ``cap`` is read again. Writes: a wave's C is still in L2 at the end when its C and the
    footprint of every later block (their distinct panels and C) fit in ``cap``."""
    gm, gn, a_panel, b_panel, unique, c_all = _launch_bytes(m, n, k, bm, bn)
    nb = gm * gn
    pid = np.arange(nb, dtype=np.int64)
    first = (pid // (group * gn)) * group
    size = np.minimum(gm - first, group)
    rr = pid % (group * gn)
    rows, cols = first + rr % size, rr // size
    nw = -(-nb // w)
    rs = [np.unique(rows[j * w:(j + 1) * w]) for j in range(nw)]
    cs = [np.unique(cols[j * w:(j + 1) * w]) for j in range(nw)]
    foot_a = float(sum(len(x) for x in rs)) * a_panel * m / (gm * bm)
    foot_b = float(sum(len(x) for x in cs)) * b_panel * n / (gn * bn)
    ua, ub = 4.0 * m * k, 4.0 * k * n
    if unique + c_all <= cap:
        return ua, ub, 0.0, foot_a, foot_b
    cw = np.array([c_all * (min((j + 1) * w, nb) - j * w) / nb for j in range(nw)])
    foot = np.array([len(rs[j]) * a_panel + len(cs[j]) * b_panel for j in range(nw)])
    # writes: walk back from the last wave
    writes, seen_r, seen_c, c_later = c_all, set(), set(), 0.0
    for i in range(nw - 1, -1, -1):
        later = c_later + len(seen_r) * a_panel + len(seen_c) * b_panel
        kept = min(max((cap - later) / cw[i], 0.0), 1.0)
        if kept <= 0.0:
            break
        writes -= kept * cw[i]
        seen_r.update(rs[i].tolist())
        seen_c.update(cs[i].tolist())
        c_later += cw[i]
    writes = max(writes, 0.0)
    if nb <= w:
        return ua, ub, writes, foot_a, foot_b
    stream = np.concatenate([[0.0], np.cumsum(foot + cw)])
    spread = np.concatenate([[0.0], np.cumsum(cw)])
    last_a = np.full(gm, -1, dtype=np.int64)
    last_b = np.full(gn, -1, dtype=np.int64)
    extra = [0.0, 0.0]
    for j in range(nw):
        for op, (ids, last, panel) in enumerate(((rs[j], last_a, a_panel), (cs[j], last_b, b_panel))):
            prev = last[ids]
            i = prev[prev >= 0]
            if len(i):
                d = stream[j] - stream[i]
                sp = np.maximum(spread[j] - spread[i], 1.0)
                extra[op] += float(np.sum(panel * np.clip((d - cap) / sp, 0.0, 1.0)))
            last[ids] = j
    return ua + extra[0], ub + extra[1], writes, foot_a, foot_b


def _busiest_share(left: int, b: int, sms: int) -> int:
    """The largest ``j`` (at least 1) with ``SMs x P(X >= j) >= 1/2``, ``X`` the blocks one SM gets when ``left`` blocks
    fill as many of the ``SMs x b`` slots at random (hypergeometric: ``b`` draws from ``SMs x b``, ``left`` marked)."""
    from math import comb
    total = comb(sms * b, b)
    tail, best = 0, 1
    for j in range(b, 0, -1):           # P(X >= j), accumulated from the top
        tail += comb(left, j) * comb(sms * b - left, b - j)
        if sms * tail >= 0.5 * total:
            best = j
            break
    return best


def busiest_sm_rounds(blocks, sms: int, bps, random_order: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(full rounds, blocks of the last, partial round: 0 if none) that the busiest SM runs, per row.

    A launch of at most one wave is dealt evenly: ``ceil(blocks / SMs)`` to the busiest SM, the first wave's blocks
    round-robin (``experiments/dispatch.py``: exactly that in all 23 launches). Every block after the first wave goes
    to the slot that frees first (``experiments/block_trace.py``: in 17 of 18 traced GEMM launches 87-100 % of the
    blocks after the first wave started on the slots whose blocks had ended first). Which slots free first is the order in which
    the blocks of the wave before end, and that varies with the kernel: where the blocks of one SM end together, the
    SMs that finish first take ``b`` blocks each (rung 12's split-K at 3072x22x2240: the 120 blocks after the first
    wave went to 73 SMs, two to most); where they end far apart, one slot of each SM frees first and the deal is
    even again (rung 08 at 2048^3: 116 blocks on 116 SMs). Taken as a random order: the last wave's ``L`` blocks
    fill ``L`` of the ``SMs x b`` slots at random, an SM's share is hypergeometric, and the busiest SM takes the
    largest ``j`` that at least half an SM is expected to get (``SMs x P(X >= j) >= 1/2``) after ``W - 1`` full
    rounds (``W = ceil(blocks / (SMs x b))`` waves). Measured busiest SM (block_trace, 32 launches of rungs 01-12):
    of the 30 where the two deals differ, 21 nearer this count and 9 nearer the even deal's; no quantity of the
    model tells them apart, so the prediction keeps the even deal and reports this one's time beside it."""
    blocks = np.asarray(blocks, dtype=np.int64)
    bps = np.broadcast_to(np.asarray(bps, dtype=np.int64), blocks.shape)
    per_sm = -(-blocks // sms)
    full, rem = per_sm // bps, per_sm % bps
    slots = sms * bps
    waves = -(-blocks // slots)
    multi = waves > 1
    if not random_order or not multi.any():
        return full, rem
    left = (blocks - (waves - 1) * slots)[multi]
    keys, inv = np.unique(np.stack([left, bps[multi]]), axis=1, return_inverse=True)
    m = np.array([_busiest_share(int(L), int(b), sms) for L, b in keys.T], dtype=np.int64)[np.ravel(inv)]
    bm = bps[multi]
    full, rem = full.copy(), rem.copy()
    full[multi] = np.where(m >= bm, waves[multi], waves[multi] - 1)
    rem[multi] = np.where(m >= bm, 0, m)
    return full, rem


def slowest_load_wait(l2, dram, l2_spread, dram_spread, n, p) -> np.ndarray:
    """Mean latency (cycles) of the slowest of ``n`` independent loads: each from DRAM with probability ``p``, else
    an L2 hit, each level's latency normal (mean ``l2`` / ``dram``, standard deviation ``l2_spread`` /
    ``dram_spread``): ``E[max] = x0 + integral of (1 - F(x)^n)`` over ``x >= x0``, ``F`` the mixture's distribution
    function. Without spreads ``l2 + (dram - l2) (1 - (1 - p)^n)``: the slowest level. Arrays broadcast; ``n`` >= 1
    need not be whole (``F^n``). A warp waiting for the loads it has in flight waits this long after the last is
    issued, plus ``Rates.batch_wait_per_load_cycles`` for each further load: on the H200 (``experiments/batch_latency.py``)
    one warp's wait for 1-14 lines from DRAM is within 3.0 % of that with the single load's spread (the per-load
    cycles fitted on its L2 rows)."""
    from scipy.special import ndtr
    l2, dram, sd2, sdd, n, p = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in
                                                     (l2, dram, l2_spread, dram_spread, n, p)))
    n = np.maximum(n, 1.0)
    p = np.clip(p, 0.0, 1.0)
    step = l2 + (dram - l2) * (1.0 - np.power(1.0 - p, n))
    if not (np.any(sd2 > 0) or np.any(sdd > 0)):
        return step
    s2, sd = np.maximum(sd2, 1e-3), np.maximum(sdd, 1e-3)
    lo = np.minimum(l2 - 8.0 * s2, dram - 8.0 * sd)
    hi = np.maximum(l2 + 8.0 * s2, dram + 8.0 * sd)
    u = np.linspace(0.0, 1.0, 801)
    x = lo[..., None] + (hi - lo)[..., None] * u
    F = ((1.0 - p)[..., None] * ndtr((x - l2[..., None]) / s2[..., None])
         + p[..., None] * ndtr((x - dram[..., None]) / sd[..., None]))
    tail = 1.0 - np.power(F, n[..., None])
    return lo + np.trapezoid(tail, x, axis=-1)


def _warp_lines(pa: ProfileArrays, K, N, unit_bytes: int = 128) -> np.ndarray:
    """Per row: the distinct ``unit_bytes`` segments (DRAM pages) a warp of a barrier-free loop loads per K tile, over
    its SASS loop's tiles, at the row's leading dimensions (:func:`model.simulate.warp_lines`); 0 for loops with a
    barrier (not needed)."""
    from .simulate import lines_leading_dimension, warp_lines
    out = np.zeros(len(pa))
    take = np.flatnonzero(pa.barriers <= 0)
    if not take.size:
        return out
    Kt = np.broadcast_to(np.asarray(K), (len(pa),))[take]
    Nt = np.broadcast_to(np.asarray(N), (len(pa),))[take]
    codes, objs = _config_codes(pa.cfg[take])
    u = max(int(unit_bytes) // BYTES_PER_ELEMENT, 32)
    rows, inv = _distinct_rows(codes, pa.loop_tiles[take], [lines_leading_dimension(k, u) for k in Kt],
                               [lines_leading_dimension(x, u) for x in Nt])
    vals = np.array([warp_lines(objs[c], int(t), int(k), int(x), int(unit_bytes)) / int(t) for c, t, k, x in rows])
    out[take] = vals[inv]
    return out


def _waited_latency(r: Rates, pa: ProfileArrays, f, lines) -> np.ndarray:
    """Latency of the global loads one warp waits for at once when no barrier ties it to the
    block's other warps (cycles): the slowest of them (:func:`slowest_load_wait`), each an L2 hit or, where a
    32-byte sector it waits for is read from DRAM, DRAM's. A sector is read from DRAM with the probability ``f`` = DRAM
    read bytes / L2 read bytes (the traffic model's L2 miss ratio; unlike a barrier loop's blocks, these warps drift
    apart once blocks start as others finish, so a read from DRAM is waited for by the warp that missed, not by every
    warp of the wave: with the wave's share of :func:`_wave_walks` at every size, the seed's 32x32 block at one per
    SM came out slower than 16x16 at six, the reverse of the forced-residency measurement; a launch of one wave,
    whose blocks all start at once, takes the wave's share: :func:`evaluate`). The warp waits for ``n`` sectors at
    once (its global loads' 32-byte sectors per iteration - a broadcast is one sector, a full 128-byte line four -
    over the latencies in series per iteration), whether it fetched them or another warp did (a hit on a miss in
    flight waits for the miss); they lie in ``m`` distinct DRAM pages (``dram_page_bytes``; 128-byte lines where the
    spec has none: the warp's distinct pages over the SASS loop's K tiles, :func:`model.simulate.warp_lines`, over
    the same latencies), each page an independent draw of the latency (its lines arrive together), from DRAM when any
    of its sectors is: ``1 - (1 - f)^(n/m)``; and each of its ``k`` load instructions in flight beyond the first
    adds ``batch_wait_per_load_cycles`` (``experiments/batch_latency.py``). With no spread measured this is
    ``L2 + (DRAM - L2) (1 - (1 - f)^n)``, the slowest level alone."""
    chain = np.maximum((pa.trace[:, -1, 0] - pa.trace[:, -2, 0]) / (TRACE_GLOBAL[-1] - TRACE_GLOBAL[-2]), 0.05)
    n = np.maximum(pa.gld_sectors / pa.warps / chain, 1.0)
    m = np.where(lines > 0, np.maximum(lines / chain, 1.0), n)
    m = np.minimum(m, n)
    p = 1.0 - np.power(1.0 - np.clip(f, 0.0, 1.0), n / m)
    k = np.maximum(pa.gld_instr / pa.warps / chain, 1.0)
    return (slowest_load_wait(r.l2_latency_cycles, r.dram_latency_cycles, r.l2_spread_cycles, r.dram_spread_cycles,
                              m, p) + r.batch_wait_per_load_cycles * (k - 1.0))


def _dram_share_waited(pa: ProfileArrays, fa, fb) -> np.ndarray:
    """The share of a barrier loop's waits that wait for DRAM, from the shares ``fa``, ``fb`` of A's and B's
    tile loads that come from DRAM (:func:`_wave_walks`: a wave's blocks ask for a tile together, so one read
    from DRAM is waited for by all of them). A loop that issues all its tile loads before it waits (one global
    latency per iteration in the trace) waits for the slowest: DRAM when either operand's tile comes from it,
    ``1 - (1 - fA)(1 - fB)``. A loop whose trace waits for its loads one after another (a latency chain of
    two or more: each load stored to shared memory before the next is issued) waits for each operand in
    turn: on average ``(fA + fB) / 2`` - at a skinny M, B streams from DRAM while A (one row of tiles)
    stays in L2, and only B's waits take DRAM's latency."""
    chain = (pa.trace[:, -1, 0] - pa.trace[:, -2, 0]) / (TRACE_GLOBAL[-1] - TRACE_GLOBAL[-2])
    return np.where(chain >= 1.5, 0.5 * (fa + fb), 1.0 - (1.0 - fa) * (1.0 - fb))


def _l1_bytes_left(gpu, bps, smem) -> np.ndarray:
    """L1 data-cache bytes per SM beside the shared memory of ``bps`` resident blocks: the driver sets the
    shared-memory carveout to the smallest supported step that holds them all (CUDA C++ Programming Guide,
    compute capabilities 8.x and 9.0, "Shared Memory": the carveout steps; the rest of the unified
    L1/shared array is L1)."""
    alloc = -(-(np.asarray(smem, dtype=np.int64) + gpu.shared_reserved_per_block) // gpu.shared_alloc_unit) \
        * gpu.shared_alloc_unit
    need = np.asarray(bps, dtype=np.int64) * alloc
    steps = np.asarray(gpu.shared_carveout_steps_bytes, dtype=np.int64)
    idx = np.searchsorted(steps, need)
    carve = np.where(idx < len(steps), steps[np.minimum(idx, len(steps) - 1)], gpu.shared_bytes_per_sm)
    return (gpu.l1_shared_bytes - carve).astype(np.float64)


def _element_path(pa: ProfileArrays, N, K) -> ProfileArrays:
    """Rows whose K or N is not a multiple of 4 run the element path: A's rows (K) or B's (N) are not 16-byte
    aligned, so the kernels load them element by element, guarded and waited (``Facts.loop_element_path_*``:
    the loop's longest path that moves the steady iteration's bytes, traced like the steady one). Its extra
    instructions and lone-warp cycles are shared between A and B as a tile's elements are (BM : BN). Why: Nsight
    Compute, rung 06 128x128x8 8x8 one step off 2048^3 (logs/odd-2026-12-01): 5 % slower at K = 2047, 14 % at
    N = 2047, with 2.6 and 3.7 % more instructions (the element path: 6.2 % for both) and the waits of
    ``long_sb`` 0.03 -> 0.17 per instruction (the element loads waited before their stores)."""
    share_a = pa.BM / np.maximum(pa.BM + pa.BN, 1)
    w = share_a * (np.asarray(K) % 4 != 0) + (1.0 - share_a) * (np.asarray(N) % 4 != 0)
    if not np.any(w):
        return pa
    return replace(pa, instr=pa.instr + w * pa.elem, trace=pa.trace + w[:, None, None] * pa.elem_trace)


def evaluate(gpu, pa: ProfileArrays, M, N, K, prm: TimingParams | None = None,
             max_blocks_per_sm=None) -> dict[str, np.ndarray]:
    """Vectorised timing model over rows (one entry per (config, size)); SI units out.

    ``max_blocks_per_sm`` (scalar or per row, optional) caps the resident blocks per SM below what the
    occupancy calculator allows: the forced residency of ``experiments/residency.py``."""
    prm = prm or load_params()
    r = rates(gpu)
    M, N, K = (np.asarray(x, dtype=np.int64) for x in (M, N, K))
    BM, BN = pa.BM, pa.BN
    gm, gn = -(-M // BM), -(-N // BN)
    lines0 = pa.l1_lines
    pa = _partial_blocks(pa, M, N, gm, gn, r.sms)
    interior = pa
    pa, launch_stores = _edge_stores(pa, M, N, gm, gn, r.sms)
    pa = _element_path(pa, N, K)
    # Split-K (launch-level option, Geometry.split_k = S): S blocks per output tile, each over
    # ceil(K tiles / S) of the K loop (registry.k_slices); their partial sums meet in C by atomics. With
    # fewer K tiles than S x that depth the trailing slices are empty and their blocks return before any
    # work (no loads, no atomics): only the ``live`` slices count, as in the simulator's C-store repeats.
    S = np.maximum(np.asarray(pa.split_k, dtype=np.int64), 1)
    tiles = -(-K // pa.k_tile)
    nk = -(-tiles // S)
    live = -(-tiles // np.maximum(nk, 1))
    blocks = gm * gn * live
    launchable = np.asarray(pa.bps) > 0
    bps = np.maximum(np.asarray(pa.bps), 1)
    if max_blocks_per_sm is not None:
        bps = np.minimum(bps, np.maximum(np.asarray(max_blocks_per_sm), 1))
    # the busiest SM's rounds: the first wave dealt evenly, later blocks to the slots that free first - one slot of
    # each SM in turn (the even deal) or in random order (busiest_sm_rounds)
    full, rem = busiest_sm_rounds(blocks, r.sms, bps, random_order=False)
    full_r, rem_r = busiest_sm_rounds(blocks, r.sms, bps, random_order=True)
    # Traffic.
    a_bytes = (BYTES_PER_ELEMENT * M * K).astype(np.float64)
    b_bytes = (BYTES_PER_ELEMENT * K * N).astype(np.float64)
    c_bytes = (BYTES_PER_ELEMENT * M * N).astype(np.float64)
    # A kernel that adds its partial tile with 16-byte vector reductions falls back to 4-byte ones where C's rows are
    # not 16-byte aligned (N % 4 != 0): each vector becomes four scalar reductions, every one touching the sectors the
    # vector did (lanes four floats apart: 16 sectors a warp instruction), so the L2 performs four times the sector
    # operations - the count the simulator gives a kernel whose split-K reductions are always scalar. Why: the vector-reduction
    # kernel's rows at odd N ran 15-77 % slower than predicted with the vector count (odd, edge_val10, ladder; 2026-12-01).
    scalar_fallback = (S > 1) & (N % 4 != 0) & (pa.vred > 0)
    # (the 4-byte form's sectors: four for each 16-byte store's); C's sectors over the launch, edge blocks storing less.
    store_sectors = np.where(scalar_fallback, interior.store_sectors_element * launch_stores[:, 1],
                             interior.store_sectors * launch_stores[:, 0])
    rows, inv = _distinct_rows(gm, gn, bps)
    fr = np.array([_l1_shared_fractions(x, y, r.sms, z) for x, y, z in rows]).reshape(-1, 2)[inv]
    l2_bytes = a_bytes * gn * fr[:, 0] + b_bytes * gm * fr[:, 1] + 32.0 * store_sectors * blocks
    # A store that writes part of a 32-byte sector costs the L2 a read-modify-write of it (the L2 keeps
    # whole sectors, with ECC on HBM parts): two sector accesses instead of one. An atomic add (split-K: every
    # slice adds its partial tile into C at the L2) is a reduction in the L2, at the rate the GPU reduces float
    # sectors ([timing].l2_reduction_bytes_per_s: microbenchmarked with the epilogue's own pattern, lanes four
    # floats apart; half the L2 bandwidth where not measured).
    reduce = S > 1
    partial = ((4.0 * BM * BN / np.maximum(interior.store_sectors, 1.0)) < 32.0) & ~reduce
    c_sector_bytes = 32.0 * store_sectors * blocks
    l2_time_bytes = l2_bytes + np.where(partial, c_sector_bytes, 0.0) - np.where(reduce, c_sector_bytes, 0.0)
    wave = r.sms * bps
    # DRAM: A and B once, the panels a wave re-reads after the L2 (the share of it that keeps data every
    # SM reads) lost them, and the C that was evicted (written back) before the kernel ended; in the
    # config's launch order (swizzle) and per K slice (split-K).
    dram_reads, dram_writes, f_a, f_b = _wave_walks(M, N, K, BM, BN, wave, l2_reuse_bytes(gpu), live, pa.swizzle)
    # Split-K when C does not fit in the L2 (its lines live in one partition each, so the whole L2 holds C, beside
    # the slice's A and B panels, which every SM reads and so sit in both partitions): the slices walk C in the same
    # order, each evicting the lines the next one reduces first (LRU), so every slice's reductions miss - the L2 reads
    # each sector of C from DRAM, adds into it and writes it back - at the rate measured for reductions into a buffer
    # beyond the L2 ([timing].dram_reduction_bytes_per_s, experiments/red_beyond_l2.py: 1.41 TB/s on the H200 against
    # 3.15 in the L2; Nsight Compute on rung 12 at C = 72-94 MB: DRAM reads 4.0-14.7 x C, one C a live slice). Near the
    # L2's size a share of them misses (model.facts.L2_REDUCTION_RAMP). Those reads and writes replace the walk's C
    # re-reads and write-backs.
    x0, x1 = L2_REDUCTION_RAMP.get(gpu.arch, (1.0, 1.0))
    c_foot = (c_bytes + 2.0 * (a_bytes + b_bytes) / np.maximum(live, 1)) / float(r.l2_bytes)
    c_miss = np.where(reduce, np.clip((c_foot - x0) / max(x1 - x0, 1e-9), 0.0, 1.0), 0.0)
    c_reduced = c_miss * live * c_bytes
    walk_c_reads = np.where(live > 1, (live - 1) / np.maximum(live, 1) * dram_writes, 0.0)
    dram_reads = dram_reads - c_miss * walk_c_reads + c_reduced
    dram_writes = (1.0 - c_miss) * dram_writes + c_reduced
    # A's tiles walk its rows along K: an iteration reads k_tile x 4 contiguous bytes of each row, and the L2 fills
    # from DRAM a whole fetch (model.facts.DRAM_FETCH_BYTES: 64 B on the H200), so only that share of the iterations
    # asks DRAM for A (the next ones find it in L2: 32 B at BK = 8, every other K tile). B's tiles are rows of B:
    # each iteration a new row, nothing fetched ahead.
    f_a = f_a * np.minimum(1.0, BYTES_PER_ELEMENT * pa.k_tile / float(DRAM_FETCH_BYTES.get(gpu.arch, _SECTOR_BYTES)))
    waves = -(-blocks // wave)
    dram_bytes = dram_reads + dram_writes
    # The L2's reductions (split-K) are timed once, in the SMs' epilogue: the blocks of a round wait for the L2 to
    # reduce their partial tiles (store_cycles_per_block below). Timed again here, as a pipe beside the SMs, they
    # counted the same L2 work twice (split-K rows at small K, where the reductions are most of the work, ran 10-18 %
    # faster than predicted: edge_val12-15).
    t_l2 = l2_time_bytes / r.l2_bytes_per_s
    t_dram = (dram_bytes - 2.0 * c_reduced) / r.dram_bytes_per_s + c_reduced / r.dram_reduction_bytes_per_s
    # Split-K: C is zeroed before the kernel (gpu.launcher: a memset of C, timed with it as part of the
    # operation): one more launch, and C's bytes written at DRAM's bandwidth (experiments/red_beyond_l2.py: a memset
    # of 8-256 MiB takes 5.1-62 us on the H200, launch + bytes / 4.5 TB/s, in the L2 or not).
    t_zero = np.where(S > 1, r.launch_overhead_s + c_bytes / r.dram_bytes_per_s, 0.0)
    # The loaded latency a barrier waits for every iteration: latency_scale x the L2 hit latency (the
    # slowest of many tile lines, queued behind the others), plus DRAM's extra latency in the share of
    # the iterations whose tiles come from DRAM (_wave_walks: a panel the wave touches first, or again after the
    # L2 lost it, is read from DRAM once and waited for by every block of the wave that shares it).
    f_miss = _dram_share_waited(pa, f_a, f_b)
    lsync = prm.latency_scale * r.l2_latency_cycles + f_miss * (r.dram_latency_cycles - r.l2_latency_cycles)
    l2_reads = l2_bytes - 32.0 * store_sectors * blocks
    # A loop without a barrier: its warps drift apart once blocks start as others finish (a second wave); in a
    # launch of one wave every block starts at once and the warps that share a line ask for it together, as a
    # barrier loop's blocks do (the wave's DRAM share); otherwise the L2 miss ratio (_waited_latency).
    f_nb = np.where(waves <= 1, 0.5 * (f_a + f_b), dram_reads / np.maximum(l2_reads, 1.0))
    lg = np.where(pa.barriers > 0, lsync, _waited_latency(r, pa, f_nb, _warp_lines(pa, K, N, r.dram_page_bytes)))
    l1_left = _l1_bytes_left(gpu, bps, pa.smem)
    ldl_lat = np.where(bps * pa.warps * 32 * pa.local_bytes <= l1_left, r.l1_latency_cycles, r.l2_latency_cycles)
    copy_extra = _edge_copies(pa, M, N, K, gm, gn)
    l1_wf = _l1_wavefronts(pa, K, N, gpu.arch, copy_extra, M, lines0)
    t_full, parts_full = _round_cycles(bps, pa, lg, ldl_lat, r, prm, l1_wf)
    # Once per block: the prologue (traced latency of the code before the loop) and the epilogue (its
    # instructions, issued by the block's warps, and its C stores: a cycle for each 128-byte line and each 32-byte
    # sector of every store instruction, model.facts.STORE_PATH - a store whose 32 lanes write 32 rows costs 64).
    pro = _interp_trace(pa.prologue, lg, r.shared_latency_cycles)

    # The blocks of one round start (and so end) together on every SM: their C stores reach the L2 at the
    # same time, and the round's epilogue lasts at least as long as the L2 takes for all of them (to reduce
    # them, with split-K).
    c_rate = np.where(reduce, r.l2_reduction_bytes_per_s, r.l2_bytes_per_s)
    store_cycles_per_block = r.sms * store_sectors * 32.0 / c_rate * r.clock_hz

    # The C stores hold the SM's store path a cycle for each 128-byte line and each 32-byte sector of every
    # warp-level store (model.facts.STORE_PATH, experiments/store_patterns.py); where C's rows are not 16-byte aligned
    # (N % 4 != 0) a kernel that stores C in 16-byte stores stores it four bytes at a time: four stores for each,
    # every one touching the lines and sectors its 16 bytes did (model.simulate.block_store_lines / _sectors).
    c_line, c_sector = STORE_PATH.get(gpu.arch, (1.0, 0.0))
    n_off = np.asarray(N) % 4 != 0
    st_lines = np.where(n_off, np.maximum(pa.store_lines_element, pa.store_lines), pa.store_lines)
    st_sectors = np.where(n_off, np.maximum(pa.store_sectors_element, pa.store_sectors), pa.store_sectors)
    store_path = c_line * st_lines + c_sector * st_sectors

    def epilogue(bb, idle=0.0):
        """The epilogue of ``bb`` blocks: their instructions (less the issue cycles ``idle`` that other blocks' loops
        leave free for them), their C stores through the SM's store path, or the L2's share of the round's stores."""
        return np.maximum(np.maximum(bb * pa.warps * pa.epilogue / r.schedulers - idle, bb * store_path),
                          bb * store_cycles_per_block)

    # Code beyond the SM's instruction cache (model.facts.CODE_CACHE): a kernel whose SASS does not fit it leaves
    # each round's blocks to fetch from L2 (at the rate measured for code beyond that cache, per scheduler: the
    # blocks of a round run the same code together) the code they run once, before and after the main loop, and
    # their first pass over the loop. The fetch overlaps the work it feeds: what it exceeds that work by is added.
    cap, r_l2 = CODE_CACHE.get(gpu.arch, (math.inf, 1.0))
    beyond = pa.code[:, 3] > cap          # the SASS does not fit: the first round streams it in from L2
    # A block whose K tiles all fit in the drain loop (a pipelined kernel's last STAGES - 1 tiles: split-K slices one
    # tile deep, K = BK) never runs the steady loop: its code is the rest, and its first loop pass the drain loop's.
    steady_runs = nk > pa.code[:, 6]
    run_bytes = np.where(steady_runs, pa.code[:, 4], pa.code[:, 4] - pa.code[:, 1])
    loop_bytes = np.where(steady_runs, pa.code[:, 1], pa.code[:, 5])
    refetch = run_bytes > cap             # the code a block runs does not fit either: every round fetches it again

    def cold(t_it, bb):
        return np.where(refetch, np.maximum(pa.code[:, 0] / r_l2 - pro, 0.0) + np.maximum(loop_bytes / r_l2 - t_it, 0.0)
                        + np.maximum(pa.code[:, 2] / r_l2 - epilogue(bb), 0.0), 0.0)

    def first(t_it, bb):
        # The first round streams in the code its blocks run (not the SASS they jump over), once for each warp a
        # scheduler holds when the blocks run the steady loop (its warps drift apart there and fetch apart; blocks
        # whose tiles all run in the drain loop stay in phase and fetch once). Where the code a block runs with its
        # steady loop exceeds the cache, the whole SASS (fetch14, rounds12, kscan: 244-251 KB of 258).
        return np.where(beyond, np.maximum(np.maximum(first_stream(bb) / r_l2 - pro - t_it, 0.0), cold(t_it, bb)), 0.0)

    def first_stream(bb):
        streams = np.where(steady_runs, np.maximum(bb * pa.warps / r.schedulers, 1.0), 1.0)
        return np.where(beyond, np.where(pa.code[:, 4] > cap, pa.code[:, 3], run_bytes * streams), 0.0)

    # A loop without a barrier: its warps, and so its blocks, drift apart once later blocks start as earlier ones
    # finish (more than one wave), as _waited_latency has them. A block's once-per-block work then runs while the
    # SM's other resident blocks run their loops: the epilogue's instructions fill the issue slots the loop leaves
    # idle (what they exceed them by is added), and the prologue's latency is hidden by the other blocks' warps as
    # the loop's is (1/b of it exposed). A barrier loop's blocks of a wave walk K in step (_wave_walks) and pay both
    # in full. Why (Nsight Compute, the naive 16x16 kernel at 3968x5888x24, eight blocks an SM, 87 rounds,
    # logs/naive-2026-12-01/): 41 % of the stall samples fall outside the loop, yet the kernel takes 189 us, about
    # its loop's rounds alone (182 us modelled), where adding the once-per-block work in series made it 276 us;
    # every edge set had the naive kernel 11-39 % pessimistic at K <= 56.
    drift = (pa.barriers <= 0) & (waves > 1)

    def pro_exposed(bb):
        return np.where(drift, pro / np.maximum(bb, 1), pro)

    def once(bb, t_round, parts_round):
        return pro_exposed(bb) + epilogue(bb, np.where(drift, nk * np.maximum(t_round - parts_round[0], 0.0), 0.0))
    def busiest(full, rem):
        """(SM cycles, their parts, cold fetch, once-per-block cycles) of an SM that runs ``full`` rounds of ``bps``
        blocks and a last round of ``rem``."""
        t_rem, parts_rem = _round_cycles(np.maximum(rem, 1), pa, lg, ldl_lat, r, prm, l1_wf)
        # the first round streams in the code it runs, later rounds only when the code their blocks run exceeds
        # the cache
        fetch_cold = np.where(full >= 1, first(t_full, bps) + np.maximum(full - 1, 0) * cold(t_full, bps)
                              + np.where(rem > 0, cold(t_rem, np.maximum(rem, 1)), 0.0),
                              first(t_rem, np.maximum(rem, 1)))
        once_cycles = (full * once(bps, t_full, parts_full)
                       + np.where(rem > 0, once(np.maximum(rem, 1), t_rem, parts_rem), 0.0))
        sm_cycles = nk * (full * t_full + np.where(rem > 0, t_rem, 0.0)) + once_cycles + fetch_cold
        parts = nk * (full * parts_full + np.where(rem > 0, parts_rem, 0.0))
        parts[0] = parts[0] + fetch_cold
        parts[3] = parts[3] + full * pro_exposed(bps) + np.where(rem > 0, pro_exposed(np.maximum(rem, 1)), 0.0)
        return sm_cycles, parts, fetch_cold, once_cycles

    sm_cycles, parts, fetch_cold, once_cycles = busiest(full, rem)
    # The deal of the blocks after the first wave to the slots that free first in random order (busiest_sm_rounds):
    # the busiest SM's cycles where it takes more blocks than the even deal gives it - the time the launch takes
    # when its slots free in that order (experiments/block_trace.py: 21 of 30 traced launches nearer it, 9 nearer
    # the even deal; scored blind on edge_val52-55 it did worse than the even deal); reported beside the prediction
    refill_differs = (full_r != full) | (rem_r != rem)
    sm_cycles_r = sm_cycles
    if refill_differs.any():
        sm_cycles_r = np.where(refill_differs, busiest(full_r, rem_r)[0], sm_cycles)
    t_sm = sm_cycles / r.clock_hz
    # The memory system is further pipes of the same network: the SMs' time and the L2 and DRAM transfer
    # times overlap as the SM's own pipes do (the same exponent p), so traffic that does not bind still
    # costs time in proportion to how close it comes to binding.
    pp = prm.p
    time_s = (t_sm ** pp + t_l2 ** pp + t_dram ** pp) ** (1.0 / pp) + r.launch_overhead_s + t_zero
    time_s = np.where(launchable, time_s, np.inf)
    time_r = ((sm_cycles_r / r.clock_hz) ** pp + t_l2 ** pp + t_dram ** pp) ** (1.0 / pp) + r.launch_overhead_s + t_zero
    time_r = np.where(launchable, time_r, np.inf)
    limits = parts / r.clock_hz
    all_limits = np.concatenate([limits, t_l2[None], t_dram[None]])
    # The binding limit is the one that sets the time: the SM (then its largest part) or L2 or DRAM.
    sm_part = np.argmax(limits, axis=0)
    bound = np.where((t_dram >= t_sm) & (t_dram >= t_l2), 5, np.where(t_l2 >= t_sm, 4, sm_part))
    flops = 2.0 * M * N * K
    return {"time_s": time_s, "flop_per_s": flops / time_s, "flops": flops, "t_sm": t_sm, "t_l2": t_l2,
            "t_dram": t_dram, "limits": all_limits, "bound": bound, "blocks": blocks, "waves": waves,
            "l2_bytes": l2_bytes, "dram_bytes": dram_bytes, "sm_cycles": sm_cycles,
            "blocks_per_sm": np.where(launchable, bps, 0), "latency_cycles": lg, "cold_fetch_cycles": fetch_cold,
            "c_miss_share": c_miss, "c_reduced_from_dram_bytes": c_reduced, "zero_s": t_zero,
            "code_run_bytes": run_bytes, "once_cycles": once_cycles, "store_path_cycles": store_path,
            "copy_duplicate_wavefronts": copy_extra, "l1_wavefronts": l1_wf,
            "c_stores_element": n_off & (pa.store_lines_element > pa.store_lines),
            "code_first_round_bytes": np.where(full >= 1, first_stream(bps), first_stream(np.maximum(rem, 1))),
            "busiest_sm_blocks": full * bps + rem, "busiest_sm_blocks_refill_random": full_r * bps + rem_r,
            "time_refill_random_s": time_r}


# Profile attribute of each ProfileArrays column that comes from the profile.
_PROFILE_ATTR = {"warps": "warps", "k_tile": "k_tile", "instr": "instructions_per_warp", "shared_wf": "shared_wavefronts",
                 "l1_lines": "l1_lines", "gld_sectors": "gld_sectors", "store_sectors": "store_sectors", "store_lines": "store_lines",
                 "store_lines_element": "store_lines_element", "store_sectors_element": "store_sectors_element",
                 "trace": "trace", "prologue": "prologue", "epilogue": "epilogue_instructions",
                 "local_loads": "local_loads", "local_bytes": "local_bytes", "barriers": "barriers",
                 "registers": "registers", "gld_instr": "global_load_instructions",
                 "shared_instr": "shared_instructions", "local_stores": "local_stores",
                 "bank_conflicts": "bank_conflicts", "gld_wf": "global_load_wavefronts",
                 "has_wf": "l1_tag_limited", "exits": "exit_pattern", "fetch": "fetch_cycles",
                 "queue": "queue_cycles", "queue_blocks": "queue_blocks", "copies": "async_copies",
                 "code": "code_bytes", "elem": "element_path_extra", "elem_trace": "element_trace_extra",
                 "loop_tiles": "loop_tiles"}


def _object_column(items: Sequence) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = list(items)
    return out


def _assemble(gpu, cfgs: Sequence[KernelConfig], geos: Sequence, col: Mapping[str, np.ndarray]) -> ProfileArrays:
    """ProfileArrays from the profile columns and the geometry (residency from the occupancy calculator)."""
    BM, BN, threads, smem, split_k, swizzle, vred = (
        np.array([getattr(g, a) for g in geos], dtype=np.int64)
        for a in ("BM", "BN", "threads", "smem_bytes", "split_k", "swizzle_group", "vector_reduction"))
    bps = blocks_per_sm_array(gpu, threads, col["registers"], smem)
    n = len(geos)
    return ProfileArrays(BM=BM, BN=BN, k_tile=np.asarray(col["k_tile"], dtype=np.int64),
                         **{k: np.asarray(col[k], dtype=np.float64).reshape((n,) + np.shape(col[k])[1:])
                            for k in _PROFILE_ATTR if k not in ("k_tile", "registers")},
                         smem=smem.astype(np.float64), bps=bps, split_k=split_k, swizzle=swizzle, vred=vred,
                         cfg=_object_column(cfgs))


def _arrays_for(gpu, cfgs: Sequence[KernelConfig], registers: Sequence[int | None] | None):
    """The :class:`ProfileArrays` of a whole space at once, and its profile columns: counts read as columns
    (:func:`model.counts.counts_array`), the compiler facts table looked up once, no object per config.
    The path :func:`predict_rows`, :func:`calibrate` and ``experiments.tune.rank`` take; equal to
    :func:`_arrays_of_profiles` (the single-config path) row by row (``tests/test_rank_fast.py``)."""
    from .counts import counts_array
    from .facts import load_facts

    keys = [c.key for c in cfgs]
    geos = [geometry(c) for c in cfgs]
    table = load_facts(gpu.arch)
    col = _profile_columns(counts_array(cfgs, _COUNT_FIELDS, keys=keys), [table.get(k) for k in keys], geos,
                           registers, cfgs)
    return (_assemble(gpu, cfgs, geos, col),), col


def _arrays_of_profiles(gpu, cfgs: Sequence[KernelConfig], registers: Sequence[int | None] | None):
    """The same from :func:`profile` config by config (cached per config): the single-config path."""
    profs = [profile(c, gpu.arch, None if registers is None else registers[i]) for i, c in enumerate(cfgs)]
    col = {k: np.array([getattr(p, a) for p in profs]) for k, a in _PROFILE_ATTR.items()}
    return (_assemble(gpu, cfgs, [geometry(c) for c in cfgs], col),), profs


def predict_rows(gpu, cfgs: Sequence[KernelConfig], sizes: Sequence[tuple[int, int, int]],
                 registers: Sequence[int | None] | None = None, prm: TimingParams | None = None,
                 cross_validated: bool = False, max_blocks_per_sm=None) -> dict[str, np.ndarray]:
    """Predictions for paired (config, size) rows (same length).

    ``cross_validated=True`` predicts each rung's rows with the parameters calibrated without that rung
    (the shipped leave-one-rung-out fits): how the model is scored on measured data."""
    (pa,), _ = _arrays_for(gpu, cfgs, registers)
    s = np.asarray(sizes, dtype=np.int64).reshape(-1, 3)
    cap = None if max_blocks_per_sm is None else np.broadcast_to(np.asarray(max_blocks_per_sm), (len(cfgs),))
    loro = load_loro_params() if cross_validated and prm is None else {}
    if not loro:
        return evaluate(gpu, pa, s[:, 0], s[:, 1], s[:, 2], prm=prm, max_blocks_per_sm=cap)
    group = np.array([c.rung for c in cfgs])
    out: dict[str, np.ndarray] = {}
    for q in sorted(set(group.tolist())):
        idx = np.flatnonzero(group == q)
        res = evaluate(gpu, pa[idx], s[idx, 0], s[idx, 1], s[idx, 2], prm=loro.get(q),
                       max_blocks_per_sm=None if cap is None else cap[idx])
        for k, v in res.items():
            v = np.asarray(v)
            if k not in out:
                out[k] = np.zeros(v.shape[:-1] + (len(group),), dtype=v.dtype) if v.ndim else v
            if v.ndim:
                out[k][..., idx] = v
    return out


def predict(gpu, cfg: KernelConfig, M: int, N: int, K: int, registers: int | None = None,
            prm: TimingParams | None = None, max_blocks_per_sm: int | None = None) -> Prediction:
    """The timing model's prediction for one config and size, as a :class:`Prediction`."""
    M, N, K = validate_size(M, N, K)
    if cfg.info.file is None:
        raise ConfigError(f"{cfg.label} has no kernel source to model (the cuBLAS reference is measured, not "
                          f"modelled)", limit="rung")
    validate(cfg, gpu)
    prm = prm or load_params()
    (pa,), profs = _arrays_of_profiles(gpu, [cfg], None if registers is None else [registers])
    r = {k: (v[..., 0] if isinstance(v, np.ndarray) and v.ndim >= 1 else v)
         for k, v in evaluate(gpu, pa, np.array([M]), np.array([N]), np.array([K]), prm=prm,
                              max_blocks_per_sm=max_blocks_per_sm).items()}
    prof = profs[0]
    g = geometry(cfg)
    occ = occupancy(gpu, g.threads, prof.registers, g.smem_bytes)
    rt = rates(gpu)
    lim = r["limits"]
    b = int(r["blocks_per_sm"])
    lg = float(r["latency_cycles"])
    t1 = float(_interp_trace(pa.trace, np.array([lg]), rt.shared_latency_cycles)[0])
    formulas = {
        "issue": f"n warps x {prof.instructions_per_warp:.0f} instructions per iteration / {rt.schedulers} schedulers "
                 f"[{prof.source}]" + (
                     f"; instruction fetch: the loop exceeds the {INSTRUCTION_FETCH[gpu.arch][0] / 1024:.0f} KB L0 "
                     f"i-cache, {prof.fetch_cycles:.0f} cycles per iteration to fetch its path at "
                     f"{INSTRUCTION_FETCH[gpu.arch][1]:g} B a cycle (a floor under each round)"
                     if prof.fetch_cycles > 0 else ""),
        "shared": f"n warps x {prof.shared_wavefronts / prof.warps:.1f} wavefronts per warp-iteration / "
                  f"{rt.shared_wavefronts_per_cycle:.3f} per cycle",
        "l1": (f"n warps x {float(r['l1_wavefronts']) / prof.warps:.2f} global-load "
               f"wavefronts per warp-iteration ({'L1 data stage at K mod 32 = ' + str(K % 32) + ', N mod 32 = ' + str(N % 32) + ', or the tag stage: ' + format(l1_tag(gpu.arch)[0], 'g') + ' cycles a load + the lines at ' + format(l1_tag(gpu.arch)[1], 'g') + ' a cycle' + (', at least the lines a 4-byte load looks up in its busiest tag bank' if gpu.arch in L1_TAG_BANKS else '') if prof.l1_tag_limited else '128-byte lines, 1 per cycle'}); "
               f"added to the shared wavefronts (one L1TEX data stage)"
               + (f"; of them {float(r['copy_duplicate_wavefronts']):.0f} a block-iteration are the edge blocks' 4-byte copies "
                  f"of clamped rows or columns, a wavefront for each lane that reads a word another lane reads (no broadcast)"
                  if float(r.get('copy_duplicate_wavefronts', 0.0)) > 0 else "")),
        "latency": (f"one warp alone: {t1:.0f} cycles per iteration at a {lg:.0f}-cycle global latency "
                    f"({'loaded: latency_scale x L2, a barrier waits for all tile loads' if prof.barriers > 0 else 'L2, or DRAM when a waited sector misses L2'}) "
                    f"({prof.latency_chain:.2f} latencies in series per iteration, "
                    f"{'from the SASS loop trace' if prof.source == 'sass' else 'estimated: no loop trace'}); "
                    f"{b} resident block(s) x {prof.warps} warps hide it (mean value analysis); plus the prologue"),
        "l2": (f"{r['l2_bytes'] / 1e9:.3g} GB (tile loads + C stores) / {rt.l2_bytes_per_s / 1e12:.3g} TB/s"
               + ("; the split-K reductions are timed in the SMs' epilogue (each round waits for the L2 to reduce its "
                  f"tiles at {rt.l2_reduction_bytes_per_s / 1e12:.3g} TB/s), not here" if g.split_k > 1 else "")),
        "dram": (f"{(r['dram_bytes'] - 2 * r['c_reduced_from_dram_bytes']) / 1e9:.3g} GB (A, B + re-reads per wave, "
                 f"C evicted during the kernel) / {rt.dram_bytes_per_s / 1e12:.3g} TB/s"
                 + (f" + {float(r['c_reduced_from_dram_bytes']) / 1e9:.3g} GB of C reduced from DRAM (each slice reads "
                    f"and writes back {100 * float(r['c_miss_share']):.0f} % of C: it does not fit the L2) / "
                    f"{rt.dram_reduction_bytes_per_s / 1e12:.3g} TB/s" if float(r['c_reduced_from_dram_bytes']) > 0 else "")),
    }
    roofs = tuple(Roof(name, float(lim[i]), float(lim[i]) * rt.clock_hz, "cycle", rt.clock_hz, formulas[name])
                  for i, name in enumerate(LIMITS))
    notes = list(rt.notes)
    notes.append(f"per iteration: service = (issue^p + (shared + l1)^p)^(1/p), p = {prm.p:.2f}; delay = the traced "
                 f"single-warp latency; combined by mean value analysis over the {b * prof.warps} resident warps; "
                 f"parameters: {prm.calibrated_on}")
    if float(r["cold_fetch_cycles"]) > 0:
        cap, r_l2 = CODE_CACHE[gpu.arch]
        run = float(r["code_run_bytes"])
        drain = (f"; its {int(prof.code_bytes[6])} K tile(s) a block all run in the drain loop, never the steady loop"
                 if run < prof.code_bytes[4] else "")
        again = (f"and, as the {run / 1024:.0f} KB a block runs exceed it too, every later round its "
                 f"once-run code and the loop's first pass" if run > cap else
                 f"once (the {run / 1024:.0f} KB a block runs stay cached for the later rounds{drain})")
        first = float(r["code_first_round_bytes"])
        what = ("all of it, as the code a block runs with its steady loop exceeds the cache too" if
                prof.code_bytes[4] > cap else
                f"the code its blocks run, {run / 1024:.0f} KB, {first / max(run, 1.0):.0f} time(s): once for each "
                f"warp a scheduler holds in the steady loop, once when the blocks run only the drain loop")
        notes.append(f"the kernel's {prof.code_bytes[3] / 1024:.0f} KB of SASS exceed the {cap / 1024:.0f} KB "
                     f"instruction cache beyond the L0: the first round streams in from L2 at {r_l2:g} B a cycle "
                     f"{first / 1024:.0f} KB ({what}), "
                     f"{again} ({float(r['cold_fetch_cycles']):,.0f} cycles on the busiest SM)")
    if float(r["zero_s"]) > 0:
        notes.append(f"split-K: C is zeroed before the kernel (a memset at DRAM bandwidth, one more launch): "
                     f"{float(r['zero_s']) * 1e6:.1f} us, added to the time")
    if max_blocks_per_sm is not None:
        notes.append(f"residency forced to at most {max_blocks_per_sm} block(s) per SM")
    be, br = int(r["busiest_sm_blocks"]), int(r["busiest_sm_blocks_refill_random"])
    if br != be:
        notes.append(f"the last wave's deal: the blocks after the first wave go to the slots that free first; one slot "
                     f"of each SM in turn leaves the busiest SM {be} blocks (this prediction), slots freeing in random "
                     f"order {br}: {float(r['time_refill_random_s']) * 1e6:.1f} us (on the H200 21 of 30 traced "
                     f"launches came nearer the random order, 9 the even deal: experiments/block_trace.py)")
    if prof.source != "sass":
        notes.append("no compiler facts with a loop trace for this config: instructions and latency estimated")
    if K % 4 or N % 4:
        which = " and ".join(f"{d} = {v}" for d, v in (("K", K), ("N", N)) if v % 4)
        notes.append(f"{which} not a multiple of 4: the rows of A (K) or B (N) are not 16-byte aligned and the kernels "
                     "take their element path (charged from its SASS where the loop branches to it; at N % 4 != 0 "
                     "16-byte C stores go four bytes at a time, charged as four stores each); the model's known "
                     "weak spot all the same: on the H200 the kernels without an element branch (element loads "
                     "throughout) ran 10-27 % slower than predicted at such sizes, and split-K's vector reductions, "
                     "which fall back to scalar ones at odd N (charged as four times the sector operations), 5-23 % "
                     "faster (the shipped data; logs/odd-2026-12-01)")
    flops = 2.0 * M * N * K
    return Prediction(gpu=gpu.name, config=cfg, M=M, N=N, K=K, flops=flops, time_s=float(r["time_s"]),
                      bound=LIMITS[int(r["bound"])], roofs=roofs, occupancy=occ, blocks=int(r["blocks"]),
                      waves=int(r["waves"]),
                      intensity_flop_per_byte={"l2": flops / float(r["l2_bytes"]), "dram": flops / float(r["dram_bytes"])},
                      notes=tuple(notes), time_refill_random_s=float(r["time_refill_random_s"]))


# --------------------------------------------------------------------------------------------------
# Calibration with leave-one-rung-out cross-validation
# --------------------------------------------------------------------------------------------------

_BOUNDS = {"p": (1.05, 30.0), "latency_scale": (0.3, 6.0), "spill_overlap": (1.0, 32.0)}


def calibrate(gpu, cfgs: Sequence[KernelConfig], sizes, registers, measured_s, rungs_of_rows,
              start: TimingParams | None = None) -> dict:
    """Fit (p, latency_scale, spill_overlap) by least squares on log time; also leave-one-rung-out fits.

    Returns {"all": params, "loro": {rung: params fitted without that rung}, "predicted_loro_s": per-row
    times predicted for each row by the fit that did not see its rung}."""
    from scipy.optimize import least_squares

    (pa,), _ = _arrays_for(gpu, cfgs, registers)
    s = np.asarray(sizes, dtype=np.int64).reshape(-1, 3)
    meas = np.asarray(measured_s, dtype=np.float64)
    rr = np.asarray(rungs_of_rows)
    start = start or TimingParams()
    lo = np.log([_BOUNDS["p"][0] - 1.0, _BOUNDS["latency_scale"][0], _BOUNDS["spill_overlap"][0]])
    hi = np.log([_BOUNDS["p"][1] - 1.0, _BOUNDS["latency_scale"][1], _BOUNDS["spill_overlap"][1]])

    def params(theta) -> TimingParams:
        return TimingParams(float(1.0 + np.exp(theta[0])), float(np.exp(theta[1])), float(np.exp(theta[2])))

    def model(theta, idx):
        return evaluate(gpu, pa[idx], s[idx, 0], s[idx, 1], s[idx, 2], prm=params(theta))["time_s"]

    def fit(idx) -> TimingParams:
        x0 = np.clip(np.log([start.p - 1.0, start.latency_scale, start.spill_overlap]), lo + 1e-6, hi - 1e-6)
        rw = np.array([1.0 / np.sqrt(np.sum(rr[idx] == q)) for q in rr[idx]])   # each rung weighs the same
        res = least_squares(lambda th: rw * (np.log(model(th, idx)) - np.log(meas[idx])), x0, bounds=(lo, hi),
                            diff_step=1e-3)
        return params(res.x)

    out_all = fit(np.arange(len(meas)))
    loro = {}
    pred_loro = np.empty_like(meas)
    for q in sorted(set(rr.tolist())):
        train, test = np.flatnonzero(rr != q), np.flatnonzero(rr == q)
        prm = fit(train)
        loro[int(q)] = prm
        pred_loro[test] = evaluate(gpu, pa[test], s[test, 0], s[test, 1], s[test, 2], prm=prm)["time_s"]
    return {"all": out_all, "loro": loro, "predicted_loro_s": pred_loro}
