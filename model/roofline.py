"""The roofline-with-occupancy prediction: a pure function of (GPU spec, kernel config, problem size).

The core is vectorised (:func:`evaluate` works on numpy arrays of configs and sizes at once); the
single-config :func:`predict` wraps it and returns a frozen :class:`Prediction` that names the roof
that binds, with its formula and its numbers. Reports, JSON and plots read that object.

Roofs (each a time in seconds; the prediction is the largest, plus a launch overhead):

* ``fp32``   executed FLOPs on the FP32 lanes, per SM, load-balanced: ``ceil(blocks/SMs) x block FLOPs /
  (lanes x 2 x clock)`` - the partly filled last wave of blocks costs a whole block's time;
* ``dram``   the tile-level global traffic (A read ``ceil(N/BN)`` times, B ``ceil(M/BM)`` times, C written
  once) over the DRAM bandwidth (measured copy bandwidth where the spec has it);
* ``shared`` shared-memory bytes read by the register level (``MNK (1/TM + 1/TN)`` elements) and written by
  the tile loads, over ``SMs x banks x 4 B x clock``.

This is the first, simple model: caches are ignored (the naive kernel's re-reads all go to DRAM) and
latency is assumed hidden. :mod:`model.timing` (when present) refines it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from .errors import ConfigError
from .occupancy import Occupancy, occupancy
from .registry import BYTES_PER_ELEMENT, KernelConfig, geometry, min_registers, validate, validate_size

ROOFS = ("fp32", "dram", "shared")
LAUNCH_OVERHEAD_S = 0.0  # the first model ignores launch overhead


@dataclass(frozen=True)
class Roof:
    """One throughput limit: the work it carries, its rate and the time that takes."""

    name: str
    time_s: float
    work: float        # FLOP for compute roofs, bytes for memory roofs, SM cycles for the timing model's limits
    work_unit: str     # "FLOP", "B" or "cycle"
    rate: float        # work per second
    formula: str

    def describe(self) -> str:
        from .units import fmt_bytes, fmt_rate, fmt_time
        if self.work_unit == "cycle":      # the timing model's limits, in SM cycles at the clock
            return f"{self.name}: {self.work:.4g} SM cycles at {self.rate / 1e9:.3g} GHz = {fmt_time(self.time_s)}  [{self.formula}]"
        w = f"{self.work / 1e9:.3g} GFLOP" if self.work_unit == "FLOP" else fmt_bytes(self.work)
        return f"{self.name}: {w} at {fmt_rate(self.rate, self.work_unit)} = {fmt_time(self.time_s)}  [{self.formula}]"


@dataclass(frozen=True)
class Prediction:
    """What the model predicts for one config at one size on one GPU (SI units)."""

    gpu: str
    config: KernelConfig
    M: int
    N: int
    K: int
    flops: float                    # useful FLOPs, 2 M N K
    time_s: float
    bound: str                      # name of the binding roof
    roofs: tuple[Roof, ...]
    occupancy: Occupancy | None
    blocks: int
    waves: int                      # ceil(blocks / (SMs x blocks per SM))
    intensity_flop_per_byte: dict = field(hash=False, compare=False)   # per level: dram, shared (None: no such level)
    notes: tuple[str, ...] = ()
    time_refill_random_s: float | None = None   # the time if the later blocks fill the freed slots in random order

    @property
    def flop_per_s(self) -> float:
        return self.flops / self.time_s

    @property
    def binding(self) -> Roof:
        return next(r for r in self.roofs if r.name == self.bound)

    def to_json(self) -> dict:
        return {
            "gpu": self.gpu, "config": self.config.to_json(), "label": self.config.label,
            "M": self.M, "N": self.N, "K": self.K, "flops": self.flops, "time_s": self.time_s,
            "flop_per_s": self.flop_per_s, "bound": self.bound,
            "roofs": [{"name": r.name, "time_s": r.time_s, "work": r.work, "work_unit": r.work_unit,
                       "rate": r.rate, "formula": r.formula} for r in self.roofs],
            "occupancy": None if self.occupancy is None else self.occupancy.to_json(),
            "blocks": self.blocks, "waves": self.waves,
            "intensity_flop_per_byte": dict(self.intensity_flop_per_byte), "notes": list(self.notes),
            "time_refill_random_s": self.time_refill_random_s,
        }


# --------------------------------------------------------------------------------------------------
# Vectorised core
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigArrays:
    """Per-config columns the vectorised model needs (one entry per config)."""

    rung: np.ndarray
    BM: np.ndarray
    BN: np.ndarray
    BK: np.ndarray
    TM: np.ndarray
    TN: np.ndarray
    threads: np.ndarray
    smem_bytes: np.ndarray
    registers: np.ndarray   # registers per thread; an estimate where the compiler's figure is unknown
    split_k: np.ndarray | None = None   # K slices (launch-level option; 1 = off): blocks x S, each K/S deep

    @classmethod
    def from_configs(cls, cfgs: Sequence[KernelConfig], registers: Sequence[int | None] | None = None) -> "ConfigArrays":
        geos = [geometry(c) for c in cfgs]
        regs = [min_registers(g) if (registers is None or registers[i] is None) else int(registers[i])
                for i, g in enumerate(geos)]
        col = lambda f: np.array([f(g) for g in geos], dtype=np.int64)  # noqa: E731
        return cls(np.array([c.rung for c in cfgs], dtype=np.int64), col(lambda g: g.BM), col(lambda g: g.BN),
                   col(lambda g: g.BK), col(lambda g: g.TM), col(lambda g: g.TN), col(lambda g: g.threads),
                   col(lambda g: g.smem_bytes), np.array(regs, dtype=np.int64), col(lambda g: g.split_k))


def _ceil_div(a, b):
    return -(-a // b)


def evaluate(gpu, cfg: ConfigArrays, M, N, K) -> dict[str, np.ndarray]:
    """Vectorised model: arrays broadcast over configs and sizes. Returns a dict of arrays (SI units)."""
    from .occupancy import blocks_per_sm_array

    M = np.asarray(M, dtype=np.int64)
    N = np.asarray(N, dtype=np.int64)
    K = np.asarray(K, dtype=np.int64)
    BM, BN, BK, TM, TN = cfg.BM, cfg.BN, cfg.BK, cfg.TM, cfg.TN
    gm, gn, gk = _ceil_div(M, BM), _ceil_div(N, BN), _ceil_div(K, BK)
    S = np.ones_like(BM) if cfg.split_k is None else np.maximum(cfg.split_k, 1)
    gk_slice = _ceil_div(gk, S)                    # K tiles of one slice (split-K: S blocks per output tile)
    blocks = gm * gn * _ceil_div(gk, np.maximum(gk_slice, 1))
    bps = blocks_per_sm_array(gpu, cfg.threads, cfg.registers, cfg.smem_bytes)
    sms = gpu.sm_count
    waves = _ceil_div(blocks, sms * np.maximum(bps, 1))
    flops = 2.0 * M * N * K
    block_flops = 2.0 * BM * BN * gk_slice * BK    # padded tiles are computed in full
    sm_rate = 2.0 * gpu.fp32_lanes_per_sm * gpu.boost_clock_hz
    t_fp32 = _ceil_div(blocks, sms) * block_flops / sm_rate
    # Global (tile-level) traffic: A is read once per block column, B once per block row, C written once.
    # The naive kernel reuses nothing: every thread reads its row of A and column of B (tile 1 x 1).
    naive = cfg.rung == 1
    rn = np.where(naive, N, gn)
    rm = np.where(naive, M, gm)
    dram_bytes = BYTES_PER_ELEMENT * (M * K * rn + K * N * rm + M * N).astype(np.float64)
    bw = gpu.copy_bandwidth_bytes_per_s or gpu.dram_bandwidth_bytes_per_s
    t_dram = dram_bytes / bw
    uses_smem = cfg.rung >= 2
    smem_read = BYTES_PER_ELEMENT * (gm * BM) * (gn * BN) * (gk * BK) * (1.0 / TM + 1.0 / TN)
    smem_write = BYTES_PER_ELEMENT * blocks * gk_slice * (BM * BK + BK * BN)
    smem_bytes = np.where(uses_smem, smem_read + smem_write, 0.0)
    smem_rate = sms * gpu.shared_banks * gpu.shared_bank_bytes * gpu.boost_clock_hz
    t_shared = smem_bytes / smem_rate
    t = np.maximum(np.maximum(t_fp32, t_dram), t_shared) + LAUNCH_OVERHEAD_S
    stack = np.stack(np.broadcast_arrays(t_fp32, t_dram, t_shared))
    bound = np.argmax(stack, axis=0)
    return {"time_s": t, "flops": flops, "flop_per_s": flops / t, "bound": bound, "blocks": blocks,
            "blocks_per_sm": bps, "waves": waves, "t_fp32": t_fp32, "t_dram": t_dram, "t_shared": t_shared,
            "dram_bytes": dram_bytes, "smem_bytes": smem_bytes, "block_flops": block_flops,
            "fp32_rate": sm_rate * sms, "dram_rate": bw, "smem_rate": smem_rate}


# --------------------------------------------------------------------------------------------------
# Single-config wrapper
# --------------------------------------------------------------------------------------------------


def predict(gpu, cfg: KernelConfig, M: int, N: int, K: int, registers: int | None = None) -> Prediction:
    """Predict time and FLOP/s of ``cfg`` at M x N x K on ``gpu``.

    Raises :class:`ConfigError` for an invalid config or size (before any work)."""
    M, N, K = validate_size(M, N, K)
    if cfg.rung == 0:
        raise ConfigError("the cuBLAS reference (rung 00) is measured, not modelled", limit="rung")
    validate(cfg, gpu)
    g = geometry(cfg)
    regs = registers if registers is not None else min_registers(g)
    occ = occupancy(gpu, g.threads, regs, g.smem_bytes)
    arr = ConfigArrays.from_configs([cfg], [regs])
    r = {k: (v.item() if isinstance(v, np.ndarray) and v.size == 1 else v) for k, v in evaluate(gpu, arr, M, N, K).items()}
    sms = gpu.sm_count
    roofs = (
        Roof("fp32", r["t_fp32"], r["block_flops"] * r["blocks"], "FLOP", r["fp32_rate"],
             f"ceil({r['blocks']} blocks / {sms} SMs) x {r['block_flops']:.4g} FLOP per block / "
             f"({gpu.fp32_lanes_per_sm} lanes x 2 FLOP x {gpu.boost_clock_hz / 1e9:.3g} GHz)"),
        Roof("dram", r["t_dram"], r["dram_bytes"], "B", r["dram_rate"],
             f"4 B x (M K ceil(N/BN) + K N ceil(M/BM) + M N) / bandwidth, BM={g.BM}, BN={g.BN}"),
        Roof("shared", r["t_shared"], r["smem_bytes"], "B", r["smem_rate"],
             f"4 B x (M N K (1/TM + 1/TN) read + tile stores) / ({sms} SMs x {gpu.shared_banks} banks x "
             f"{gpu.shared_bank_bytes} B x clock), TM={g.TM}, TN={g.TN}"),
    )
    notes = []
    if registers is None:
        notes.append(f"registers per thread not given: occupancy uses the floor estimate {regs} "
                     "(TM*TN + TM + TN + 8)")
    if cfg.rung == 1:
        notes.append("naive kernel: every element read is counted as DRAM traffic (caches ignored)")
    dram_i = r["flops"] / r["dram_bytes"]
    smem_i = r["flops"] / r["smem_bytes"] if r["smem_bytes"] else None  # no shared-memory level
    return Prediction(gpu=gpu.name, config=cfg, M=M, N=N, K=K, flops=r["flops"], time_s=r["time_s"],
                      bound=ROOFS[int(r["bound"])], roofs=roofs, occupancy=occ, blocks=int(r["blocks"]),
                      waves=int(r["waves"]), intensity_flop_per_byte={"dram": dram_i, "shared": smem_i},
                      notes=tuple(notes))


def predict_many(gpu, cfgs: Sequence[KernelConfig], sizes: Iterable[tuple[int, int, int]],
                 registers: Sequence[int | None] | None = None) -> dict[str, np.ndarray]:
    """Vectorised predictions for every (config, size) pair: arrays of shape (len(cfgs), len(sizes))."""
    sizes = np.asarray(list(sizes), dtype=np.int64).reshape(-1, 3)
    arr = ConfigArrays.from_configs(cfgs, registers)
    col = lambda a: a[:, None]  # noqa: E731
    arr2 = ConfigArrays(*(col(getattr(arr, f)) for f in arr.__dataclass_fields__))
    return evaluate(gpu, arr2, sizes[None, :, 0], sizes[None, :, 1], sizes[None, :, 2])


def plain_roofline(gpu, cfg: KernelConfig, M: int, N: int, K: int) -> float:
    """The seed's plain roofline in FLOP/s: ``min(FP32 peak, DRAM bandwidth x intensity)``, with the
    seed's tile-level intensity (naive: 2K/(2K+1) FLOP per element) converted to FLOP per byte."""
    g = geometry(cfg)
    bm, bn = (1, 1) if cfg.rung == 1 else (g.BM, g.BN)
    flops = 2.0 * M * N * K
    elements = M * N * K * (1.0 / bm + 1.0 / bn) + M * N
    intensity = flops / (BYTES_PER_ELEMENT * elements)
    return min(gpu.peak_fp32_flop_per_s, gpu.dram_bandwidth_bytes_per_s * intensity)
