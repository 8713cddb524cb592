"""Compile, launch, verify and time one kernel configuration on the real GPU.

The flow for one (config, size), in :func:`run_config`:

1. **validate** the config against the GPU spec (:func:`model.registry.validate`) and the size against the
   grid limits - before anything is compiled; a violation is a :class:`~model.errors.ConfigError` naming
   the limit (recorded as status ``"invalid"``);
2. **compile** ``gpu/kernels/<Rung.file>`` with NVRTC through ``cupy.RawModule(code, options,
   name_expressions=[cfg.name_expression])`` (cached per (file, name expression); failures are
   :class:`~gpu.errors.CompileError` with the NVRTC log, status ``"compile_error"``);
3. **check**: C is filled with NaN, the kernel runs once, and C must be finite, every element within the
   forward error bound of a dot product (``|C - ref|_ij <= gamma_K (|A||B|)_ij``, :func:`element_bound`)
   and the relative Frobenius error ``||C - ref||_F / ||ref||_F <= error_bound(K)`` against a float64
   reference of the same inputs (status ``"wrong_result"`` otherwise; no time is reported then);
4. **time**: warm-up launches, then at least 10 timed repetitions (CUDA events, L2 flushed before each,
   :mod:`gpu.timing`); the output is verified again after the last one.

Launch failures (too many resources, ...) are recorded as status ``"launch_error"``; a launch that
leaves the CUDA context unusable raises :class:`~gpu.errors.DeviceLost` (carrying the row to record).

cuBLAS (rung 00) is :func:`run_cublas`: ``cupy.matmul`` on float32, verified and timed the same way.
"""
from __future__ import annotations

import math
import multiprocessing
import os
import statistics
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from model.errors import ConfigError
from model.occupancy import occupancy
from model.registry import KernelConfig, geometry, grid, validate, validate_size
from model.spec import GPUSpec

from .device import cupy_module, device_spec
from .errors import CompileError, DeviceLost, TF32Enabled
from .timing import L2_POLICIES, MIN_REPS, flusher, plan_reps, time_launches

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
NVRTC_OPTIONS = ("-std=c++17",)
ATTRIBUTE_NAMES = ("num_regs", "shared_size_bytes", "local_size_bytes", "max_threads_per_block",
                   "const_size_bytes", "binary_version", "ptx_version")
MAX_GRID_Y = 65535          # gridDim.y and gridDim.z limit (CUDA)
MAX_GRID_X = 2**31 - 1
STATUSES = ("ok", "invalid", "compile_error", "launch_error", "wrong_result")


# --------------------------------------------------------------------------------------------------
# Correctness bound
# --------------------------------------------------------------------------------------------------

ERROR_BOUND_PER_SQRT_K = 2e-6
ERROR_BOUND_CAP = 1e-3


def error_bound(K: int) -> float:
    """Largest accepted relative Frobenius error of an FP32 product with inner dimension K.

    ``min(2e-6 * sqrt(K), 1e-3)``. Why: each output is a sum of K products of uniform[-1, 1) values;
    rounding in FP32 (unit roundoff u = 2^-24 = 6.0e-8) adds independent errors whose sum grows like
    sqrt(K), so the expected relative error of a correct kernel is about 0.7 u sqrt(K) = 4e-8 sqrt(K)
    whatever the summation order (1.7e-6 at K = 2048, 3.8e-6 at K = 8192); the bound leaves a 50x
    margin. A real bug is far above it: dropping one BK-tile of K gives about sqrt(BK / K)
    (3 % for BK = 8, K = 8192), a wrong row or column of C at least ~1 / sqrt(min(M, N)). The cap keeps
    the bound meaningful for very large K.
    """
    return min(ERROR_BOUND_PER_SQRT_K * math.sqrt(K), ERROR_BOUND_CAP)


