"""Tests for model/intensity.py: the SymPy derivation of arithmetic intensity (no GPU needed).

The expectations below are typed in independently from the seed note's formulas (FLOP per element
accessed), not copied out of the module, and compared with ``sympy.simplify(a - b) == 0``.
"""

from __future__ import annotations

import json
import re

import pytest
import sympy as sp

from model.intensity import Derivation, Step, derive, tile_intensity_per_element

# Our own symbols (same names and assumptions as the module's; SymPy treats equal name + assumptions as
# the same symbol, so expressions built here compare equal to the module's).
M, N, K, BM, BN, TM, TN, b = sp.symbols("M N K BM BN TM TN b", positive=True)
LOCALS = {s.name: s for s in (M, N, K, BM, BN, TM, TN, b)}

# The seed's formulas, typed in by hand:
#   naive:          I = 2MNK / (2MNK + MN)                 (2K reads per output + 1 write per output)
#   tiled (exact):  I = 2MNK / (MNK (BM+BN)/(BM BN) + MN)  (the seed drops the + MN)
#   tiled, K -> oo: I = 2 / (1/BM + 1/BN)
#   square tile:    I = b                                  (BM = BN = b)
#   register level: I = 2 / (1/TM + 1/TN)
EXPECTED = {
    "naive": 2 * M * N * K / (2 * M * N * K + M * N),
    "tiled_exact": 2 * M * N * K / (M * N * K * (BM + BN) / (BM * BN) + M * N),
    "tiled_limit": 2 / (1 / BM + 1 / BN),
    "tiled_square": b,
    "register_limit": 2 / (1 / TM + 1 / TN),
}


def same(a: sp.Expr, e: sp.Expr) -> bool:
    return sp.simplify(a - e) == 0


# --------------------------------------------------------------------------------------------------
# The five headline formulas
# --------------------------------------------------------------------------------------------------


def test_formula_names() -> None:
    assert set(derive().formulas) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_formula_matches_hand_typed_expectation(name: str) -> None:
    got = derive().formulas[name]
    assert isinstance(got, sp.Expr)
    assert same(got, EXPECTED[name]), f"{name}: got {got}, expected {EXPECTED[name]}"


def test_formulas_are_not_all_equal_to_each_other() -> None:
    # guard against a comparison that would accept anything: the exact tiled intensity is NOT its limit
    # (it keeps the MN write term), and the naive intensity is not 1.
    f = derive().formulas
    assert not same(f["tiled_exact"], f["tiled_limit"])
    assert not same(f["naive"], sp.Integer(1))


def test_free_symbols() -> None:
    f = derive().formulas
    # the MN factors cancel: naive depends on K only, exact tiled on K, BM, BN
    assert f["naive"].free_symbols == {K}
    assert f["tiled_exact"].free_symbols == {K, BM, BN}
    assert f["tiled_limit"].free_symbols == {BM, BN}
    assert f["tiled_square"].free_symbols == {b}
    assert f["register_limit"].free_symbols == {TM, TN}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_to_json_round_trip(name: str) -> None:
    js = derive().to_json()
    assert set(js) == set(EXPECTED)
    assert isinstance(js[name], str)
    json.dumps(js)  # plain strings: JSON-serialisable
    parsed = sp.sympify(js[name], locals=LOCALS)
    assert same(parsed, EXPECTED[name])
    assert same(parsed, derive().formulas[name])


def test_limit_of_exact_tiled_is_tiled_limit() -> None:
    f = derive().formulas
    lim = sp.limit(f["tiled_exact"], K, sp.oo)
    assert same(lim, f["tiled_limit"])
    assert same(lim, 2 * BM * BN / (BM + BN))
    # and the naive intensity goes to 1 FLOP per element
    assert sp.limit(f["naive"], K, sp.oo) == 1


def test_square_tile_is_limit_at_bm_eq_bn() -> None:
    f = derive().formulas
    assert same(f["tiled_limit"].subs({BM: b, BN: b}), f["tiled_square"])
    # the register level is the same law: square micro-tile TM = TN = t gives t
    assert same(f["register_limit"].subs({TM: 8, TN: 8}), sp.Integer(8))


# --------------------------------------------------------------------------------------------------
# Numeric spot checks, hand-worked
# --------------------------------------------------------------------------------------------------


def test_tiled_limit_32x32() -> None:
    # BM = BN = 32: I = 2 / (1/32 + 1/32) = 2 / (1/16) = 32 FLOP per element = 32/4 = 8 FLOP per byte
    v = derive().formulas["tiled_limit"].subs({BM: 32, BN: 32})
    assert v == 32
    assert v / 4 == 8


