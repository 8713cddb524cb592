"""The timing model: throughput limits per SM, latency hiding, waves, launch overhead.

A pure function of (GPU spec, kernel config, problem size) that returns a
:class:`~model.roofline.Prediction` naming the limit that binds, with every limit's time.

Inputs (nothing here is fitted to the kernels it is scored on, except the four dimensionless
parameters of :class:`TimingParams`, see below):

* the **warp-level access simulator** (:mod:`model.simulate`): per interior block and K tile, the
  global-load requests and the 128-byte lines they touch, the shared-memory wavefronts (loads and
  stores, bank conflicts included), the FFMAs and barriers;
* the **compiler facts** (:mod:`model.facts`, NVRTC for the GPU's architecture): registers per thread
  (which set the occupancy) and the SASS instruction count of one steady-state main-loop iteration
  (which sets the issue time);
* the **GPU spec**: SMs, schedulers, clock, and the ``[timing]`` table measured once per GPU by
  ``experiments/microbench.py`` (L2 and DRAM bandwidth, shared bandwidth, L2 latency, launch overhead);
  GPUs with no such table use the architectural rates (one wavefront per cycle per SM, 128 B per
  cycle of shared memory) and the H200's latencies in cycles, and say so in the notes.

Per SM, one *round* is every resident block doing one K-tile iteration. With ``b`` resident blocks of
``W`` warps, ``I`` instructions per warp and iteration, ``S`` shared wavefronts and ``G`` L1 line
wavefronts per block and iteration (all in SM cycles), one block-iteration needs

* **service** at the SM's pipelines, ``(issue^p + shared^p + L1^p)^(1/p)`` (the pipes overlap partly):
  issue ``W I / (4 e(w))`` - each of the 4 schedulers issues one warp instruction a cycle, at efficiency
  ``e(w) = w / (w + w0)`` with ``w = ceil(b W / 4)`` warps on the busiest scheduler (few warps cannot
  hide dependent-instruction and shared-load latencies); shared ``S / r`` with ``r`` wavefronts per
  cycle (measured shared bandwidth / 128 B / clock); L1 ``G``, one 128-byte line per cycle in the L1
  tag stage (plus one per warp for each spill reload);
* a **delay** in which it uses no SM resource: the exposed tile-load latency ``lambda x L2 latency`` for
  the single-stage kernels (rung 05 pays it once per float4 load of a thread: each is stored to shared
  memory inside its own guard branch, so they wait one after another), ``max(0, lambda L2 - own
  compute)`` for the double-buffered one, none for the naive kernel (no barriers, 32+ warps); plus the
  spill reloads' latency; plus, for blocks of fewer than 4 warps, the time their warps occupy fewer
  than 4 schedulers (Seidmann's multi-server approximation).

The ``b`` resident blocks share the SM like customers of a closed queueing network: mean value
analysis (Reiser & Lavenberg) of ``b`` blocks, each alternating delay and service, gives the round
time - ``delay + service`` for one block (latency exposed), tending to ``b x service`` when enough
blocks hide it (Little's law; the latency-hiding argument of Volkov). An SM holding
``n = ceil(blocks / SMs)`` blocks runs ``n // B`` full rounds-of-blocks and one partial (the last,
partly filled wave) of ``ceil(K / BK)`` iterations each. The kernel's time is the SM time, or the L2
or DRAM traffic time if larger, plus the launch overhead.

Spilled registers (``LDL`` in the SASS loop) are reloaded right before use: each adds the L1 latency,
or the L2 latency when the resident warps' local memory does not fit beside their shared memory,
divided by the number of reloads in flight together (``spill_overlap``).

**Calibration.** ``w0``, ``p``, ``lambda`` and ``spill_overlap`` are dimensionless and calibrated by least squares on
log-time over measured H200 rows (``model/data/calibration.json`` records on which rows); the error
that :mod:`analysis.compare` reports for this model is leave-one-rung-out cross-validated: each rung
is predicted with parameters calibrated on the other rungs only (:func:`calibrate`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from .errors import ConfigError
from .occupancy import blocks_per_sm_array, occupancy
from .registry import BYTES_PER_ELEMENT, KernelConfig, geometry, min_registers, validate, validate_size
from .roofline import ConfigArrays, Prediction, Roof

CALIBRATION_FILE = Path(__file__).resolve().parent / "data" / "calibration.json"
LIMITS = ("issue", "shared", "l1", "latency", "l2", "dram")


@dataclass(frozen=True)
class TimingParams:
    """The four dimensionless parameters (see the module docstring)."""

    w0: float = 1.0            # warps per scheduler at which issue runs at half rate
    p: float = 3.0             # overlap exponent of the per-round limits (1 = no overlap, inf = max)
    latency_scale: float = 1.5  # loaded tile-load latency in units of the measured L2 latency
    spill_overlap: float = 2.0  # spill reloads whose latencies overlap (memory-level parallelism of LDL)
    calibrated_on: str = "defaults (not calibrated)"

    def to_json(self) -> dict:
        return {"w0": self.w0, "p": self.p, "latency_scale": self.latency_scale,
                "spill_overlap": self.spill_overlap, "calibrated_on": self.calibrated_on}


def _params(d: Mapping) -> TimingParams:
    return TimingParams(d["w0"], d["p"], d["latency_scale"], d.get("spill_overlap", 2.0), d.get("calibrated_on", ""))


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
    launch_overhead_s: float
    l2_bytes: int
    notes: tuple[str, ...]


# Architectural defaults for GPUs with no [timing] table: in SM cycles and relative to the spec's own
# nominal figures. The latencies are the H200's measured cycles (experiments/microbench.py), assumed.
_DEFAULT_L2_LATENCY_CYCLES = 287.8
_DEFAULT_L1_LATENCY_CYCLES = 42.9
_DEFAULT_LAUNCH_OVERHEAD_S = 5.5e-6
_DEFAULT_L2_OVER_DRAM = 2.5


@lru_cache(maxsize=None)
def rates(gpu) -> Rates:
    t = gpu.timing
    clock = gpu.boost_clock_hz
    notes = []
    nominal_shared = gpu.sm_count * gpu.shared_banks * gpu.shared_bank_bytes * clock
    shared = t.get("shared_bandwidth_bytes_per_s")
    if shared is None:
        notes.append("shared-memory rate: nominal 32 banks x 4 B per cycle (not measured on this GPU)")
        shared = nominal_shared
    dram = t.get("dram_read_bandwidth_bytes_per_s") or gpu.copy_bandwidth_bytes_per_s or gpu.dram_bandwidth_bytes_per_s
    l2 = t.get("l2_bandwidth_bytes_per_s")
    if l2 is None:
        notes.append(f"L2 bandwidth assumed {_DEFAULT_L2_OVER_DRAM} x DRAM (not measured on this GPU)")
        l2 = _DEFAULT_L2_OVER_DRAM * gpu.dram_bandwidth_bytes_per_s
    lat = t.get("l2_latency_cycles")
    if lat is None:
        notes.append(f"L2 latency assumed {_DEFAULT_L2_LATENCY_CYCLES:.0f} cycles (the H200's, measured)")
        lat = _DEFAULT_L2_LATENCY_CYCLES
    l1lat = t.get("l1_latency_cycles", _DEFAULT_L1_LATENCY_CYCLES)
    launch = t.get("launch_overhead_s", _DEFAULT_LAUNCH_OVERHEAD_S)
    return Rates(clock, gpu.sm_count, gpu.sub_partitions, shared / (gpu.sm_count * clock * 128.0), l2, dram, lat,
                 l1lat, launch, gpu.l2_bytes, tuple(notes))


# --------------------------------------------------------------------------------------------------
# Per-config profile (size-independent counts per block and K tile)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Profile:
    """Counts of one interior block in one steady-state K-tile iteration."""

    warps: int                  # W, warps per block
    instructions_per_warp: float  # I, SASS instructions per warp and iteration
    shared_wavefronts: float    # S, per block and iteration (loads + stores)
    l1_lines: float             # G, 128-byte line wavefronts of global loads per block and iteration
    registers: int
    stages: int
    source: str                 # where I came from ("sass" or "estimate")
    serial_loads: float = 1.0   # tile loads whose latencies add up within one iteration (see profile())
    local_loads: float = 0.0    # spill reloads (LDL) per warp and iteration, from the SASS
    local_bytes: float = 0.0    # local memory (stack and spills) per thread, bytes


@lru_cache(maxsize=100_000)
def profile(cfg: KernelConfig, arch: str, registers: int | None = None) -> Profile:
    from .counts import steady_counts
    from .facts import facts_for

    g = geometry(cfg)
    # Counts of one steady-state tile: the simulator's at an interior-only probe size (two tiles per
    # dimension, K = max(64, 4 BK)), served by model/counts.py from its versioned cache or closed form.
    b = steady_counts(cfg)
    f = facts_for(cfg, arch)
    regs = registers or (f.registers if f is not None else None) or min_registers(g)
    ffma_per_warp_iteration = b.ffma_warp / max(b.warps, 1)
    source = "estimate"
    if f is not None and f.loop_found and f.loop_ffma and f.loop_path_instructions:
        # Instructions per FFMA in the steady-state SASS iteration, times the FFMAs of one K tile.
        instr = f.loop_path_instructions * ffma_per_warp_iteration / f.loop_ffma
        source = "sass"
    else:
        instr = (b.ffma_warp + b.lds_instructions + b.sts_instructions + b.gld_requests + b.bar_warp
                 + b.int_warp_est) / max(b.warps, 1)
    # Rung 05 guards each float4 global load with a branch and stores it to shared memory inside the
    # same branch region (gpu/kernels/05_float4.cu), so a thread's tile loads wait one after another:
    # their latencies add up. The other rungs issue all of a tile's loads before the first use (04 by
    # predication, 06 into staging registers), so one latency is exposed per iteration.
    serial = b.gld_requests / max(b.warps, 1) if cfg.rung == 5 else 1.0
    # Spilled registers are reloaded from local memory (through L1) right before their use.
    ldl = f.per_iteration("LDL") * ffma_per_warp_iteration / f.loop_ffma if source == "sass" else 0.0
    return Profile(warps=b.warps, instructions_per_warp=float(instr),
                   shared_wavefronts=float(b.lds_wavefronts + b.sts_wavefronts),
                   l1_lines=float(b.gld_lines), registers=int(regs), stages=g.stages,
                   source=source, serial_loads=float(serial), local_loads=float(ldl),
                   local_bytes=float(max(f.local_bytes, f.stack_bytes)) if f is not None else 0.0)


# --------------------------------------------------------------------------------------------------
# Vectorised core
# --------------------------------------------------------------------------------------------------


def _mva_cycle(C, Z, n_blocks):
    """Mean value analysis of a closed system: ``n_blocks`` blocks, each alternating between a delay of
    ``Z`` cycles (waiting on memory: no SM resource used) and ``C`` cycles of service at the SM's
    pipelines (a single queue). Returns the cycle time ``Z + R(n)``: the time in which every resident block
    completes one iteration. With one block it is ``Z + C`` (latency exposed); with many it tends to
    ``n C`` (throughput bound); in between it is exact for exponential service (Reiser & Lavenberg 1980)."""
    C = np.asarray(C, dtype=np.float64)
    Z = np.broadcast_to(np.asarray(Z, dtype=np.float64), C.shape)
    B = np.broadcast_to(np.asarray(n_blocks), C.shape)
    Q = np.zeros_like(C)
    R = C.copy()
    for n in range(1, int(B.max(initial=1)) + 1):
        Rn = C * (1.0 + Q)
        Xn = n / (Z + Rn)
        on = n <= B
        R = np.where(on, Rn, R)
        Q = np.where(on, Xn * Rn, Q)
    return Z + R


def _round_cycles(b, prof_w, prof_i, prof_s, prof_g, serial, ldl, ldl_lat, lat_cycles, double_buffer, naive,
                  r: Rates, prm: TimingParams):
    """Cycles of one round (every resident block one iteration) with ``b`` resident blocks (arrays).

    Service per block-iteration at the SM: its issue, shared-memory and L1 work (partly overlapping,
    p-norm). Delay: the exposed tile-load latency (and spill reloads). The two combine by mean value
    analysis over the ``b`` resident blocks (:func:`_mva_cycle`)."""
    w_sched = np.ceil(b * prof_w / r.schedulers)              # warps on the busiest scheduler
    eff = w_sched / (w_sched + prm.w0)
    per_warp = prof_i / eff                                   # cycles one warp needs on its scheduler
    t_issue = prof_w * per_warp / r.schedulers
    t_shared = prof_s / r.shared_wavefronts_per_cycle
    t_l1 = prof_g + prof_w * ldl                              # spill reloads: one line per warp instruction
    p = prm.p
    service = (t_issue ** p + t_shared ** p + t_l1 ** p) ** (1.0 / p)
    # A block of fewer than 4 warps uses fewer than 4 schedulers: Seidmann's multi-server approximation
    # adds the rest of its warps' time as a delay.
    multi = per_warp * np.maximum(0.0, 1.0 - prof_w / r.schedulers)
    load = prm.latency_scale * lat_cycles * serial
    spills = ldl * ldl_lat / prm.spill_overlap
    compute_alone = np.ceil(prof_w / r.schedulers) * per_warp
    delay = np.where(naive, 0.0, np.where(double_buffer, np.maximum(0.0, load - compute_alone), load)) + spills + multi
    total = _mva_cycle(service, delay, b)
    return total, np.stack([b * t_issue, b * t_shared, b * t_l1, total - b * service])


def evaluate(gpu, rung, BM, BN, BK, warps, instr, shared_wf, l1_lines, serial, local_loads, local_bytes, smem, bps,
             M, N, K,
             prm: TimingParams | None = None) -> dict[str, np.ndarray]:
    """Vectorised timing model over arrays (one entry per (config, size)); SI units out."""
    prm = prm or load_params()
    r = rates(gpu)
    rung = np.asarray(rung)
    M, N, K = (np.asarray(x, dtype=np.int64) for x in (M, N, K))
    naive = rung == 1
    dbuf = rung == 6
    gm, gn = -(-M // BM), -(-N // BN)
    blocks = gm * gn
    nk = np.where(naive, K, -(-K // BK))
    launchable = np.asarray(bps) > 0
    bps = np.maximum(np.asarray(bps), 1)
    per_sm = -(-blocks // r.sms)
    full, rem = per_sm // bps, per_sm % bps
    # Spill reloads hit L1 while the resident warps' local memory fits beside their shared memory in the
    # SM's L1/shared storage; otherwise they come from L2.
    l1_left = gpu.l1_shared_bytes - bps * (np.asarray(smem) + gpu.shared_reserved_per_block)
    ldl_lat = np.where(bps * warps * 32 * np.asarray(local_bytes) <= l1_left, r.l1_latency_cycles, r.l2_latency_cycles)
    args = (warps, instr, shared_wf, l1_lines, serial, local_loads, ldl_lat, r.l2_latency_cycles, dbuf, naive, r, prm)
    t_full, parts_full = _round_cycles(bps, *args)
    t_rem, parts_rem = _round_cycles(np.maximum(rem, 1), *args)
    sm_cycles = nk * (full * t_full + np.where(rem > 0, t_rem, 0.0))
    parts = nk * (full * parts_full + np.where(rem > 0, parts_rem, 0.0))
    t_sm = sm_cycles / r.clock_hz
    # Traffic: L2 serves every tile load (the naive kernel's L1 keeps a block's lines between k steps, so its
    # L2 traffic is that of a BM x BN tile too); DRAM sees the unique bytes plus the re-reads that miss L2.
    a_bytes = BYTES_PER_ELEMENT * M * K
    b_bytes = BYTES_PER_ELEMENT * K * N
    c_bytes = BYTES_PER_ELEMENT * M * N
    l2_bytes = (a_bytes * gn + b_bytes * gm + c_bytes).astype(np.float64)
    unique = (a_bytes + b_bytes + c_bytes).astype(np.float64)
    miss = np.clip(1.0 - r.l2_bytes / np.maximum(a_bytes + b_bytes, 1), 0.0, 1.0)
    dram_bytes = unique + (l2_bytes - unique) * miss
    t_l2 = l2_bytes / r.l2_bytes_per_s
    t_dram = dram_bytes / r.dram_bytes_per_s
    time_s = np.maximum(np.maximum(t_sm, t_l2), t_dram) + r.launch_overhead_s
    time_s = np.where(launchable, time_s, np.inf)    # a block that cannot launch never finishes
    limits = np.stack([parts[0], parts[1], parts[2], parts[3]]) / r.clock_hz
    all_limits = np.concatenate([limits, t_l2[None] * np.ones_like(limits[:1]), t_dram[None] * np.ones_like(limits[:1])])
    bound = np.argmax(all_limits, axis=0)
    flops = 2.0 * M * N * K
    return {"time_s": time_s, "flop_per_s": flops / time_s, "flops": flops, "t_sm": t_sm, "t_l2": t_l2,
            "t_dram": t_dram, "limits": all_limits, "bound": bound, "blocks": blocks, "waves": -(-blocks // (r.sms * bps)),
            "l2_bytes": l2_bytes, "dram_bytes": dram_bytes, "sm_cycles": sm_cycles, "blocks_per_sm": np.where(launchable, bps, 0)}


def _arrays_for(gpu, cfgs: Sequence[KernelConfig], registers: Sequence[int | None] | None):
    profs = [profile(c, gpu.arch, None if registers is None else registers[i]) for i, c in enumerate(cfgs)]
    ca = ConfigArrays.from_configs(cfgs, [p.registers for p in profs])
    bps = blocks_per_sm_array(gpu, ca.threads, ca.registers, ca.smem_bytes)
    pa = lambda f: np.array([f(p) for p in profs], dtype=np.float64)  # noqa: E731
    return (ca.rung, ca.BM, ca.BN, ca.BK, pa(lambda p: p.warps),
            pa(lambda p: p.instructions_per_warp), pa(lambda p: p.shared_wavefronts), pa(lambda p: p.l1_lines),
            pa(lambda p: p.serial_loads), pa(lambda p: p.local_loads), pa(lambda p: p.local_bytes),
            ca.smem_bytes, bps), profs


def predict_rows(gpu, cfgs: Sequence[KernelConfig], sizes: Sequence[tuple[int, int, int]],
                 registers: Sequence[int | None] | None = None, prm: TimingParams | None = None,
                 cross_validated: bool = False) -> dict[str, np.ndarray]:
    """Predictions for paired (config, size) rows (same length).

    ``cross_validated=True`` predicts each rung with the parameters calibrated without it (the shipped
    leave-one-rung-out fits), which is how the model is scored on measured data."""
    arrs, _ = _arrays_for(gpu, cfgs, registers)
    s = np.asarray(sizes, dtype=np.int64).reshape(-1, 3)
    loro = load_loro_params() if cross_validated and prm is None else {}
    if not loro:
        return evaluate(gpu, *arrs, s[:, 0], s[:, 1], s[:, 2], prm=prm)
    rung = arrs[0]
    out: dict[str, np.ndarray] = {}
    for q in sorted(set(rung.tolist())):
        idx = np.flatnonzero(rung == q)
        res = evaluate(gpu, *(a[idx] for a in arrs), s[idx, 0], s[idx, 1], s[idx, 2], prm=loro.get(q))
        for k, v in res.items():
            v = np.asarray(v)
            if k not in out:
                out[k] = np.zeros(v.shape[:-1] + (len(rung),), dtype=v.dtype) if v.ndim else v
            if v.ndim:
                out[k][..., idx] = v
    return out


def predict(gpu, cfg: KernelConfig, M: int, N: int, K: int, registers: int | None = None,
            prm: TimingParams | None = None) -> Prediction:
    """The timing model's prediction for one config and size, as a :class:`Prediction`."""
    M, N, K = validate_size(M, N, K)
    if cfg.rung == 0:
        raise ConfigError("the cuBLAS reference (rung 00) is measured, not modelled", limit="rung")
    validate(cfg, gpu)
    prm = prm or load_params()
    arrs, profs = _arrays_for(gpu, [cfg], None if registers is None else [registers])
    r = {k: (v[..., 0] if isinstance(v, np.ndarray) and v.ndim >= 1 else v)
         for k, v in evaluate(gpu, *arrs, np.array([M]), np.array([N]), np.array([K]), prm=prm).items()}
    prof = profs[0]
    g = geometry(cfg)
    occ = occupancy(gpu, g.threads, prof.registers, g.smem_bytes)
    rt = rates(gpu)
    lim = r["limits"]
    formulas = {
        "issue": f"sum over rounds of b x {prof.warps} warps x {prof.instructions_per_warp:.0f} instructions "
                 f"/ ({rt.schedulers} schedulers x e(w)), e(w) = w/(w + {prm.w0:.2f}) [{prof.source}]",
        "shared": f"b x {prof.shared_wavefronts:.0f} wavefronts per block-iteration / "
                  f"{rt.shared_wavefronts_per_cycle:.3f} per cycle",
        "l1": f"b x {prof.l1_lines:.0f} global-load lines per block-iteration / 1 per cycle",
        "latency": ("none: the naive kernel has no barriers and 32+ warps" if cfg.rung == 1 else
                    f"exposed {prm.latency_scale:.2f} x {rt.l2_latency_cycles:.0f}-cycle tile-load latency"
                    + (f" x {prof.serial_loads:.0f} serial float4 loads" if cfg.rung == 5 else "")
                    + (" beyond the block's own compute" if cfg.rung == 6 else "")
                    + (f", {prof.local_loads:.0f} spill reloads" if prof.local_loads else "")
                    + f", with up to {occ.blocks_per_sm} resident block(s) to hide it (mean value analysis)"),
        "l2": f"{r['l2_bytes'] / 1e9:.3g} GB of tile loads / {rt.l2_bytes_per_s / 1e12:.3g} TB/s",
        "dram": f"{r['dram_bytes'] / 1e9:.3g} GB / {rt.dram_bytes_per_s / 1e12:.3g} TB/s",
    }
    roofs = tuple(Roof(name, float(lim[i]), float(lim[i]) * rt.clock_hz, "cycle", rt.clock_hz, formulas[name])
                  for i, name in enumerate(LIMITS))
    notes = list(rt.notes)
    notes.append(f"per round: service = (issue^p + shared^p + l1^p)^(1/p), p = {prm.p:.2f}, and the delay combine by "
                 f"mean value analysis over the resident blocks; 'latency' is the time beyond b x service; "
                 f"parameters: {prm.calibrated_on}")
    if prof.source != "sass":
        notes.append("no compiler facts for this config: instructions per iteration estimated by the simulator")
    flops = 2.0 * M * N * K
    return Prediction(gpu=gpu.name, config=cfg, M=M, N=N, K=K, flops=flops, time_s=float(r["time_s"]),
                      bound=LIMITS[int(r["bound"])], roofs=roofs, occupancy=occ, blocks=int(r["blocks"]),
                      waves=int(r["waves"]),
                      intensity_flop_per_byte={"l2": flops / float(r["l2_bytes"]), "dram": flops / float(r["dram_bytes"])},
                      notes=tuple(notes))