# --------------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measurement:
    """The outcome of one config at one size (SI units: seconds, bytes).

    ``status`` is one of :data:`STATUSES`; ``times_s`` is empty unless it is ``"ok"``.
    ``occupancy_driver`` / ``occupancy_model`` are resident blocks per SM from
    ``cuOccupancyMaxActiveBlocksPerMultiprocessor`` and from :func:`model.occupancy.occupancy` with the
    compiled kernel's real register count and shared memory.
    """

    config: KernelConfig
    M: int
    N: int
    K: int
    status: str
    reason: str | None = None
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    dynamic_smem_bytes: int | None = None
    attributes: Mapping[str, int] | None = field(default=None, hash=False)
    occupancy_driver: int | None = None
    occupancy_model: int | None = None
    occupancy_limiter: str | None = None
    seed: int | None = None
    rel_error: float | None = None
    error_bound: float | None = None
    verified: bool = False
    l2_policy: str | None = None
    warmup: int = 0
    times_s: tuple[float, ...] = ()

    @property
    def median_s(self) -> float | None:
        return statistics.median(self.times_s) if self.times_s else None

    @property
    def flops(self) -> float:
        return 2.0 * self.M * self.N * self.K

    @property
    def flop_per_s(self) -> float | None:
        m = self.median_s
        return None if m is None else self.flops / m

    def to_json(self) -> dict[str, Any]:
        """The measurement part of a result row (the sweep adds provenance and the cuBLAS comparison)."""
        return {
            "status": self.status, "reason": self.reason,
            "grid": None if self.grid is None else list(self.grid),
            "block": None if self.block is None else list(self.block),
            "dynamic_smem_bytes": self.dynamic_smem_bytes,
            "attributes": None if self.attributes is None else dict(self.attributes),
            "occupancy_driver": self.occupancy_driver, "occupancy_model": self.occupancy_model,
            "occupancy_limiter": self.occupancy_limiter,
            "seed": self.seed, "rel_error": self.rel_error, "error_bound": self.error_bound,
            "verified": self.verified, "l2_policy": self.l2_policy, "warmup": self.warmup,
            "times_s": list(self.times_s), "median_s": self.median_s, "flop_per_s": self.flop_per_s,
        }


# --------------------------------------------------------------------------------------------------
# Compilation
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompiledKernel:
    """A compiled instantiation: the cupy RawKernel, its attributes and its launch geometry."""

    config: KernelConfig
    name_expression: str
    file: str
    kernel: Any = field(compare=False, repr=False)
    attributes: Mapping[str, int] = field(hash=False, compare=False)
    block: tuple[int, int, int]
    threads: int
    dynamic_smem_bytes: int


_COMPILED: dict[tuple[str, str], CompiledKernel | CompileError] = {}


def kernel_source(cfg: KernelConfig) -> str:
    """The CUDA source of ``cfg``'s rung (``gpu/kernels/<Rung.file>``)."""
    if cfg.info.file is None:
        raise ConfigError(f"{cfg.label} has no kernel source (cuBLAS is called through cupy.matmul)", limit="rung")
    return (KERNEL_DIR / cfg.info.file).read_text()


def _nvrtc_log(exc: BaseException) -> str | None:
    """The compiler log if ``exc`` is cupy's CompileException, else None."""
    if type(exc).__name__ != "CompileException":
        return None
    get = getattr(exc, "get_message", None)
    return get() if callable(get) else str(exc)


def _build(cp, src: str, expr: str):
    mod = cp.RawModule(code=src, options=NVRTC_OPTIONS, name_expressions=[expr])
    return mod.get_function(expr)


def compile_config(cfg: KernelConfig, spec: GPUSpec | None = None) -> CompiledKernel:
    """Compile ``cfg`` for the current device (cached per (file, name expression)).

    The config is validated first, without touching the GPU for the spec-free rules: an invalid config
    raises :class:`ConfigError` naming the limit and is never compiled. NVRTC failures raise (and cache)
    :class:`CompileError` with the log. Kernels needing more than the default dynamic shared memory
    get ``max_dynamic_shared_size_bytes`` raised here, once.
    """
    validate(cfg)                       # parameter rules: no GPU needed
    if cfg.rung == 0:
        raise ConfigError("rung 00 (cuBLAS) is not compiled; use run_cublas", limit="rung")
    spec = device_spec() if spec is None else spec
    validate(cfg, spec)                 # device limits
    expr, file = cfg.name_expression, cfg.info.file
    assert expr is not None and file is not None
    key = (file, expr)
    hit = _COMPILED.get(key)
    if isinstance(hit, CompileError):
        raise hit
    if hit is not None:
        return hit
    cp = cupy_module()
    src = kernel_source(cfg)
    try:
        ker = _build(cp, src, expr)
        attrs = {name: int(getattr(ker, name)) for name in ATTRIBUTE_NAMES}   # loads the module
    except Exception as exc:
        log = _nvrtc_log(exc)
        if log is None and isinstance(exc, _cuda_errors(cp)):       # cuModuleLoad refused the binary
            log = f"the driver refused to load the compiled module: {type(exc).__name__}: {exc}"
        if log is None:
            raise
        err = CompileError(expr, log)
        _COMPILED[key] = err
        raise err from exc
    g = geometry(cfg)
    if g.dynamic_smem_bytes > spec.shared_bytes_per_block:
        ker.max_dynamic_shared_size_bytes = g.dynamic_smem_bytes
    ck = CompiledKernel(cfg, expr, file, ker, attrs, g.block, g.threads, g.dynamic_smem_bytes)
    _COMPILED[key] = ck
    return ck


