"""The correctness gate on the CPU (numpy in place of cupy): the per-element forward error bound catches
one wrong element that the relative Frobenius error lets through; a correct FP32 product passes."""
from __future__ import annotations

import numpy as np
import pytest

from gpu import launcher
from gpu.launcher import Problem, check_output, element_bound, error_bound


def _problem(M: int, N: int, K: int, seed: int = 0, order: str = "blocked") -> Problem:
    rng = np.random.default_rng(seed)
    A = (rng.random((M, K), dtype=np.float32) * 2 - 1).astype(np.float32)
    B = (rng.random((K, N), dtype=np.float32) * 2 - 1).astype(np.float32)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    if order == "blocked":            # an FP32 product summed tile by tile, like the kernels
        C = np.zeros((M, N), dtype=np.float32)
        for k0 in range(0, K, 8):
            C += A[:, k0:k0 + 8] @ B[k0:k0 + 8, :]
    else:
        C = (A @ B).astype(np.float32)
    return Problem(M, N, K, seed, A, B, C, ref, float(np.linalg.norm(ref)))


@pytest.mark.parametrize("order", ["blocked", "blas"])
def test_a_correct_fp32_product_passes(order) -> None:
    p = _problem(96, 80, 1000, order=order)
    rel, why = check_output(p, xp=np)
    assert why is None and rel is not None and rel <= error_bound(p.K)


def test_one_wrong_element_passes_frobenius_but_is_refused() -> None:
    p = _problem(384, 384, 512, seed=3, order="blas")
    i, j = 100, 200
    p.C[i, j] += 0.05                    # one element off by 0.05 (values are ~ +-13, bound ~ 4e-3 here)
    diff = p.C.astype(np.float64) - p.ref
    assert np.linalg.norm(diff) / p.ref_norm <= error_bound(p.K)      # the Frobenius gate alone misses it
    rel, why = check_output(p, xp=np)
    assert why is not None and "1 of" in why and f"C[{i},{j}]" in why


def test_nan_is_refused() -> None:
    p = _problem(16, 16, 16)
    p.C[3, 4] = np.nan
    rel, why = check_output(p, xp=np)
    assert rel is None and "NaN or Inf" in why


def test_element_bound_is_gamma_k() -> None:
    K = 4096
    u = 2.0 ** -24
    b = element_bound(K, np.array([1.0, 0.0]))
    assert b[0] == pytest.approx(K * u / (1 - K * u) + K * 2.0 ** -126)
    assert 0 < b[1] < 1e-30
    # a dropped K tile of 8 terms is far above it
    p = _problem(64, 64, 256, seed=1)
    p.C = (p.A[:, 8:] @ p.B[8:, :]).astype(np.float32)
    assert check_output(p, xp=np)[1] is not None


def test_abs_product_is_computed_once_per_problem(monkeypatch) -> None:
    p = _problem(32, 32, 64)
    calls = []
    real = np.matmul

    class XP:
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def matmul(a, b):
            calls.append(1)
            return real(a, b)

    check_output(p, xp=XP())
    check_output(p, xp=XP())
    assert len(calls) == 1 and hasattr(p, "abs_product")
    assert launcher.UNIT_ROUNDOFF_FP32 == 2.0 ** -24
