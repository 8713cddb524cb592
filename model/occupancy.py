"""Blocks per SM, following CUDA's own occupancy calculator (``cuda_occupancy.h``).

``cudaOccMaxActiveBlocksPerMultiprocessor`` is the minimum of four limits (reference §A3):

1. warps (threads): ``floor(max_warps_per_sm / ceil(threads / 32))``;
2. resident blocks per SM;
3. registers: ``regs_per_warp = roundup(regs * 32, 256)``; each of the 4 sub-partitions holds
   ``floor((registers_per_sm / 4) / regs_per_warp)`` warps; limit ``floor(4 * that / warps_per_block)``;
4. shared memory: ``smem_per_block = roundup(smem + 1 KiB reserved, 128)``; limit
   ``floor(carveout / smem_per_block)``, the carveout being the smallest supported step that holds one
   block at or above the preference (default: the SM's maximum).

Each function is pure: a :class:`~model.spec.GPUSpec` and a block's resources in, a frozen
:class:`Occupancy` out.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .errors import ConfigError

LIMIT_ORDER = ("threads", "blocks", "registers", "shared_memory")


def _roundup(x: int, unit: int) -> int:
    return -(-x // unit) * unit


@dataclass(frozen=True)
class Occupancy:
    """Occupancy of one block shape on one GPU.

    ``limits`` maps each limit name to the blocks per SM it allows (``None`` when the resource was
    not given). ``limiter`` is the first binding limit in the order threads, blocks, registers,
    shared_memory; ``limiters`` lists all that bind.
    """

    gpu: str
    threads_per_block: int
    registers_per_thread: int | None
    smem_bytes_per_block: int
    blocks_per_sm: int
    limiter: str
    limiters: tuple[str, ...]
    limits: dict = field(hash=False, compare=False)
    warps_per_block: int
    active_warps: int
    active_threads: int
    max_threads_per_sm: int
    regs_per_warp: int | None
    smem_alloc_bytes_per_block: int | None
    smem_carveout_bytes: int | None

    @property
    def idle_threads(self) -> int:
        """Thread slots of the SM left empty: ``max_threads_per_sm - active_threads``."""
        return self.max_threads_per_sm - self.active_threads

    @property
    def fraction(self) -> float:
        """Theoretical occupancy: active warps over the SM's maximum warps."""
        return self.active_warps / (self.max_threads_per_sm // 32)

    def explain(self) -> str:
        lines = [f"{self.gpu}: block of {self.threads_per_block} threads ({self.warps_per_block} warps)"
                 + (f", {self.registers_per_thread} registers/thread" if self.registers_per_thread else "")
                 + (f", {self.smem_bytes_per_block} B shared memory" if self.smem_bytes_per_block else "")]
        for name in LIMIT_ORDER:
            v = self.limits.get(name)
            mark = "  <- binds" if name in self.limiters else ""
            lines.append(f"  {name:14s}: {'-' if v is None else v} blocks/SM{mark}")
        lines.append(f"  => {self.blocks_per_sm} blocks/SM, {self.active_threads} of {self.max_threads_per_sm} "
                     f"thread slots active, {self.idle_threads} idle ({100 * self.fraction:.1f} % occupancy)")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {"gpu": self.gpu, "threads_per_block": self.threads_per_block,
                "registers_per_thread": self.registers_per_thread,
                "smem_bytes_per_block": self.smem_bytes_per_block, "blocks_per_sm": self.blocks_per_sm,
                "limiter": self.limiter, "limiters": list(self.limiters), "limits": dict(self.limits),
                "active_warps": self.active_warps, "active_threads": self.active_threads,
                "idle_threads": self.idle_threads, "occupancy": self.fraction}


def carveout_bytes(gpu, smem_alloc_bytes: int, preference_bytes: int | None = None) -> int:
    """The shared-memory carveout (bytes per SM) the driver picks for a block needing ``smem_alloc_bytes``."""
    pref = gpu.shared_bytes_per_sm if preference_bytes is None else preference_bytes
    need = max(pref, smem_alloc_bytes)
    for step in gpu.shared_carveout_steps_bytes:
        if step >= need:
            return step
    return gpu.shared_bytes_per_sm


def occupancy(gpu, threads: int, registers: int | None = None, smem_bytes: int = 0,
              carveout_preference_bytes: int | None = None) -> Occupancy:
    """Blocks per SM for a block of ``threads`` threads using ``registers`` per thread and ``smem_bytes``
    (static + dynamic) of shared memory. Raises :class:`ConfigError` if the block cannot launch at all."""
    if isinstance(threads, bool) or int(threads) != threads or threads < 1:
        raise ConfigError(f"threads per block must be a positive integer, got {threads!r}", limit="threads_per_block")
    if threads > gpu.max_threads_per_block:
        raise ConfigError(f"{threads} threads per block exceed the limit of {gpu.max_threads_per_block} on {gpu.name}",
                          limit="threads_per_block")
    if smem_bytes < 0:
        raise ConfigError(f"shared memory must be >= 0 bytes, got {smem_bytes}", limit="shared_memory_per_block")
    warps = math.ceil(threads / gpu.warp_size)
    limits: dict[str, int | None] = {
        "threads": gpu.max_warps_per_sm // warps,
        "blocks": gpu.max_blocks_per_sm,
        "registers": None,
        "shared_memory": None,
    }
    regs_per_warp = None
    if registers is not None:
        if registers < 1 or registers > gpu.max_registers_per_thread:
            raise ConfigError(f"{registers} registers per thread: the limit on {gpu.name} is "
                              f"{gpu.max_registers_per_thread}", limit="registers_per_thread")
        regs_per_warp = _roundup(registers * gpu.warp_size, gpu.register_alloc_unit)
        # Hardware check: warps are allocated in groups of warp_alloc_granularity (4).
        if regs_per_warp * _roundup(warps, gpu.warp_alloc_granularity) > gpu.max_registers_per_block:
            raise ConfigError(
                f"{threads} threads x {registers} registers ({regs_per_warp} per warp, "
                f"{_roundup(warps, gpu.warp_alloc_granularity)} warps allocated) exceed "
                f"{gpu.max_registers_per_block} registers per block on {gpu.name}", limit="registers_per_block")
        per_sub = (gpu.registers_per_sm // gpu.sub_partitions) // regs_per_warp
        limits["registers"] = (per_sub * gpu.sub_partitions) // warps
    smem_alloc = carve = None
    if smem_bytes or carveout_preference_bytes is not None:
        # The 1 KiB per-block reservation counts even for a block with no shared memory of its own.
        smem_alloc = _roundup(smem_bytes + gpu.shared_reserved_per_block, gpu.shared_alloc_unit)
        if smem_alloc > gpu.shared_bytes_per_block_optin + gpu.shared_reserved_per_block:
            raise ConfigError(f"{smem_bytes} B of shared memory per block exceed the opt-in limit of "
                              f"{gpu.shared_bytes_per_block_optin} B on {gpu.name}", limit="shared_memory_per_block")
        carve = carveout_bytes(gpu, smem_alloc, carveout_preference_bytes)
        limits["shared_memory"] = carve // smem_alloc
    given = {k: v for k, v in limits.items() if v is not None}
    blocks = min(given.values())
    limiters = tuple(k for k in LIMIT_ORDER if given.get(k) == blocks)
    return Occupancy(gpu=gpu.name, threads_per_block=int(threads), registers_per_thread=registers,
                     smem_bytes_per_block=int(smem_bytes), blocks_per_sm=blocks, limiter=limiters[0],
                     limiters=limiters, limits=limits, warps_per_block=warps, active_warps=blocks * warps,
                     active_threads=blocks * int(threads), max_threads_per_sm=gpu.max_threads_per_sm,
                     regs_per_warp=regs_per_warp, smem_alloc_bytes_per_block=smem_alloc, smem_carveout_bytes=carve)


def blocks_per_sm_array(gpu, threads, registers, smem_bytes) -> np.ndarray:
    """Vectorised :func:`occupancy` (blocks per SM only) over arrays; invalid blocks give 0.

    ``registers`` may hold 0 for 'unknown' (no register limit)."""
    threads = np.asarray(threads, dtype=np.int64)
    registers = np.asarray(registers, dtype=np.int64)
    smem_bytes = np.asarray(smem_bytes, dtype=np.int64)
    warps = -(-threads // gpu.warp_size)
    lim = np.minimum(gpu.max_warps_per_sm // np.maximum(warps, 1), gpu.max_blocks_per_sm)
    rpw = -(-(registers * gpu.warp_size) // gpu.register_alloc_unit) * gpu.register_alloc_unit
    per_sub = (gpu.registers_per_sm // gpu.sub_partitions) // np.maximum(rpw, 1)
    reg_lim = np.where(registers > 0, (per_sub * gpu.sub_partitions) // np.maximum(warps, 1), np.iinfo(np.int64).max)
    alloc = -(-(smem_bytes + gpu.shared_reserved_per_block) // gpu.shared_alloc_unit) * gpu.shared_alloc_unit
    steps = np.asarray(gpu.shared_carveout_steps_bytes, dtype=np.int64)
    need = np.maximum(gpu.shared_bytes_per_sm, alloc)
    idx = np.searchsorted(steps, need)
    carve = np.where(idx < len(steps), steps[np.minimum(idx, len(steps) - 1)], gpu.shared_bytes_per_sm)
    smem_lim = np.where(smem_bytes > 0, carve // alloc, np.iinfo(np.int64).max)
    out = np.minimum(np.minimum(lim, reg_lim), smem_lim)
    bad = (threads < 1) | (threads > gpu.max_threads_per_block) | (registers > gpu.max_registers_per_thread) \
        | ((registers > 0) & (rpw * (-(-warps // gpu.warp_alloc_granularity) * gpu.warp_alloc_granularity)
                              > gpu.max_registers_per_block)) \
        | ((smem_bytes > 0) & (alloc > gpu.shared_bytes_per_block_optin + gpu.shared_reserved_per_block))
    return np.where(bad, 0, out)


# --------------------------------------------------------------------------------------------------
# Symbolic derivation of the per-SM thread limit and the seed's block-size argument
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ThreadLimitDerivation:
    """``threads/SM = sms_per_sm(1) x schedulers x 1 x warps per scheduler x 32`` and what a square block
    of each side length gets."""

    gpu: str
    product: "sympy.Expr"      # unevaluated product, e.g. 1*4*1*12*32
    threads_per_sm: int
    blocks: tuple[tuple[int, int, int, int], ...]  # (side, threads, blocks/SM, idle thread slots)

    def text(self) -> str:
        import sympy as sp  # lazy: SymPy only where a derivation is printed
        lines = [f"{self.gpu}: threads per SM = {sp.sstr(self.product)} = {self.threads_per_sm}"
                 "  (SM x schedulers x instruction-buffer groups x warps per scheduler x threads per warp)"]
        for side, t, b, idle in self.blocks:
            lines.append(f"  {side}x{side} block = {t} threads: {self.threads_per_sm}/{t} = "
                         f"{sp.Rational(self.threads_per_sm, t)} -> {b} block(s) per SM, {idle} thread slots idle")
        return "\n".join(lines)


def derive_thread_limit(gpu, sides=(16, 32)) -> ThreadLimitDerivation:
    """The seed's derivation, generalised: 1 x schedulers x 1 x (warps/scheduler) x 32 threads per SM."""
    import sympy as sp  # lazy: SymPy only where a derivation is printed
    sched = gpu.sub_partitions
    wps = gpu.max_warps_per_sm // sched
    product = sp.Mul(1, sched, 1, wps, gpu.warp_size, evaluate=False)
    total = int(sp.simplify(product))
    blocks = []
    for s in sides:
        t = s * s
        occ = occupancy(gpu, t)
        blocks.append((s, t, occ.blocks_per_sm, occ.idle_threads))
    return ThreadLimitDerivation(gpu.name, product, total, tuple(blocks))