def _compile_job(job: tuple[str, str]) -> tuple[str, str, str | None]:
    """Pool worker: compile one (file, name expression) so that CuPy's on-disk cache holds it."""
    file, expr = job
    try:
        cp = cupy_module()
        _build(cp, (KERNEL_DIR / file).read_text(), expr)
        return file, expr, None
    except Exception as exc:  # noqa: BLE001 - reported back to the parent, which recompiles anyway
        return file, expr, _nvrtc_log(exc) or f"{type(exc).__name__}: {exc}"


def precompile(cfgs: Iterable[KernelConfig], spec: GPUSpec | None = None, workers: int | None = None,
               progress: Callable[[str], None] | None = None) -> dict[str, str]:
    """Compile many configs fast; return ``{config key: error message}`` for those that failed.

    NVRTC is the slow part (0.3 to 1 s per config). Worker processes (``spawn`` context) compile one
    name expression each with exactly the parent's ``RawModule`` arguments, which fills CuPy's on-disk
    kernel cache (``~/.cupy/kernel_cache``; the key covers source, options, arch and the name
    expressions); the parent then compiles every config itself and hits that cache. Invalid configs
    (:class:`ConfigError`) and NVRTC failures are returned, never raised; cuBLAS (rung 00) is skipped.
    """
    spec = device_spec() if spec is None else spec
    errors: dict[str, str] = {}
    todo: list[KernelConfig] = []
    for cfg in dict.fromkeys(cfgs):
        if cfg.rung == 0:
            continue
        try:
            validate(cfg, spec)
        except ConfigError as exc:
            errors[cfg.key] = str(exc)
            continue
        hit = _COMPILED.get((cfg.info.file, cfg.name_expression))
        if isinstance(hit, CompileError):
            errors[cfg.key] = str(hit)
        elif hit is None:
            todo.append(cfg)
    say = progress or (lambda s: None)
    workers = min(os.cpu_count() or 1, 16) if workers is None else workers
    if todo and workers > 1 and len(todo) > 1:
        jobs = list(dict.fromkeys((c.info.file, c.name_expression) for c in todo))
        say(f"precompile: {len(jobs)} kernels on {min(workers, len(jobs))} worker processes")
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(min(workers, len(jobs))) as pool:
            for i, (_, expr, err) in enumerate(pool.imap_unordered(_compile_job, jobs), 1):
                if err is not None:
                    say(f"precompile: {expr} failed in a worker")
                if i % 100 == 0 or i == len(jobs):
                    say(f"precompile: {i}/{len(jobs)} compiled")
    t0 = time.perf_counter()
    for cfg in todo:
        try:
            compile_config(cfg, spec)
        except (CompileError, ConfigError) as exc:
            errors[cfg.key] = str(exc)
    if todo:
        each = (time.perf_counter() - t0) / len(todo)
        LAST_PRECOMPILE.update(kernels=len(todo), parent_s_per_kernel=each, workers=workers)
        say(f"precompile: the parent loaded {len(todo)} kernels, {1e3 * each:.0f} ms each")
        if workers > 1 and len(todo) > 1 and each > 0.15:
            say("precompile: WARNING: the parent did not hit CuPy's on-disk kernel cache (about NVRTC's time per "
                "kernel); the worker pool saved nothing")
    return errors


LAST_PRECOMPILE: dict[str, float] = {}
"""Statistics of the last :func:`precompile` (kernels, parent_s_per_kernel, workers), for tests and logs."""


# --------------------------------------------------------------------------------------------------
# Inputs and the float64 reference
# --------------------------------------------------------------------------------------------------


@dataclass
class Problem:
    """Inputs of one size on the GPU: A (M x K), B (K x N), the output C and the float64 reference."""

    M: int
    N: int
    K: int
    seed: int
    A: Any
    B: Any
    C: Any
    ref: Any
    ref_norm: float

    def free(self) -> None:
        self.A = self.B = self.C = self.ref = None
        cupy_module().get_default_memory_pool().free_all_blocks()


