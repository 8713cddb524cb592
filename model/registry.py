"""The one registry of the tiling ladder.

Every rung has a stable number and name shared by its ``gpu/kernels/NN_*.cu`` file, the launcher,
the model, the sweeps and the plot labels. Its parameters, validity rules and launch geometry are
written here once; nothing else re-derives them.

Matrices are row-major FP32: A is M x K, B is K x N, C = A B is M x N.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping

import numpy as np

from .errors import ConfigError

WARP_SIZE = 32
BYTES_PER_ELEMENT = 4  # FP32


@dataclass(frozen=True)
class Rung:
    """One rung of the ladder.

    ``params`` are the kernel's template parameters in template order; ``classic`` are the configs a
    user meets first (the seed's), used by default tables and the ladder sweep.
    """

    number: int
    slug: str
    title: str
    params: tuple[str, ...]
    classic: tuple[Mapping[str, int], ...]
    color: str
    description: str

    @property
    def file(self) -> str | None:
        """Kernel source file name under ``gpu/kernels`` (None for the cuBLAS reference)."""
        return None if self.number == 0 else f"{self.number:02d}_{self.slug}.cu"

    @property
    def kernel(self) -> str | None:
        """Name of the templated ``__global__`` function in :attr:`file`."""
        return None if self.number == 0 else f"sgemm_{self.number:02d}_{KERNEL_SUFFIX[self.number]}"

    @property
    def label(self) -> str:
        return f"{self.number:02d} {self.title}"


KERNEL_SUFFIX = {1: "naive", 2: "smem", 3: "reg1d", 4: "reg2d", 5: "float4", 6: "dbuf", 7: "warptile", 8: "async",
                 9: "bank", 10: "lean", 11: "steady", 12: "vred"}

_REG = ("BM", "BN", "BK", "TM", "TN")
# Warp tiling (rungs 07, 08): block tile, warp tile, WNITER sub-tiles along N per warp, the TM x TN step of a
# thread, and the two launch-level options: SWZ = block-order group size (1 = row-major order), SPLITK = number
# of K slices (1 = off).
_WARP = ("BM", "BN", "BK", "WM", "WN", "WNITER", "TM", "TN", "SWZ", "SPLITK")
_WARP_CLASSIC = {"BM": 128, "BN": 128, "BK": 16, "WM": 64, "WN": 32, "WNITER": 2, "TM": 4, "TN": 4,
                 "SWZ": 1, "SPLITK": 1}
# siboehm's kernel 10 (published-a6000.md): 128 threads, a warp computes 64 x 64 in 1 x 4 steps of 8 x 4
_SIBOEHM_10 = {"BM": 128, "BN": 128, "BK": 16, "WM": 64, "WN": 64, "WNITER": 4, "TM": 8, "TN": 4,
               "SWZ": 1, "SPLITK": 1}
# rung 09's classic: 256 threads, a thread computes 16 x 8 (2 x 8 x 2 x 4), the shape whose FFMAs the bank-aware
# layout serves best (tools/bank_conflicts.py: 0.10 extra register reads per FFMA, against 0.97 in rung 08)
_BANK_CLASSIC = {"BM": 128, "BN": 256, "BK": 8, "WM": 64, "WN": 64, "WNITER": 2, "TM": 8, "TN": 4,
                 "SWZ": 1, "SPLITK": 1}
# rung 10's classic: rung 08's fastest geometry on the H200 (bank sweep, 2026-11-30: 45.8 TFLOP/s at 8192^3)
_LEAN_CLASSIC = {"BM": 128, "BN": 256, "BK": 8, "WM": 64, "WN": 64, "WNITER": 2, "TM": 4, "TN": 4,
                 "SWZ": 1, "SPLITK": 1}
# rung 11's classic: its fastest config on the H200 at 4096^3, 8192^3, 4096x16384x1024 and 16384x2048x2048 (steady
# sweep, 2026-12-01: 49.9 TFLOP/s at 4096^3, 97.2 % of cuBLAS in the same run)
_STEADY_CLASSIC = {"BM": 128, "BN": 128, "BK": 16, "WM": 64, "WN": 64, "WNITER": 2, "TM": 8, "TN": 4,
                   "SWZ": 1, "SPLITK": 1}
# rung 12's classic: rung 11's fastest config at 512 x 512 x 16384 (split-K 16: reduce and reduce2 sweeps, 2026-12-01)
_VRED_CLASSIC = {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 64, "WNITER": 2, "TM": 4, "TN": 4,
                 "SWZ": 1, "SPLITK": 16, "STAGES": 3, "SPREAD": 8}
ASYNC_MIN_CC = 8   # cp.async: compute capability 8.0 (Ampere) and newer

RUNGS: dict[int, Rung] = {
    r.number: r
    for r in (
        Rung(0, "cublas", "cuBLAS", (), ({},), "#000000",
             "cuBLAS SGEMM through cupy.matmul on float32 (TF32 off): the reference."),
        Rung(1, "naive", "naive", ("BX", "BY", "COALESCED"),
             ({"BX": 32, "BY": 32, "COALESCED": 1}, {"BX": 16, "BY": 16, "COALESCED": 1},
              {"BX": 32, "BY": 32, "COALESCED": 0}),
             "#d62728",
             "One thread per C element, a plain loop over k. COALESCED=1 maps threadIdx.x to the "
             "column (a warp reads one row of B contiguously); COALESCED=0 maps it to the row."),
        Rung(2, "smem_tiling", "shared-memory tiling", ("BM", "BN", "BK"),
             ({"BM": 32, "BN": 32, "BK": 32}, {"BM": 16, "BN": 16, "BK": 16}, {"BM": 8, "BN": 8, "BK": 8}),
             "#ff7f0e",
             "BM x BN output tile per block, one output per thread; A and B tiles staged in shared "
             "memory, stepping BK along K."),
        Rung(3, "reg1d", "1D register tiling", ("BM", "BN", "BK", "TM"),
             ({"BM": 64, "BN": 64, "BK": 8, "TM": 8},),
             "#bcbd22",
             "Each thread computes TM outputs of one column, reusing one B value TM times."),
        Rung(4, "reg2d", "2D register tiling", _REG,
             ({"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8},),
             "#2ca02c",
             "Each thread computes a TM x TN micro-tile as outer products (the seed's kernel, fixed)."),
        Rung(5, "float4", "float4 vectorised", _REG,
             ({"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8},),
             "#1f77b4",
             "Rung 04 with 128-bit global loads, A transposed in shared memory and 128-bit shared loads."),
        Rung(6, "double_buffer", "double buffering", _REG,
             ({"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8},),
             "#9467bd",
             "Rung 05 with two shared-memory stages: the next tile is loaded through registers while "
             "the current one is computed."),
        Rung(7, "warptile", "warp tiling", _WARP,
             (_WARP_CLASSIC, _SIBOEHM_10),
             "#8c564b",
             "Rung 06 with the threads grouped by warp: each warp computes a WM x WN sub-tile in "
             "WMITER x WNITER steps of TM x TN per thread (compact warp footprint, conflict-free LDS.128 "
             "and tile stores, operand registers double-buffered); SWZ groups the block order for L2 reuse, "
             "SPLITK cuts K into slices summed with atomics."),
        Rung(8, "async_pipeline", "cp.async pipeline", _WARP + ("STAGES",),
             (dict(_WARP_CLASSIC, STAGES=3),),
             "#e377c2",
             "Rung 07's compute fed by cp.async (sm_80+): global memory copied straight into STAGES "
             "shared-memory buffers, STAGES-1 tiles in flight, no register staging."),
        Rung(9, "bank_aware", "bank-aware operands", _WARP + ("STAGES",),
             (dict(_BANK_CLASSIC, STAGES=3),),
             "#17becf",
             "Rung 08 with the FFMA operands laid out for the register file's two banks: B's tile stored "
             "pair-swapped in shared memory (4-byte cp.async), so that B and the accumulator of every FFMA "
             "sit in different banks, and the FFMAs of a k step in serpentine order for the reuse cache."),
        Rung(10, "lean_pipeline", "branch-free pipeline", _WARP + ("STAGES",),
             (dict(_LEAN_CLASSIC, STAGES=3),),
             "#bcbd22",
             "Rung 08 with a branch-free K loop: each thread's copies planned once per block (source pointers, "
             "shared offsets, bounds folded into one compare per copy), a tile past the slice zero-filled "
             "instead of skipped, B's vector path chosen once per block, so the compiler can interleave the "
             "copies with the FFMAs."),
        Rung(11, "steady_loop", "predicate-free steady loop", _WARP + ("STAGES", "SPREAD"),
             (dict(_STEADY_CLASSIC, STAGES=3, SPREAD=16),),
             "#7f7f7f",
             "Rung 10 whose copies need no bound in the steady loop: rows of A beyond M and columns of B beyond N "
             "are read clamped into the matrix (their products only reach C outside it, never stored), so only K "
             "needs a check, and only in the last STAGES-1 tiles; shared destinations are immediates. A copy is "
             "an address add and the LDGSTS. SPREAD: the copies of the next tile spread over the first SPREAD "
             "of the BK steps (1: one group after the barrier; BK: rung 10's schedule)."),
        Rung(12, "vector_reduce", "vector reductions", _WARP + ("STAGES", "SPREAD"),
             (_VRED_CLASSIC,),
             "#393b79",
             "Rung 11 whose split-K slices add their partial tiles into C with 16-byte vector reductions "
             "(atomicAdd of a float4, sm_90+): a quarter of the L2's reduction requests. Split-K only (SPLITK >= 2)."),
    )
}


def rung(number_or_name: int | str) -> Rung:
    """Look a rung up by number (``4``, ``"04"``) or name (``"reg2d"``, ``"04_reg2d"``)."""
    if isinstance(number_or_name, int):
        if number_or_name in RUNGS:
            return RUNGS[number_or_name]
    else:
        s = number_or_name.strip().lower()
        for r in RUNGS.values():
            names = {r.slug, f"{r.number:02d}", str(r.number), f"{r.number:02d}_{r.slug}",
                     KERNEL_SUFFIX.get(r.number, r.slug), f"{r.number:02d}_{KERNEL_SUFFIX.get(r.number, r.slug)}"}
            if s in names:
                return r
    known = ", ".join(f"{r.number:02d}_{r.slug}" for r in RUNGS.values())
    raise ConfigError(f"unknown rung {number_or_name!r}; known rungs: {known}", limit="rung")


@dataclass(frozen=True)
class KernelConfig:
    """A rung with values for all of its template parameters (validated on construction)."""

    rung: int
    params: tuple[tuple[str, int], ...] = field(default=())

    def __post_init__(self) -> None:
        r = rung(self.rung)
        names = tuple(n for n, _ in self.params)
        if names != r.params:
            missing = [p for p in r.params if p not in names]
            extra = [p for p in names if p not in r.params]
            raise ConfigError(
                f"rung {r.label} takes parameters {', '.join(r.params) or '(none)'}"
                + (f"; missing {', '.join(missing)}" if missing else "")
                + (f"; unknown {', '.join(extra)}" if extra else ""),
                limit="parameters")
        for n, v in self.params:
            if isinstance(v, bool) or not isinstance(v, int):
                raise ConfigError(f"{r.label}: parameter {n} must be an integer, got {v!r}", limit="parameters")

    @classmethod
    def make(cls, rung_id: int | str, **params: int) -> "KernelConfig":
        r = rung(rung_id)
        missing = [p for p in r.params if p not in params]
        extra = [p for p in params if p not in r.params]
        if missing or extra:
            raise ConfigError(
                f"rung {r.label} takes parameters {', '.join(r.params) or '(none)'}"
                + (f"; missing {', '.join(missing)}" if missing else "")
                + (f"; unknown {', '.join(extra)}" if extra else ""),
                limit="parameters")
        return cls(r.number, tuple((p, params[p]) for p in r.params))  # __post_init__ checks the types

    @classmethod
    def parse(cls, text: str) -> "KernelConfig":
        """Parse ``NAME[:KEY=VAL,...]``, e.g. ``reg2d:BM=128,BN=128,BK=8,TM=8,TN=8``.

        Missing parameters take the rung's first classic config's values.
        """
        name, _, rest = text.partition(":")
        r = rung(name)
        values = dict(r.classic[0])
        for item in filter(None, (s.strip() for s in rest.split(","))):
            key, eq, val = item.partition("=")
            key = key.strip().upper()
            if not eq:
                raise ConfigError(f"config {text!r}: expected KEY=VALUE, got {item!r}", limit="parameters")
            try:
                values[key] = int(val)
            except ValueError:
                raise ConfigError(f"config {text!r}: {key} must be an integer, got {val!r}",
                                  limit="parameters") from None
        return cls.make(r.number, **values)

    @property
    def p(self) -> dict[str, int]:
        return dict(self.params)

    @property
    def info(self) -> Rung:
        return RUNGS[self.rung]

    @property
    def label(self) -> str:
        """Short human label, e.g. ``04 reg2d 128x128x8 8x8``."""
        g = geometry(self)
        r = self.info
        if r.number == 0:
            return "00 cuBLAS"
        if r.number == 1:
            return f"01 naive {g.block[0]}x{g.block[1]}" + ("" if self.p["COALESCED"] else " uncoalesced")
        if r.number == 2:
            return f"02 smem {g.BM}x{g.BN}x{g.BK}"
        if r.number == 3:
            return f"03 reg1d {g.BM}x{g.BN}x{g.BK} TM={g.TM}"
        if r.number in WARP_TILED:
            p = self.p
            wi, wj = g.warp_iters
            text = (f"{r.number:02d} {KERNEL_SUFFIX[r.number]} {g.BM}x{g.BN}x{g.BK} w{p['WM']}x{p['WN']} "
                    f"{wi}x{p['TM']}x{wj}x{p['TN']}")
            if "STAGES" in p:
                text += f" s{p['STAGES']}"
            if "SPREAD" in p:
                text += f" c{p['SPREAD']}"
            if p["SWZ"] > 1:
                text += f" swz{p['SWZ']}"
            if p["SPLITK"] > 1:
                text += f" splitk{p['SPLITK']}"
            return text
        return f"{r.number:02d} {KERNEL_SUFFIX[r.number]} {g.BM}x{g.BN}x{g.BK} {g.TM}x{g.TN}"

    @property
    def key(self) -> str:
        """Stable text key, e.g. ``04:BM=128,BN=128,BK=8,TM=8,TN=8`` (used to join data and model)."""
        return f"{self.rung:02d}:" + ",".join(f"{n}={v}" for n, v in self.params)

    @property
    def name_expression(self) -> str | None:
        """The C++ template instantiation CuPy's ``name_expressions`` needs."""
        k = self.info.kernel
        return None if k is None else f"{k}<{','.join(str(v) for _, v in self.params)}>"

    def to_json(self) -> dict:
        return {"rung": self.rung, "name": self.info.slug, "params": self.p}

    @classmethod
    def from_json(cls, d: Mapping) -> "KernelConfig":
        return cls.make(int(d["rung"]), **dict(d.get("params", {})))


@dataclass(frozen=True)
class Geometry:
    """Everything that follows from a config alone: tile sizes, threads, shared memory.

    For the naive rung the 'tile' is the block's output tile with no reuse (BK = 1, one output per
    thread); for rung 02 TM = TN = 1; for rung 03 TN = 1. For the warp-tiled rungs 07/08, TM x TN is the
    thread's whole micro-tile (WMITER*TM x WNITER*TN, what sets register reuse); ``thread_step`` is the
    TM x TN of one step, ``warp_tile`` WM x WN and ``warp_iters`` WMITER x WNITER.

    Launch-level options (read generically by the model): ``swizzle_group`` (blocks are dispatched in
    groups of that many block rows, walked column by column; 1 = row-major order, see
    :func:`launch_order`) and ``split_k`` (K cut into that many slices, ``grid[2]``; the slices add
    their partial sums into C with atomics, C zeroed before the launch: see :func:`k_slices`).
    ``async_copy``: tiles reach shared memory by cp.async (no register staging); ``stages``: shared
    buffers; ``a_row_pad``: floats of padding per row of the transposed A tile in shared memory;
    ``b_pair_swap``: B's tile is copied element by element (4-byte cp.async) into pair-swapped positions
    (column c at c ^ 1), the register-bank-aware layout of rung 09; ``b_element_fallback``: off the vector path
    (N % 4 != 0), B is copied element by element with a warp on 32 consecutive floats (rung 10), not as the
    four floats of each thread's float4 (rung 08); ``clamped_copies``: rows of A beyond M and columns of B
    beyond N are copied from the matrix's last row (column group) instead of zero-filled (rung 11);
    ``vector_reduction``: split-K slices add each float4 of C (on its vector path) with one 16-byte reduction
    (rung 12), not four scalar atomics.
    """

    BM: int
    BN: int
    BK: int
    TM: int
    TN: int
    threads: int
    block: tuple[int, int, int]
    static_smem_bytes: int
    dynamic_smem_bytes: int
    stages: int
    uses_shared: bool
    warp_tile: tuple[int, int] | None = None
    warp_iters: tuple[int, int] = (1, 1)
    thread_step: tuple[int, int] | None = None
    swizzle_group: int = 1
    split_k: int = 1
    async_copy: bool = False
    a_row_pad: int = 0
    b_pair_swap: bool = False
    b_element_fallback: bool = False
    clamped_copies: bool = False
    vector_reduction: bool = False

    @property
    def smem_bytes(self) -> int:
        return self.static_smem_bytes + self.dynamic_smem_bytes

    @property
    def outputs_per_thread(self) -> int:
        return self.TM * self.TN


def geometry(cfg: KernelConfig) -> Geometry:
    """Tile sizes, block shape and shared memory of ``cfg`` (no validity check)."""
    p = cfg.p
    r = cfg.rung
    if r == 0:
        return Geometry(1, 1, 1, 1, 1, 0, (0, 0, 0), 0, 0, 0, False)
    if r == 1:
        bx, by = p["BX"], p["BY"]
        bm, bn = (by, bx) if p["COALESCED"] else (bx, by)
        return Geometry(bm, bn, 1, 1, 1, bx * by, (bx, by, 1), 0, 0, 0, False)
    if r == 2:
        bm, bn, bk = p["BM"], p["BN"], p["BK"]
        return Geometry(bm, bn, bk, 1, 1, bm * bn, (bn, bm, 1),
                        (bm * bk + bk * bn) * BYTES_PER_ELEMENT, 0, 1, True)
    if r in WARP_TILED:
        return _warp_geometry(cfg)
    bm, bn, bk, tm = p["BM"], p["BN"], p["BK"], p["TM"]
    tn = p.get("TN", 1)
    stages = 2 if r == 6 else 1
    threads = (bm * bn) // (tm * tn) if tm * tn else 0
    return Geometry(bm, bn, bk, tm, tn, threads, (threads, 1, 1), 0,
                    stages * (bm * bk + bk * bn) * BYTES_PER_ELEMENT, stages, True)


WARP_TILED = (7, 8, 9, 10, 11, 12)
ASYNC_RUNGS = (8, 9, 10, 11, 12)     # tiles copied by cp.async
CLAMPED_COPIES = (11, 12)     # rows/columns beyond the matrix copied clamped into it, not zero-filled
VECTOR_REDUCTION = (12,)      # split-K slices add float4s of C with one 16-byte reduction (sm_90+)
VECTOR_REDUCTION_MIN_CC = 9   # atomicAdd of a float4 in global memory: compute capability 9.0 and newer
PAIR_SWAPPED_B = (9,)         # B stored pair-swapped in shared memory by 4-byte copies (rung 09)
ELEMENT_FALLBACK_B = (10, 11, 12)  # off B's vector path, one 4-byte copy per element, a warp on 32 consecutive floats
A_ROW_PAD = 4   # rungs 07/08: AsT rows of BM + 4 floats (16-byte aligned, conflict-free transposed stores)


def warp_iterations(p: Mapping[str, int]) -> tuple[int, int]:
    """(WMITER, WNITER) of a warp-tiled config (WMITER = WM*WN / (32*TM*TN*WNITER); 0 where not whole)."""
    den = WARP_SIZE * p["TM"] * p["TN"] * p["WNITER"]
    num = p["WM"] * p["WN"]
    return (num // den if den and num % den == 0 else 0), p["WNITER"]


def _warp_geometry(cfg: KernelConfig) -> Geometry:
    p = cfg.p
    bm, bn, bk = p["BM"], p["BN"], p["BK"]
    wmi, wni = warp_iterations(p)
    warps = (bm // p["WM"]) * (bn // p["WN"]) if p["WM"] and p["WN"] else 0
    threads = warps * WARP_SIZE
    stages = p.get("STAGES", 2)
    smem = stages * (bk * (bm + A_ROW_PAD) + bk * bn) * BYTES_PER_ELEMENT
    return Geometry(bm, bn, bk, wmi * p["TM"], wni * p["TN"], threads, (threads, 1, 1), 0, smem, stages, True,
                    warp_tile=(p["WM"], p["WN"]), warp_iters=(wmi, wni), thread_step=(p["TM"], p["TN"]),
                    swizzle_group=p["SWZ"], split_k=p["SPLITK"], async_copy=cfg.rung in ASYNC_RUNGS, a_row_pad=A_ROW_PAD,
                    b_pair_swap=cfg.rung in PAIR_SWAPPED_B, b_element_fallback=cfg.rung in ELEMENT_FALLBACK_B,
                    clamped_copies=cfg.rung in CLAMPED_COPIES, vector_reduction=cfg.rung in VECTOR_REDUCTION)


def grid(cfg: KernelConfig, M: int, N: int) -> tuple[int, int, int]:
    """Grid dimensions of ``cfg`` for an M x N output (the one place launch geometry is derived).

    Rungs 07/08 launch a 1-D grid of output tiles (``blockIdx.x`` -> tile by :func:`launch_order`) times
    ``split_k`` slices in ``z``."""
    g = geometry(cfg)
    if cfg.rung == 0:
        return (0, 0, 0)
    if cfg.rung in WARP_TILED:
        return (math.ceil(M / g.BM) * math.ceil(N / g.BN), 1, g.split_k)
    if cfg.rung == 1 and not cfg.p["COALESCED"]:
        return (math.ceil(M / g.block[0]), math.ceil(N / g.block[1]), 1)
    return (math.ceil(N / g.BN), math.ceil(M / g.BM), 1)


def n_blocks(cfg: KernelConfig, M: int, N: int) -> int:
    gx, gy, gz = grid(cfg, M, N)
    return gx * gy * gz


def launch_order(cfg: KernelConfig, M: int, N: int) -> np.ndarray:
    """``(n_blocks, 3)`` int array: row i is the (block row bm, block column bn, K slice) of the i-th block
    the hardware dispatches (increasing linear block index: x fastest, then y, then z).

    Rungs 02-06 (and the coalesced naive kernel): ``blockIdx = (bn, bm)``, so row-major over output tiles.
    Rungs 07/08: ``pid = blockIdx.x``; ``swizzle_group`` G = 1 is row-major; G > 1 walks groups of G block
    rows column by column (``first = (pid // (G*gn))*G``, ``size = min(gm - first, G)``,
    ``bm = first + (pid % (G*gn)) % size``, ``bn = (pid % (G*gn)) // size``), so the blocks of one wave share
    the A rows of G tiles and the B columns of a few; slice ``z`` comes after all tiles of slice ``z-1``.
    The kernels compute exactly this map (CONTRACT of 07_warptile.cu)."""
    g = geometry(cfg)
    if cfg.rung == 0:
        return np.zeros((0, 3), dtype=np.int64)
    gx, gy, gz = grid(cfg, M, N)
    if cfg.rung in WARP_TILED:
        gm, gn = math.ceil(M / g.BM), math.ceil(N / g.BN)
        pid = np.arange(gm * gn, dtype=np.int64)
        G = g.swizzle_group
        if G <= 1:
            bm, bn = pid // gn, pid % gn
        else:
            first = (pid // (G * gn)) * G
            size = np.minimum(gm - first, G)
            r = pid % (G * gn)
            bm, bn = first + r % size, r // size
        z = np.repeat(np.arange(gz, dtype=np.int64), gm * gn)
        return np.stack([np.tile(bm, gz), np.tile(bn, gz), z], axis=1)
    lin = np.arange(gx * gy, dtype=np.int64)
    bx, by = lin % gx, lin // gx
    if cfg.rung == 1 and not cfg.p["COALESCED"]:
        return np.stack([bx, by, np.zeros_like(lin)], axis=1)     # blockIdx.x walks the rows
    return np.stack([by, bx, np.zeros_like(lin)], axis=1)


def k_slices(cfg: KernelConfig, K: int) -> list[tuple[int, int]]:
    """``[(k_begin, k_end), ...]``: the K range of each slice (one slice unless ``split_k`` > 1). Slices are
    whole BK tiles (``ceil(ceil(K/BK)/split_k)`` each); trailing slices can be empty (k_begin == k_end),
    their blocks return at once."""
    g = geometry(cfg)
    s = max(1, g.split_k)
    tiles = math.ceil(K / g.BK) if g.BK else 1
    per = math.ceil(tiles / s)
    out = []
    for z in range(s):
        b = min(K, z * per * g.BK)
        e = min(K, (z + 1) * per * g.BK)
        out.append((b, max(b, e)))
    return out


# --------------------------------------------------------------------------------------------------
# Validity rules, written once as data. Each rule is an expression over the config's parameters
# (BM, BN, BK, TM, TN, BX, BY, COALESCED), the derived quantities (threads, smem_bytes,
# static_smem_bytes, dynamic_smem_bytes, min_regs) and, where a GPU spec is given, its limits. The
# expression text is the rule's documentation and the error message.
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    limit: str          # name of the limit, reported in ConfigError.limit
    expr: str           # Python expression that must hold
    why: str            # one line: what breaks otherwise
    rungs: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
    needs_gpu: bool = False


RULES: tuple[Rule, ...] = (
    Rule("positive", "min_param >= 1", "tile sizes and block dimensions must be positive"),
    Rule("coalesced_flag", "COALESCED in (0, 1)", "COALESCED is a 0/1 flag", rungs=(1,)),
    Rule("BM % TM == 0", "BM % TM == 0", "each thread's TM rows must tile the block's BM rows", rungs=(3, 4, 5, 6)),
    Rule("BN % TN == 0", "BN % TN == 0", "each thread's TN columns must tile the block's BN columns",
         rungs=(4, 5, 6)),
    Rule("float4_alignment", "BK % 4 == 0 and BN % 4 == 0 and TM % 4 == 0 and TN % 4 == 0",
         "128-bit loads and stores need BK, BN, TM and TN to be multiples of 4", rungs=(5, 6)),
    Rule("warp_tile_divides_block", "BM % WM == 0 and BN % WN == 0",
         "the block's BM x BN tile must be tiled by whole WM x WN warp tiles", rungs=WARP_TILED),
    Rule("warp_iterations", "WMITER >= 1 and WM % WMITER == 0 and WN % WNITER == 0",
         "WMITER = WM*WN/(32*TM*TN*WNITER) must be a whole number dividing WM, and WNITER must divide WN",
         rungs=WARP_TILED),
    Rule("warp_lanes", "WSUBM % TM == 0 and WSUBN % TN == 0 and (WSUBM // TM) * (WSUBN // TN) == 32",
         "the 32 lanes of a warp must tile one WSUBM x WSUBN step (WSUBM = WM/WMITER, WSUBN = WN/WNITER) "
         "by TM x TN", rungs=WARP_TILED),
    Rule("warptile_vectors", "TM % 4 == 0 and TN % 4 == 0 and BK % 8 == 0",
         "LDS.128 fragments need TM, TN multiples of 4; the paired (32-byte sector) A tile loads need BK a "
         "multiple of 8", rungs=WARP_TILED),
    Rule("pipeline_stages", "2 <= STAGES <= 4", "the cp.async pipeline has 2, 3 or 4 shared-memory stages",
         rungs=ASYNC_RUNGS),
    Rule("async_copy_arch", f"gpu.cc_major >= {ASYNC_MIN_CC}",
         "cp.async (rungs 08-12) needs compute capability 8.0 or newer (Ampere and later)", rungs=ASYNC_RUNGS,
         needs_gpu=True),
    Rule("vector_reduction_arch", f"gpu.cc_major >= {VECTOR_REDUCTION_MIN_CC}",
         "vector reductions (rung 12: atomicAdd of a float4) need compute capability 9.0 or newer (Hopper)",
         rungs=VECTOR_REDUCTION, needs_gpu=True),
    Rule("split_k_only", "SPLITK >= 2", "rung 12 changes only split-K's reductions: without split-K it is rung 11",
         rungs=VECTOR_REDUCTION),
    Rule("uniform_copies", "(BM * BK) % threads == 0 and (BK * BN // 4) % threads == 0",
         "every thread issues the same number of A and B copies per tile (BM*BK and BK*BN/4 multiples of the "
         "threads), so that no copy needs a bound for lying beyond the tile", rungs=CLAMPED_COPIES),
    Rule("copy_spread", "1 <= SPREAD <= BK", "the next tile's copies are spread over 1 to BK of the BK steps",
         rungs=CLAMPED_COPIES),
    Rule("threads_per_block", "threads <= 1024", "CUDA allows at most 1024 threads per block"),
    Rule("warp_multiple", "threads % 32 == 0",
         "the register-tiled kernels need whole warps (threads = BM*BN/(TM*TN) a multiple of 32)",
         rungs=(3, 4, 5, 6)),
    Rule("registers_per_thread", "min_regs <= 255",
         "the TM*TN accumulators plus TM+TN operands must fit in 255 registers per thread, or they spill"),
    Rule("registers_per_block", "min_regs * threads <= 65536",
         "a block needs at least min_regs registers per thread x threads, at most 65536 per block"),
    Rule("static_shared_memory_per_block", "static_smem_bytes <= 49152",
         "static __shared__ arrays are limited to 48 KiB per block", rungs=(2,)),
    Rule("shared_memory_per_block", "smem_bytes <= gpu.shared_bytes_per_block_optin",
         "the block's shared memory must fit the GPU's per-block opt-in limit", needs_gpu=True),
    Rule("threads_per_sm", "threads <= gpu.max_threads_per_sm",
         "a block must fit on one SM", needs_gpu=True),
)


def min_registers(g: Geometry) -> int:
    """A floor on registers per thread: the TM*TN accumulators, TM + TN operands, 8 for indices."""
    return g.TM * g.TN + g.TM + g.TN + 8


def _namespace(cfg: KernelConfig, gpu) -> dict:
    g = geometry(cfg)
    ns: dict = {"BM": g.BM, "BN": g.BN, "BK": g.BK, "TM": g.TM, "TN": g.TN,
                "threads": g.threads, "smem_bytes": g.smem_bytes,
                "static_smem_bytes": g.static_smem_bytes, "dynamic_smem_bytes": g.dynamic_smem_bytes,
                "min_regs": min_registers(g),
                "min_param": min([v for _, v in cfg.params if _ != "COALESCED"] or [1]), "gpu": gpu}
    ns.update(cfg.p)
    if cfg.rung in WARP_TILED:
        wmi, wni = g.warp_iters
        ns.update(WMITER=wmi, WSUBM=(cfg.p["WM"] // wmi if wmi else 0), WSUBN=(cfg.p["WN"] // wni if wni else 0))
    return ns


def violations(cfg: KernelConfig, gpu=None) -> list[tuple[Rule, str]]:
    """All rules ``cfg`` breaks (with a message each); rules needing a GPU are checked when one is given."""
    if cfg.rung == 0:
        return []
    ns = _namespace(cfg, gpu)
    out = []
    for rule in RULES:
        if cfg.rung not in rule.rungs or (rule.needs_gpu and gpu is None):
            continue
        # Evaluate with no builtins: the expressions are ours, the names are the config's.
        ok = eval(rule.expr, {"__builtins__": {}}, ns)  # noqa: S307 - fixed, trusted rule text
        if not ok and rule.limit == "positive":
            # Nothing else can be evaluated (divisions by zero): report this rule alone.
            return [(rule, f"{cfg.info.label} {cfg.key}: violates positive ({rule.expr}): {rule.why}")]
        if not ok:
            shown = {k: ns[k] for k in ("BM", "BN", "BK", "WM", "WN", "WMITER", "WNITER", "WSUBM", "WSUBN", "TM",
                                        "TN", "STAGES", "threads", "smem_bytes", "min_regs")
                     if k in ns and (k in rule.expr or k in ("threads",))}
            if "gpu." in rule.expr:
                attr = rule.expr.split("gpu.")[1].split()[0]
                shown[f"{getattr(gpu, 'key', 'gpu')}.{attr}"] = getattr(gpu, attr)
            out.append((rule, f"{cfg.label}: violates {rule.limit} ({rule.expr}; "
                              + ", ".join(f"{k}={v}" for k, v in shown.items()) + f"): {rule.why}"))
    return out


def validate(cfg: KernelConfig, gpu=None) -> KernelConfig:
    """Raise :class:`ConfigError` naming the first violated limit; return ``cfg`` when it is valid."""
    bad = violations(cfg, gpu)
    if bad:
        rule, msg = bad[0]
        raise ConfigError(msg, limit=rule.limit)
    return cfg


def is_valid(cfg: KernelConfig, gpu=None) -> bool:
    return not violations(cfg, gpu)


def validate_size(M: int, N: int, K: int) -> tuple[int, int, int]:
    """Problem sizes must be integers >= 1."""
    for name, v in (("M", M), ("N", N), ("K", K)):
        if isinstance(v, bool) or not isinstance(v, (int,)) and not (hasattr(v, "__index__")):
            raise ConfigError(f"problem size {name} must be an integer, got {v!r}", limit="size")
        if int(v) < 1:
            raise ConfigError(f"problem size {name} must be >= 1, got {v}", limit="size")
    return int(M), int(N), int(K)


# --------------------------------------------------------------------------------------------------
# Config families
# --------------------------------------------------------------------------------------------------


def classic_configs(rungs: Iterable[int] | None = None) -> list[KernelConfig]:
    """The classic configs of each rung, in ladder order."""
    out = []
    for r in RUNGS.values():
        if rungs is not None and r.number not in rungs:
            continue
        out.extend(KernelConfig.make(r.number, **c) for c in r.classic)
    return out


def grid_configs(rung_id: int, gpu=None, **choices: Iterable[int]) -> Iterator[KernelConfig]:
    """Every valid combination of the given parameter choices, e.g.
    ``grid_configs(4, BM=[64,128], BN=[64,128], BK=[8], TM=[4,8], TN=[4,8])``."""
    r = rung(rung_id)
    names = r.params
    missing = [n for n in names if n not in choices]
    if missing:
        raise ConfigError(f"grid for {r.label} needs choices for {', '.join(missing)}", limit="parameters")
    for values in itertools.product(*(list(choices[n]) for n in names)):
        cfg = KernelConfig(r.number, tuple(zip(names, (int(v) for v in values))))
        if is_valid(cfg, gpu):
            yield cfg
