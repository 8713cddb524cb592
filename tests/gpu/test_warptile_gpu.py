"""Real-GPU tests of rungs 07 (warp tiling), 08 (cp.async pipeline), 09 (bank-aware operands), 10 (branch-free pipeline),
11 (predicate-free steady loop) and 12 (vector reductions), with the block swizzle and split-K
(skipped, with the reason, without cupy or a CUDA GPU; rungs 08-12 also below compute capability 8.0, rung 12 below 9.0).

Every config is checked against a float64 reference at awkward sizes (1x1x1, primes, sizes below one tile,
K not a multiple of 4, K shorter than the split-K slices, 512^3), with 16-byte-misaligned A, B and C
(scalar / 4-byte cp.async fallbacks), the model's occupancy must equal the driver's, and a split-K kernel
that is not given a zeroed C must be caught."""
from __future__ import annotations

import numpy as np
import pytest

from model.registry import KernelConfig, geometry, grid

pytestmark = pytest.mark.gpu

SIZES = [(1, 1, 1), (7, 7, 7), (127, 127, 127), (255, 255, 255), (1, 255, 7), (127, 1, 33),
         (1000, 999, 1001), (33, 65, 129), (129, 257, 40), (300, 200, 1000), (512, 512, 512)]
KEYS = [
    "07:BM=128,BN=128,BK=16,WM=64,WN=32,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1",
    "07:BM=128,BN=128,BK=8,WM=64,WN=32,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1",
    "07:BM=128,BN=128,BK=16,WM=64,WN=64,WNITER=4,TM=8,TN=4,SWZ=1,SPLITK=1",
    "07:BM=64,BN=128,BK=16,WM=32,WN=64,WNITER=2,TM=4,TN=4,SWZ=8,SPLITK=1",
    "07:BM=64,BN=64,BK=16,WM=32,WN=32,WNITER=2,TM=4,TN=4,SWZ=3,SPLITK=4",
    "07:BM=128,BN=128,BK=32,WM=64,WN=32,WNITER=2,TM=4,TN=4,SWZ=8,SPLITK=2",
    "08:BM=128,BN=128,BK=16,WM=64,WN=32,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=3",
    "08:BM=128,BN=128,BK=16,WM=64,WN=32,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=2",
    "08:BM=128,BN=128,BK=8,WM=64,WN=32,WNITER=2,TM=4,TN=4,SWZ=8,SPLITK=1,STAGES=4",
    "08:BM=128,BN=128,BK=16,WM=64,WN=64,WNITER=4,TM=8,TN=4,SWZ=1,SPLITK=1,STAGES=4",
    "08:BM=64,BN=128,BK=16,WM=32,WN=64,WNITER=2,TM=4,TN=4,SWZ=8,SPLITK=1,STAGES=3",
    "08:BM=64,BN=64,BK=16,WM=32,WN=32,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=3",
    "08:BM=128,BN=128,BK=32,WM=64,WN=32,WNITER=2,TM=4,TN=4,SWZ=2,SPLITK=3,STAGES=3",
    "09:BM=128,BN=256,BK=8,WM=64,WN=64,WNITER=2,TM=8,TN=4,SWZ=1,SPLITK=1,STAGES=3",
    "09:BM=128,BN=128,BK=16,WM=64,WN=32,WNITER=2,TM=4,TN=4,SWZ=8,SPLITK=1,STAGES=4",
    "09:BM=64,BN=64,BK=16,WM=32,WN=32,WNITER=2,TM=4,TN=4,SWZ=3,SPLITK=8,STAGES=2",
    "10:BM=128,BN=256,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=3",
    "10:BM=128,BN=128,BK=16,WM=64,WN=32,WNITER=2,TM=4,TN=4,SWZ=8,SPLITK=1,STAGES=4",
    "10:BM=64,BN=64,BK=16,WM=32,WN=32,WNITER=2,TM=4,TN=4,SWZ=3,SPLITK=8,STAGES=2",
    "11:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=8,SPLITK=1,STAGES=4,SPREAD=1",
    "11:BM=128,BN=128,BK=16,WM=64,WN=32,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=3,SPREAD=16",
    "11:BM=64,BN=64,BK=16,WM=32,WN=32,WNITER=2,TM=4,TN=4,SWZ=3,SPLITK=8,STAGES=2,SPREAD=3",
    "12:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=3,SPREAD=8",
    "12:BM=64,BN=64,BK=16,WM=32,WN=32,WNITER=2,TM=4,TN=4,SWZ=3,SPLITK=2,STAGES=2,SPREAD=3",
    "12:BM=128,BN=128,BK=16,WM=64,WN=32,WNITER=2,TM=4,TN=4,SWZ=8,SPLITK=3,STAGES=4,SPREAD=16",
]
CONFIGS = [KernelConfig.parse(k) for k in KEYS]
FAST = {"reps": 10, "warmup": 1, "max_config_s": 0.5}


@pytest.fixture(scope="session")
def spec():
    from gpu import device_spec
    return device_spec()


def _usable(cfg, spec) -> list:
    from model.registry import violations
    return [c for c in cfg if not violations(c, spec)]