def make_problem(M: int, N: int, K: int, seed: int) -> Problem:
    """Fresh uniform[-1, 1) float32 inputs from a generator seeded with ``seed``, and the float64 reference
    ``A64 @ B64`` (cuBLAS DGEMM of the same values) with its Frobenius norm."""
    M, N, K = validate_size(M, N, K)
    cp = cupy_module()
    rng = cp.random.default_rng(seed)
    A = rng.random((M, K), dtype=cp.float32)
    B = rng.random((K, N), dtype=cp.float32)
    A *= 2
    A -= 1
    B *= 2
    B -= 1
    ref = cp.matmul(A.astype(cp.float64), B.astype(cp.float64))
    C = cp.empty((M, N), dtype=cp.float32)
    ref_norm = float(cp.linalg.norm(ref.ravel()))
    return Problem(M, N, K, int(seed), A, B, C, ref, ref_norm)


UNIT_ROUNDOFF_FP32 = 2.0 ** -24
SMALLEST_NORMAL_FP32 = 2.0 ** -126


def element_bound(K: int, abs_product):
    """Per-element bound on the error of a correct FP32 product: ``gamma_K (|A||B|)_ij + K x 2^-126``.

    The standard forward error bound of a dot product of length K in floating point (Higham, *Accuracy
    and Stability of Numerical Algorithms*, 2nd ed., eq. 3.5): ``|fl(x.y) - x.y| <= gamma_K |x|.|y|``
    with ``gamma_K = K u / (1 - K u)`` and u = 2^-24 the FP32 unit roundoff. It holds for ANY summation
    order (tiles, split K, FMA), so a correct kernel can never exceed it; the absolute floor covers the
    products flushed to zero (FTZ: at most 2^-126 each). One wrong element - a skipped K tile, a
    stale shared-memory value, a wrong index - shows up far above it, wherever the Frobenius error of a
    large output dilutes it. ``abs_product`` is ``|A| @ |B|`` in float64."""
    ku = K * UNIT_ROUNDOFF_FP32
    gamma = ku / (1.0 - ku) if ku < 1 else float("inf")
    return abs_product * gamma + K * SMALLEST_NORMAL_FP32


def check_output(problem: Problem, xp=None) -> tuple[float | None, str | None]:
    """``(relative Frobenius error, None)`` when C passes, else ``(error or None, why)``.

    Two checks on the GPU, in float64: every element of C is finite, and every element is within the
    per-element forward error bound :func:`element_bound` (``|A| @ |B|`` is computed once per problem and
    kept on it). The relative Frobenius error ``||C - ref||_F / ||ref||_F`` is returned for the caller's
    bound (:func:`error_bound`). ``xp`` is the array module (default cupy; numpy for tests)."""
    cp = cupy_module() if xp is None else xp
    C = problem.C
    bad = int(C.size) - int(cp.count_nonzero(cp.isfinite(C)))
    if bad:
        return None, f"{bad} of {C.size} output values are NaN or Inf"
    diff = C.astype(cp.float64)
    diff -= problem.ref
    err = float(cp.linalg.norm(diff.ravel()))
    rel = err / problem.ref_norm if problem.ref_norm > 0 else err
    ab = getattr(problem, "abs_product", None)
    if ab is None:
        ab = cp.matmul(cp.abs(problem.A).astype(cp.float64), cp.abs(problem.B).astype(cp.float64))
        problem.abs_product = ab          # once per problem: every config at this size reuses it
    cp.abs(diff, out=diff)
    bound = element_bound(problem.K, ab)
    over = diff > bound
    n_over = int(cp.count_nonzero(over))
    if n_over:
        ratio = diff / bound
        worst = int(cp.argmax(ratio))
        i, j = divmod(worst, int(C.shape[1]))
        return rel, (f"{n_over} of {C.size} elements outside the per-element error bound gamma_K |A||B| "
                     f"(worst C[{i},{j}]: |C - ref| = {float(diff.ravel()[worst]):.3e} > "
                     f"{float(bound.ravel()[worst]):.3e}, K={problem.K}); relative Frobenius error {rel:.3e}")
    return rel, None


# --------------------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------------------