# --------------------------------------------------------------------------------------------------
# Calibration with leave-one-rung-out cross-validation
# --------------------------------------------------------------------------------------------------


def calibrate(gpu, cfgs: Sequence[KernelConfig], sizes, registers, measured_s, rungs_of_rows,
              start: TimingParams | None = None) -> dict:
    """Fit (w0, p, latency_scale, spill_overlap) by least squares on log time; also leave-one-rung-out fits.

    Returns {"all": params, "loro": {rung: params fitted without that rung}, "predicted_loro": per-row
    times predicted for each row by the fit that did not see its rung}."""
    from scipy.optimize import least_squares

    arrs, _ = _arrays_for(gpu, cfgs, registers)
    s = np.asarray(sizes, dtype=np.int64).reshape(-1, 3)
    meas = np.asarray(measured_s, dtype=np.float64)
    rr = np.asarray(rungs_of_rows)
    start = start or TimingParams()

    def params(theta) -> TimingParams:
        return TimingParams(float(np.exp(theta[0])), float(1.0 + np.exp(theta[1])), float(np.exp(theta[2])),
                            float(np.exp(theta[3])))

    def model(theta, idx):
        prm = params(theta)
        sub = tuple(a[idx] for a in arrs)
        return evaluate(gpu, *sub, s[idx, 0], s[idx, 1], s[idx, 2], prm=prm)["time_s"]

    def fit(idx) -> TimingParams:
        x0 = np.array([np.log(start.w0), np.log(start.p - 1.0), np.log(start.latency_scale), np.log(start.spill_overlap)])
        # Weight each rung equally: the register-tiling grid has far more rows than the others.
        rw = np.array([1.0 / np.sqrt(np.sum(rr[idx] == q)) for q in rr[idx]])
        res = least_squares(lambda th: rw * (np.log(model(th, idx)) - np.log(meas[idx])), x0,
                            bounds=([np.log(0.05), np.log(0.05), np.log(0.2), np.log(1.0)],
                                    [np.log(20), np.log(30), np.log(10), np.log(32)]))
        return params(res.x)

    everything = np.arange(len(meas))
    out_all = fit(everything)
    loro = {}
    pred_loro = np.empty_like(meas)
    for q in sorted(set(rr.tolist())):
        train = np.flatnonzero(rr != q)
        test = np.flatnonzero(rr == q)
        prm = fit(train)
        loro[int(q)] = prm
        sub = tuple(a[test] for a in arrs)
        pred_loro[test] = evaluate(gpu, *sub, s[test, 0], s[test, 1], s[test, 2], prm=prm)["time_s"]
    return {"all": out_all, "loro": loro, "predicted_loro_s": pred_loro}