@pytest.fixture(scope="session")
def compiled(spec):
    from gpu import precompile
    errors = precompile(_usable(CONFIGS, spec), spec)
    assert not errors, "\n\n".join(f"{k}: {v}" for k, v in errors.items())
    return True


@pytest.fixture(scope="module")
def problems():
    from gpu import make_problem
    made = {}

    def get(size):
        if size not in made:
            made[size] = make_problem(*size, seed=2000 + len(made))
        return made[size]

    yield get
    for p in made.values():
        p.free()


def _skip_unsupported(cfg, spec) -> None:
    from model.registry import violations
    bad = violations(cfg, spec)
    if bad:
        pytest.skip(f"{cfg.label} not for this GPU: {bad[0][1]}")


@pytest.mark.parametrize("size", SIZES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.label.replace(" ", "_"))
def test_warptile_config_is_correct(cfg, size, spec, compiled, problems) -> None:
    from gpu import run_config
    _skip_unsupported(cfg, spec)
    m = run_config(cfg, problems(size), spec=spec, **FAST)
    assert m.status == "ok", f"{cfg.label} at {size}: {m.status}: {m.reason}"
    assert m.verified and m.rel_error <= m.error_bound
    assert m.grid == grid(cfg, size[0], size[1]) and m.block == geometry(cfg).block


def _misaligned(problem):
    """The same values in buffers offset by one float from a 256-byte boundary (A, B, C 4-byte aligned only)."""
    import cupy as cp
    from gpu.launcher import Problem

    def shift(x):
        buf = cp.empty(x.size + 1, dtype=cp.float32)
        v = buf[1:].reshape(x.shape)
        v[...] = x
        return v

    return Problem(problem.M, problem.N, problem.K, problem.seed, shift(problem.A), shift(problem.B),
                   shift(problem.C), problem.ref, problem.ref_norm)


@pytest.mark.parametrize("size", [(256, 256, 256), (129, 132, 68), (512, 512, 2048)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.label.replace(" ", "_"))
def test_misaligned_pointers_fall_back(cfg, size, spec, compiled, problems) -> None:
    from gpu import run_config
    _skip_unsupported(cfg, spec)
    p = _misaligned(problems(size))
    assert p.A.data.ptr % 16 == 4 and p.B.data.ptr % 16 == 4 and p.C.data.ptr % 16 == 4
    m = run_config(cfg, p, spec=spec, **FAST)
    assert m.status == "ok", f"{cfg.label} misaligned at {size}: {m.status}: {m.reason}"


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.label.replace(" ", "_"))
def test_model_occupancy_equals_driver(cfg, spec, compiled) -> None:
    from gpu import compile_config
    from gpu.launcher import occupancy_pair
    _skip_unsupported(cfg, spec)
    ck = compile_config(cfg, spec)
    driver, model, limiter = occupancy_pair(ck, spec)
    assert driver >= 1 and model == driver, (cfg.label, driver, model, limiter, ck.attributes)
    assert ck.attributes["local_size_bytes"] == 0 or "WNITER=4,TM=8" in cfg.key, \
        f"{cfg.label} spills: {ck.attributes}"


def test_split_k_needs_the_zeroed_output(spec, compiled, problems) -> None:
    """The launcher zeroes C before a split-K launch; a launch on the NaN poison must fail the check."""
    from gpu import compile_config, launcher
    cfg = KernelConfig.parse(KEYS[4])
    ck = compile_config(cfg, spec)
    p = problems((300, 200, 1000))
    gx, gy, gz = grid(cfg, p.M, p.N)
    args = (p.A, p.B, p.C, np.int32(p.M), np.int32(p.N), np.int32(p.K))
    base = launcher.Measurement(cfg, p.M, p.N, p.K, status="invalid")
    bad = launcher._measure(lambda: ck.kernel((gx, gy, gz), ck.block, args, shared_mem=ck.dynamic_smem_bytes),
                            p, base, reps=10, warmup=1, l2_policy="flush", max_config_s=0.5, l2_bytes=spec.l2_bytes)
    assert bad.status == "wrong_result"
    good = launcher.run_config(cfg, p, spec=spec, **FAST)
    assert good.status == "ok", good.reason


def test_rungs_08_to_11_refused_below_sm80(spec) -> None:
    import dataclasses

    from model.errors import ConfigError
    from model.registry import validate
    old = dataclasses.replace(spec, cc_major=7, cc_minor=5)
    for c in (CONFIGS[6], CONFIGS[-7], CONFIGS[-4]):
        with pytest.raises(ConfigError) as ei:
            validate(c, old)
        assert ei.value.limit == "async_copy_arch"


def test_rung_12_refused_below_sm90(spec) -> None:
    import dataclasses

    from model.errors import ConfigError
    from model.registry import validate
    ampere = dataclasses.replace(spec, cc_major=8, cc_minor=6)
    with pytest.raises(ConfigError) as ei:
        validate(CONFIGS[-1], ampere)
    assert ei.value.limit == "vector_reduction_arch"