def _cuda_errors(cp) -> tuple[type[BaseException], ...]:
    return (cp.cuda.driver.CUDADriverError, cp.cuda.runtime.CUDARuntimeError)


def _context_alive(cp) -> bool:
    try:
        cp.cuda.runtime.deviceSynchronize()
        x = cp.ones(1, dtype=cp.float32)
        return float((x + 1).get()[0]) == 2.0
    except Exception:  # noqa: BLE001 - any failure here means the context is gone
        return False


def _measure(launch: Callable[[], object], problem: Problem, base: Measurement, *, reps: int, warmup: int,
             l2_policy: str, max_config_s: float, l2_bytes: int) -> Measurement:
    """Check, warm up and time ``launch`` (which writes ``problem.C``)."""
    cp = cupy_module()
    if l2_policy not in L2_POLICIES:
        raise ValueError(f"l2_policy must be one of {L2_POLICIES}, got {l2_policy!r}")
    if reps < MIN_REPS or warmup < 1:
        raise ValueError(f"need reps >= {MIN_REPS} and warmup >= 1, got reps={reps}, warmup={warmup}")
    bound = error_bound(problem.K)
    base = replace(base, seed=problem.seed, error_bound=bound, l2_policy=l2_policy)
    flush = flusher(l2_bytes).flush if l2_policy == "flush" else None
    stage = "check launch"
    try:
        problem.C.fill(np.nan)
        t_check = time_launches(launch, 1, None)[0]
        rel, why = check_output(problem)
        if why is not None or rel is None or not rel <= bound:
            return replace(base, status="wrong_result", rel_error=rel,
                           reason=why or f"relative Frobenius error {rel:.3e} > bound {bound:.3e} (K={problem.K})")
        stage = "warm-up"
        n_warm = warmup if t_check * (warmup + MIN_REPS) <= max_config_s else 1
        estimate = min(time_launches(launch, n_warm, flush))
        stage = "timed repetitions"
        times = time_launches(launch, plan_reps(estimate, reps, max_config_s), flush)
        rel2, why2 = check_output(problem)
    except _cuda_errors(cp) as exc:
        failed = replace(base, status="launch_error", reason=f"{stage}: {type(exc).__name__}: {exc}")
        if not _context_alive(cp):
            raise DeviceLost(f"{base.config.label} at {problem.M}x{problem.N}x{problem.K}: the CUDA context "
                             f"is unusable after {type(exc).__name__}: {exc}",
                             replace(failed, reason=failed.reason + " (CUDA context lost)")) from exc
        return failed
    if why2 is not None or rel2 is None or not rel2 <= bound:
        return replace(base, status="wrong_result", rel_error=rel2 if rel2 is not None else rel,
                       reason="output wrong after the timed repetitions (passed the first check): "
                              + (why2 or f"relative Frobenius error {rel2:.3e} > bound {bound:.3e}"))
    return replace(base, status="ok", rel_error=max(rel, rel2), verified=True, warmup=n_warm,
                   times_s=tuple(times))


def occupancy_pair(ck: CompiledKernel, spec: GPUSpec) -> tuple[int, int | None, str | None]:
    """Blocks per SM from the driver and from the model (with the real register count), and the model's
    limiter; the model side is None if it rejects the block."""
    cp = cupy_module()
    driver = int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
        ck.kernel.kernel.ptr, ck.threads, ck.dynamic_smem_bytes))
    try:
        occ = occupancy(spec, ck.threads, ck.attributes["num_regs"],
                        ck.attributes["shared_size_bytes"] + ck.dynamic_smem_bytes)
    except ConfigError:
        return driver, None, None
    return driver, occ.blocks_per_sm, occ.limiter