def test_tiled_limit_128x64() -> None:
    # BM = 128, BN = 64: I = 2*128*64 / (128 + 64) = 16384 / 192 = 256/3 = 85.333... FLOP per element
    v = derive().formulas["tiled_limit"].subs({BM: 128, BN: 64})
    assert v == sp.Rational(256, 3)
    assert float(v) == pytest.approx(85.3333333, rel=1e-9)


def test_tiled_exact_32x32_at_4096() -> None:
    # I = 2*BM*BN*K / (BM*BN + K*(BM+BN)) = 2*1024*4096 / (1024 + 4096*64) = 8388608 / 263168
    #   = 8192/257 = 31.875... (just below the K -> oo value of 32: the MN write term)
    v = derive().formulas["tiled_exact"].subs({BM: 32, BN: 32, K: 4096})
    assert v == sp.Rational(8192, 257)
    assert tile_intensity_per_element(32, 32, 4096, 4096, 4096) == pytest.approx(8192 / 257, rel=1e-12)
    assert tile_intensity_per_element(32, 32, 4096, 4096, 4096) < 32


def test_naive_at_4096() -> None:
    # I = 2K / (2K + 1) = 8192 / 8193 FLOP per element: about 1 FLOP per element, 1/4 FLOP per byte
    v = derive().formulas["naive"].subs({K: 4096, M: 4096, N: 4096})
    assert v == sp.Rational(8192, 8193)


def test_register_limit_8x4() -> None:
    # I = 2 / (1/8 + 1/4) = 2 / (3/8) = 16/3 FLOP per element read from shared memory
    v = derive().formulas["register_limit"].subs({TM: 8, TN: 4})
    assert v == sp.Rational(16, 3)


# --------------------------------------------------------------------------------------------------
# Renderings
# --------------------------------------------------------------------------------------------------


def all_steps() -> list[Step]:
    return [s for _, steps in derive().steps for s in steps]


def test_derivation_structure() -> None:
    d = derive()
    assert isinstance(d, Derivation)
    titles = [t for t, _ in d.steps]
    assert titles == ["Naive", "Shared-memory tiling", "Register tiling"]
    assert all(len(steps) >= 3 for _, steps in d.steps)
    lhs = [s.lhs for s in all_steps()]
    assert len(lhs) == len(set(lhs)), "every step has its own left-hand side"


def test_step_values() -> None:
    by_lhs = {s.lhs: s.expr for s in all_steps()}
    # F = 2MNK; R_naive = 2MNK; W = MN; R_tiled = MNK (BM+BN)/(BM BN); the seed's dropped-write form
    assert same(by_lhs["F"], 2 * M * N * K)
    assert same(by_lhs["R_naive"], 2 * M * N * K)
    assert same(by_lhs["W"], M * N)
    assert same(by_lhs["per_block"], K * (BM + BN))
    assert same(by_lhs["R_tiled"], M * N * K * (BM + BN) / (BM * BN))
    assert same(by_lhs["I_tiled_seed"], 2 * M * N * K / (M * N * K * (BM + BN) / (BM * BN)))
    # per byte: divide by 4 B per FP32 element
    assert same(by_lhs["I_tiled/4"], (2 / (1 / BM + 1 / BN)) / 4)
    assert same(by_lhs["R_smem"], M * N * K * (1 / TM + 1 / TN))


def test_text_contains_every_step() -> None:
    text = derive().text()
    for title, steps in derive().steps:
        assert f"== {title} ==" in text
        for s in steps:
            assert s.what in text
            assert f"{s.lhs} = {sp.sstr(s.expr)}" in text
    # steps appear in order
    positions = [text.index(f"{s.lhs} = ") for s in all_steps()]
    assert positions == sorted(positions)


def test_markdown_contains_every_step() -> None:
    md = derive().markdown()
    for title, steps in derive().steps:
        assert f"### {title}" in md
        for s in steps:
            assert s.what in md
            assert s.latex() in md
    assert md.count("$$") == 2 * len(all_steps())


def test_renderings_mention_dropped_write_term() -> None:
    for rendering in (derive().text(), derive().markdown()):
        assert re.search(r"seed drops", rendering), "the seed's dropped M*N write term must be called out"
        assert "M*N writes" in rendering


def test_latex_of_limit_step() -> None:
    s = next(s for s in all_steps() if s.lhs == "I_tiled(K->oo)")
    tex = s.latex()
    assert tex.startswith(r"I_{\mathrm{tiled}}\big|_{K\to\infty} = ")
    assert r"\frac" in tex


def test_latex_escapes_underscore_in_subscript() -> None:
    s = next(s for s in all_steps() if s.lhs == "I_tiled_seed")
    assert s.latex().startswith(r"I_{\mathrm{tiled\_seed}} = ")
