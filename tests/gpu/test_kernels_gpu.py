"""Real-GPU tests of the ladder's kernels (skipped, with the reason, without cupy or a CUDA GPU).

Every rung's classic configs and a few others (non-square tiles, TM = TN = 4, BK = 16 / 32, a kernel
above 48 KiB of dynamic shared memory) are compiled, checked against a float64 reference at awkward
sizes (1x1x1, primes, sizes below one tile, one 512^3) and timed briefly; the model's occupancy with the
compiled kernel's real register count must equal the driver's.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from model.errors import ConfigError
from model.registry import KernelConfig, classic_configs, geometry

pytestmark = pytest.mark.gpu

SIZES = [(1, 1, 1), (7, 7, 7), (127, 127, 127), (255, 255, 255), (1, 255, 7), (127, 1, 33),
         (1000, 999, 1001), (33, 65, 129), (512, 512, 512)]
EXTRA = [KernelConfig.parse(k) for k in (
    "01:BX=8,BY=32,COALESCED=1", "01:BX=64,BY=4,COALESCED=0", "01:BX=128,BY=2,COALESCED=1",
    "02:BM=16,BN=32,BK=8", "02:BM=32,BN=8,BK=16",
    "03:BM=64,BN=32,BK=16,TM=4", "03:BM=128,BN=64,BK=32,TM=8",
    "04:BM=64,BN=128,BK=16,TM=4,TN=4", "04:BM=128,BN=64,BK=32,TM=8,TN=4", "04:BM=32,BN=64,BK=16,TM=2,TN=2",
    "05:BM=64,BN=128,BK=16,TM=4,TN=4", "05:BM=128,BN=64,BK=32,TM=8,TN=4", "05:BM=256,BN=128,BK=32,TM=16,TN=8",
    "06:BM=64,BN=128,BK=16,TM=4,TN=4", "06:BM=128,BN=64,BK=32,TM=8,TN=4",
    "06:BM=256,BN=128,BK=32,TM=16,TN=8",   # 96 KiB of dynamic shared memory: needs the opt-in
)]
CONFIGS = [c for c in classic_configs() if c.rung != 0] + EXTRA
FAST = {"reps": 10, "warmup": 1, "max_config_s": 0.5}


@pytest.fixture(scope="session")
def spec():
    from gpu import device_spec
    return device_spec()


@pytest.fixture(scope="session")
def compiled(spec):
    """Compile every test config once, in parallel; fail if any does not compile."""
    from gpu import precompile
    errors = precompile(CONFIGS, spec)
    assert not errors, "\n\n".join(f"{k}: {v}" for k, v in errors.items())
    return True


@pytest.fixture(scope="module")
def problems():
    from gpu import make_problem
    made = {}

    def get(size):
        if size not in made:
            made[size] = make_problem(*size, seed=1000 + len(made))
        return made[size]

    yield get
    for p in made.values():
        p.free()


# --------------------------------------------------------------------------------------------------
# Device and spec
# --------------------------------------------------------------------------------------------------


def test_device_info_and_spec_agree_with_the_device(spec) -> None:
    from gpu import detect_device, spec_from_attributes
    info = detect_device()
    assert info.sm_count > 0 and info.clock_hz > 1e8 and info.l2_bytes > 0
    assert info.driver_version > 0 and info.runtime_version > 0 and info.cupy_version
    assert (spec.cc_major, spec.cc_minor, spec.sm_count) == (info.cc_major, info.cc_minor, info.sm_count)
    if "H200" in info.name:
        assert spec.key == "h200"
    # the spec's per-SM limits equal what the device reports (checks gpus/<key>.toml against the hardware)
    from_device = spec_from_attributes(info.name, info.attributes)
    for f in ("sm_count", "l2_bytes", "warp_size", "max_threads_per_block", "max_threads_per_sm",
              "max_warps_per_sm", "max_blocks_per_sm", "registers_per_sm", "max_registers_per_block",
              "shared_bytes_per_sm", "shared_bytes_per_block", "shared_bytes_per_block_optin",
              "shared_reserved_per_block"):
        assert getattr(spec, f) == getattr(from_device, f), f"{spec.key}.{f} differs from the device attribute"


def test_float64_reference_matches_numpy() -> None:
    from gpu import make_problem
    p = make_problem(33, 17, 65, seed=7)
    try:
        A, B = p.A.get().astype(np.float64), p.B.get().astype(np.float64)
        assert A.min() >= -1 and A.max() < 1 and 0.45 < np.abs(A).mean() < 0.55   # uniform [-1, 1): mean |x| = 0.5
        np.testing.assert_allclose(p.ref.get(), A @ B, rtol=1e-12, atol=1e-12)
        # the same seed gives the same inputs
        q = make_problem(33, 17, 65, seed=7)
        assert np.array_equal(q.A.get(), p.A.get())
        q.free()
    finally:
        p.free()


# --------------------------------------------------------------------------------------------------
# Correctness of every config at awkward sizes
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.key)
def test_config_is_correct(cfg, size, spec, compiled, problems) -> None:
    from gpu import run_config
    m = run_config(cfg, problems(size), spec=spec, **FAST)
    assert m.status == "ok", f"{cfg.label} at {size}: {m.status}: {m.reason}"
    assert m.verified and m.rel_error <= m.error_bound
    assert len(m.times_s) >= 10 and all(t > 0 for t in m.times_s)
    assert m.grid is not None and m.block == geometry(cfg).block


@pytest.mark.parametrize("size", SIZES, ids=lambda s: "x".join(map(str, s)))
def test_cublas_is_correct(size, problems) -> None:
    from gpu import run_cublas
    m = run_cublas(problems(size), **FAST)
    assert m.status == "ok", m.reason
    assert m.rel_error <= m.error_bound


def test_poisoned_output_is_caught(spec, problems) -> None:
    """A 'kernel' that writes nothing leaves the NaN poison; one that writes zeros is far off the bound."""
    from gpu import launcher
    p = problems((127, 127, 127))
    base = launcher.Measurement(KernelConfig.make(0), p.M, p.N, p.K, status="invalid")
    kw = dict(reps=10, warmup=1, l2_policy="flush", max_config_s=0.5, l2_bytes=spec.l2_bytes)
    nothing = launcher._measure(lambda: None, p, base, **kw)
    assert nothing.status == "wrong_result" and "NaN" in nothing.reason and not nothing.times_s
    zeros = launcher._measure(lambda: p.C.fill(0), p, base, **kw)
    assert zeros.status == "wrong_result" and zeros.rel_error > 0.5 and not zeros.times_s


# --------------------------------------------------------------------------------------------------
# Occupancy: model (with real registers) == driver
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.key)
def test_model_occupancy_equals_driver(cfg, spec, compiled) -> None:
    from gpu import compile_config
    from gpu.launcher import occupancy_pair
    ck = compile_config(cfg, spec)
    driver, model, limiter = occupancy_pair(ck, spec)
    assert driver >= 1, f"{cfg.label}: the driver says it cannot run ({ck.attributes})"
    assert model == driver, (f"{cfg.label}: model {model} blocks/SM (limiter {limiter}) != driver {driver}; "
                             f"threads {ck.threads}, attributes {ck.attributes}, dynamic smem {ck.dynamic_smem_bytes}")


def test_precompile_workers_fill_the_disk_cache(spec) -> None:
    """Kernels compiled in worker processes load in the parent from CuPy's disk cache (no second NVRTC run)."""
    from gpu import launcher, precompile
    fresh = [KernelConfig.parse(k) for k in ("04:BM=64,BN=32,BK=8,TM=4,TN=2", "04:BM=32,BN=64,BK=8,TM=2,TN=4",
                                             "05:BM=64,BN=32,BK=8,TM=4,TN=4", "06:BM=32,BN=64,BK=16,TM=4,TN=4")]
    assert precompile(fresh, spec, workers=2) == {}
    assert launcher.LAST_PRECOMPILE["kernels"] == len(fresh)
    assert launcher.LAST_PRECOMPILE["parent_s_per_kernel"] < 0.1, launcher.LAST_PRECOMPILE