def run_config(cfg: KernelConfig, problem: Problem, *, spec: GPUSpec | None = None, reps: int = 20,
               warmup: int = 2, l2_policy: str = "flush", max_config_s: float = 2.0,
               extra_dynamic_smem: int = 0) -> Measurement:
    """Validate, compile, check and time ``cfg`` on ``problem``; never raises for a bad config, a compile
    error, a refused launch or a wrong result (those are the returned status), only for a lost context
    (:class:`DeviceLost`) or misuse. ``extra_dynamic_smem`` bytes of dynamic shared memory that the kernel
    does not use are added to each launch (forced residency: experiments/residency.py)."""
    if cfg.rung == 0:
        return run_cublas(problem, reps=reps, warmup=warmup, l2_policy=l2_policy, max_config_s=max_config_s)
    spec = device_spec() if spec is None else spec
    M, N, K = problem.M, problem.N, problem.K
    base = Measurement(cfg, M, N, K, status="invalid", seed=problem.seed, error_bound=error_bound(K),
                       l2_policy=l2_policy)
    try:
        validate(cfg, spec)
        g = geometry(cfg)
        gx, gy, gz = grid(cfg, M, N)
        if gx > MAX_GRID_X or gy > MAX_GRID_Y or gz > MAX_GRID_Y:
            raise ConfigError(f"{cfg.label}: grid ({gx}, {gy}, {gz}) exceeds CUDA's limits "
                              f"({MAX_GRID_X}, {MAX_GRID_Y}, {MAX_GRID_Y}) at M={M}, N={N}", limit="grid_size")
    except ConfigError as exc:
        return replace(base, reason=str(exc))
    base = replace(base, grid=(gx, gy, gz), block=g.block, dynamic_smem_bytes=g.dynamic_smem_bytes)
    try:
        ck = compile_config(cfg, spec)
    except CompileError as exc:
        return replace(base, status="compile_error", reason=exc.log)
    except ConfigError as exc:  # pragma: no cover - validated above
        return replace(base, reason=str(exc))
    cp = cupy_module()
    if extra_dynamic_smem:
        ck = replace(ck, dynamic_smem_bytes=ck.dynamic_smem_bytes + int(extra_dynamic_smem))
        ck.kernel.max_dynamic_shared_size_bytes = max(int(ck.kernel.max_dynamic_shared_size_bytes),
                                                      ck.dynamic_smem_bytes)
        base = replace(base, dynamic_smem_bytes=ck.dynamic_smem_bytes)
    try:
        occ_driver, occ_model, limiter = occupancy_pair(ck, spec)
    except _cuda_errors(cp) as exc:
        return replace(base, status="launch_error", attributes=ck.attributes,
                       reason=f"occupancy query: {type(exc).__name__}: {exc}")
    base = replace(base, attributes=ck.attributes, occupancy_driver=occ_driver, occupancy_model=occ_model,
                   occupancy_limiter=limiter)
    args = (problem.A, problem.B, problem.C, np.int32(M), np.int32(N), np.int32(K))

    def launch() -> None:
        ck.kernel((gx, gy, gz), g.block, args, shared_mem=ck.dynamic_smem_bytes)

    if g.split_k > 1:
        # Split-K: the slices atomicAdd their partial sums into C, so C is zeroed before every launch (timed
        # with it: it is part of the operation). The NaN poison of the check is therefore overwritten by
        # zeros; a tile or slice the kernel fails to add shows up as a large error against the reference.
        kernel_only = launch
        c_bytes = int(problem.C.nbytes)

        def launch() -> None:
            cp.cuda.runtime.memsetAsync(problem.C.data.ptr, 0, c_bytes, cp.cuda.get_current_stream().ptr)
            kernel_only()

    return _measure(launch, problem, base, reps=reps, warmup=warmup, l2_policy=l2_policy,
                    max_config_s=max_config_s, l2_bytes=spec.l2_bytes)


def check_tf32_off() -> None:
    """Refuse to time cuBLAS as the FP32 reference when ``CUPY_TF32`` enables TF32 tensor cores."""
    value = os.environ.get("CUPY_TF32", "0").strip()
    if value not in ("", "0"):
        raise TF32Enabled(f"CUPY_TF32={value!r} is set: cupy.matmul would use TF32 tensor cores, so cuBLAS "
                          "would not be an FP32 reference; unset it (or set 0) before running")


CUBLAS = KernelConfig.make(0)


def run_cublas(problem: Problem, *, reps: int = 20, warmup: int = 2, l2_policy: str = "flush",
               max_config_s: float = 2.0, l2_bytes: int | None = None) -> Measurement:
    """Check and time ``cupy.matmul`` on the float32 inputs (cuBLAS, true FP32): rung 00."""
    check_tf32_off()
    cp = cupy_module()
    if l2_bytes is None:
        l2_bytes = device_spec().l2_bytes
    base = Measurement(CUBLAS, problem.M, problem.N, problem.K, status="invalid")

    def launch() -> None:
        cp.matmul(problem.A, problem.B, out=problem.C)

    return _measure(launch, problem, base, reps=reps, warmup=warmup, l2_policy=l2_policy,
                    max_config_s=max_config_s, l2_bytes=l2_bytes)

