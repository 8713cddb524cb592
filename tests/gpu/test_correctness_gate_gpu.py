"""On the GPU: one wrong element in a 4096^2 output passes the relative Frobenius error alone but is
refused by the per-element bound (gpu.launcher.check_output), both directly and through the timed
measurement path (status wrong_result, no time recorded)."""
from __future__ import annotations

import pytest

from gpu.launcher import CUBLAS, Measurement, error_bound

pytestmark = pytest.mark.gpu

SIZE = 4096
SPOT = (1234, 567)


@pytest.fixture(scope="module")
def problem():
    from gpu import make_problem
    p = make_problem(SIZE, SIZE, SIZE, seed=4242)
    yield p
    p.free()


def test_a_correct_product_passes(problem) -> None:
    import cupy as cp
    from gpu.launcher import check_output
    cp.matmul(problem.A, problem.B, out=problem.C)
    rel, why = check_output(problem)
    assert why is None and rel <= error_bound(SIZE)


def test_one_wrong_element_in_4096_squared_is_refused(problem) -> None:
    import cupy as cp
    from gpu.launcher import check_output
    cp.matmul(problem.A, problem.B, out=problem.C)
    problem.C[SPOT] += 5.0                      # one of 16.7 M elements off by 5
    diff = problem.C.astype(cp.float64) - problem.ref
    frob = float(cp.linalg.norm(diff.ravel())) / problem.ref_norm
    assert frob <= error_bound(SIZE), "the planted error should pass the Frobenius gate alone"
    rel, why = check_output(problem)
    assert why is not None and f"C[{SPOT[0]},{SPOT[1]}]" in why and why.startswith("1 of")


def test_the_measurement_path_refuses_it(problem) -> None:
    import cupy as cp
    from gpu.device import device_spec
    from gpu.launcher import _measure

    def launch() -> None:
        cp.matmul(problem.A, problem.B, out=problem.C)
        problem.C[SPOT] += 5.0

    base = Measurement(CUBLAS, SIZE, SIZE, SIZE, status="invalid")
    m = _measure(launch, problem, base, reps=10, warmup=1, l2_policy="flush", max_config_s=0.5,
                 l2_bytes=device_spec().l2_bytes)
    assert m.status == "wrong_result" and not m.times_s and "per-element" in m.reason