def test_large_dynamic_shared_memory_is_opted_in(spec, compiled) -> None:
    from gpu import compile_config
    cfg = KernelConfig.parse("06:BM=256,BN=128,BK=32,TM=16,TN=8")
    ck = compile_config(cfg, spec)
    assert ck.dynamic_smem_bytes > spec.shared_bytes_per_block
    assert ck.kernel.max_dynamic_shared_size_bytes >= ck.dynamic_smem_bytes


# --------------------------------------------------------------------------------------------------
# Invalid configs never reach the compiler
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, limit", [
    ("04:BM=128,BN=128,BK=8,TM=3,TN=8", "BM % TM == 0"),
    ("03:BM=128,BN=128,BK=256,TM=16", "shared_memory_per_block"),
    ("01:BX=64,BY=32,COALESCED=1", "threads_per_block"),
])
def test_invalid_config_raises_before_compiling(text, limit, spec) -> None:
    from gpu import compile_config, launcher
    cfg = KernelConfig.parse(text)
    with pytest.raises(ConfigError) as info:
        compile_config(cfg, spec)
    assert info.value.limit == limit
    assert (cfg.info.file, cfg.name_expression) not in launcher._COMPILED


def test_invalid_config_is_recorded_not_raised(spec, problems) -> None:
    from gpu import run_config
    m = run_config(KernelConfig.parse("04:BM=128,BN=128,BK=8,TM=3,TN=8"), problems((7, 7, 7)), spec=spec)
    assert m.status == "invalid" and "BM % TM == 0" in m.reason and not m.times_s


def test_measurement_row_roundtrip(spec, compiled, problems) -> None:
    """A real measurement becomes a row that passes the schema check."""
    from experiments.sweep import check_row, make_row
    from gpu import detect_device, run_config, run_cublas
    p = problems((512, 512, 512))
    cub = run_cublas(p, **FAST)
    m = run_config(CONFIGS[0], p, spec=spec, **FAST)
    row = make_row(m, sweep="test", run_id="t", gpu=detect_device().to_json(spec.key), cublas=cub)
    assert check_row(row) == []
    assert dataclasses.replace(m, times_s=()).median_s is None
