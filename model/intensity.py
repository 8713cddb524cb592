"""Arithmetic intensity of each tiling level, derived with SymPy step by step.

The derivation follows the seed note (FLOP per element access) and corrects it in two places:
it keeps the M*N write-back term in the tiled intensity (the note drops it when it writes
I_tiled = 2MNK / (MNK (BM+BN)/(BM BN))), and it converts to FLOP per byte (4 bytes per FP32 element),
which is what a roofline against a bandwidth in bytes per second needs.

All quantities are exact SymPy expressions built from the counting argument, not typed-in strings.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

M, N, K = sp.symbols("M N K", positive=True)
BM, BN, BK = sp.symbols("BM BN BK", positive=True)
TM, TN = sp.symbols("TM TN", positive=True)
b = sp.symbols("b", positive=True)
t = sp.symbols("t", positive=True)
BYTES = sp.Integer(4)  # bytes per FP32 element


@dataclass(frozen=True)
class Step:
    """One line of a derivation: what is counted and the expression it gives."""

    what: str
    lhs: str
    expr: sp.Expr

    def text(self) -> str:
        return f"{self.what}:\n    {self.lhs} = {sp.sstr(self.expr)}"

    def latex(self) -> str:
        """LaTeX of the equation, e.g. ``I_{tiled} = \\frac{...}{...}``."""
        name, _, cond = self.lhs.partition("(")
        base, _, sub = name.partition("_")
        tex = base + ("_{\\mathrm{" + sub.replace("_", "\\_") + "}}" if sub else "")
        if cond:
            tex += "\\big|_{" + cond.rstrip(")").replace("->oo", "\\to\\infty").replace("->", "\\to ") + "}"
        return f"{tex} = {sp.latex(self.expr)}"


@dataclass(frozen=True)
class Derivation:
    """The full derivation: ordered steps and the five headline formulas (FLOP per element)."""

    steps: tuple[tuple[str, tuple[Step, ...]], ...]   # (section title, steps)
    formulas: dict

    def text(self) -> str:
        out = []
        for title, steps in self.steps:
            out.append(f"== {title} ==")
            out.extend(s.text() for s in steps)
            out.append("")
        return "\n".join(out).rstrip() + "\n"

    def markdown(self) -> str:
        out = []
        for title, steps in self.steps:
            out.append(f"### {title}\n")
            for s in steps:
                out.append(f"- {s.what}:\n\n  $$ {s.latex()} $$\n")
        return "\n".join(out)

    def to_json(self) -> dict:
        return {k: sp.sstr(v) for k, v in self.formulas.items()}


@lru_cache(maxsize=1)
def derive() -> Derivation:
    """Count FLOPs and element accesses at each tiling level and simplify."""
    flops = 2 * M * N * K

    # ---- naive: each of the M*N outputs reads a row of A and a column of B (2K elements), writes once.
    naive_reads = M * N * (2 * K)
    naive_writes = M * N
    naive = sp.simplify(flops / (naive_reads + naive_writes))
    naive_limit = sp.limit(naive, K, sp.oo)
    naive_steps = (
        Step("FLOPs of C = A B (one multiply and one add per term)", "F", flops),
        Step("element reads with no reuse: M*N outputs x (K of A + K of B)", "R_naive", naive_reads),
        Step("element writes: each C element once", "W", naive_writes),
        Step("intensity, FLOP per element accessed", "I_naive", naive),
        Step("as K grows (about 1 FLOP per element)", "I_naive(K->oo)", naive_limit),
        Step("per byte (4 B per FP32 element)", "I_naive/4", sp.simplify(naive / BYTES)),
    )

    # ---- shared-memory tiling: (M/BM)(N/BN) blocks, each steps K/BK times loading BM*BK + BK*BN elements.
    blocks = (M / BM) * (N / BN)
    steps_k = K / BK
    per_step = BM * BK + BK * BN
    per_block = sp.simplify(per_step * steps_k)          # = K (BM + BN)
    tiled_reads = sp.factor(sp.simplify(blocks * per_block))  # = MNK (BM+BN)/(BM BN)
    tiled_exact = sp.simplify(flops / (tiled_reads + naive_writes))
    tiled_seed = sp.simplify(flops / tiled_reads)
    tiled_limit = sp.simplify(sp.limit(tiled_exact, K, sp.oo))
    tiled_harmonic = 2 / (1 / BM + 1 / BN)
    tiled_square = sp.simplify(tiled_limit.subs({BM: b, BN: b}))
    tiled_steps = (
        Step("blocks (output tiles of BM x BN)", "blocks", blocks),
        Step("K steps per block", "steps", steps_k),
        Step("elements loaded per step: an A tile BM x BK and a B tile BK x BN", "per_step", per_step),
        Step("elements loaded per block", "per_block", per_block),
        Step("global element reads, all blocks", "R_tiled", tiled_reads),
        Step("exact intensity, keeping the M*N writes (the seed drops this term)", "I_tiled", tiled_exact),
        Step("the seed's form, writes dropped", "I_tiled_seed", tiled_seed),
        Step("as K grows: I = 2/(1/BM + 1/BN), twice the harmonic mean of BM and BN", "I_tiled(K->oo)", tiled_limit),
        Step("square tile BM = BN = b", "I_tiled(b)", tiled_square),
        Step("per byte, K -> oo", "I_tiled/4", sp.simplify(tiled_limit / BYTES)),
    )
    assert sp.simplify(tiled_limit - tiled_harmonic) == 0

    # ---- register tiling: the same law one level down. A thread owns TM x TN outputs; per k it reads
    # TM values of the A tile and TN of the B tile from shared memory and does TM*TN FMAs.
    threads_total = (M * N) / (TM * TN)
    smem_reads = sp.simplify(threads_total * K * (TM + TN))     # = MNK (1/TM + 1/TN)
    register = sp.simplify(flops / smem_reads)
    register_limit = sp.simplify(register)   # no write term at this level: independent of K already
    register_steps = (
        Step("threads (each owns a TM x TN micro-tile of C)", "threads", threads_total),
        Step("shared-memory element reads: per thread and k, TM of A and TN of B", "R_smem", smem_reads),
        Step("intensity at the shared-memory -> register level: I = 2/(1/TM + 1/TN)", "I_reg", register_limit),
        Step("square micro-tile TM = TN = t", "I_reg(t)", sp.simplify(register_limit.subs({TM: t, TN: t}))),
        Step("per byte", "I_reg/4", sp.simplify(register_limit / BYTES)),
    )
    formulas = {
        "naive": naive,
        "tiled_exact": tiled_exact,
        "tiled_limit": tiled_limit,
        "tiled_square": tiled_square,
        "register_limit": register_limit,
    }
    return Derivation(
        steps=(("Naive", naive_steps), ("Shared-memory tiling", tiled_steps), ("Register tiling", register_steps)),
        formulas=formulas,
    )


# --------------------------------------------------------------------------------------------------
# Numeric helpers (FLOP per element / per byte for a concrete config), used by the model
# --------------------------------------------------------------------------------------------------


def tile_intensity_per_element(bm: float, bn: float, m: float, n: float, k: float) -> float:
    """Exact tiled intensity (FLOP per element) with the write term, for full tiles."""
    return float(derive().formulas["tiled_exact"].subs({BM: bm, BN: bn, M: m, N: n, K: k}))
