"""Run a sweep of kernel configs x problem sizes on the GPU and append one JSON line per result.

    python -m experiments.sweep ladder                      # run, writing experiments/results/<gpu>/ladder.jsonl
    python -m experiments.sweep regtile --dry-run --gpu h200   # no GPU: what would run, with the model's prediction
    python -m experiments.sweep --summary FILE [FILE ...]   # short table of result files
    python -m experiments.sweep --list                      # the shipped sweeps

Sweeps are data (``experiments/sweeps/<name>.toml``); rows follow ``experiments/SCHEMA.md``. A run is
resumable: rows already in the output file with a final status (for the same GPU) are skipped, a
truncated last line (a run killed mid-write) is cut off. Per size, the inputs, the float64 reference
and the cuBLAS timing are made once; every config is compiled up front in parallel.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import secrets
import statistics
import sys
import time
import tomllib
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from gpu.launcher import STATUSES
from gpu.timing import MIN_REPS, plan_reps
from model.errors import ConfigError, GemmscopeError
from model.registry import RUNGS, KernelConfig, classic_configs, rung, validate, validate_size, violations

HERE = Path(__file__).resolve().parent
SWEEP_DIR = HERE / "sweeps"
RESULTS_DIR = HERE / "results"
SCHEMA = "gemmscope.measurement"
SCHEMA_VERSION = 1
FINAL_STATUSES = frozenset(STATUSES)


class SweepError(GemmscopeError, ValueError):
    """A sweep file, a results file or a command line is invalid; the message says where and why."""


Size = tuple[int, int, int]


# --------------------------------------------------------------------------------------------------
# Sweep files
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """One row to produce: a config at a size."""

    config: KernelConfig
    M: int
    N: int
    K: int

    @property
    def size(self) -> Size:
        return (self.M, self.N, self.K)

    @property
    def key(self) -> tuple[str, int, int, int]:
        return (self.config.key, self.M, self.N, self.K)


@dataclass(frozen=True)
class Group:
    """One ``[[group]]`` of a sweep file: rungs, either their classic configs or a parameter grid, sizes."""

    rungs: tuple[int, ...]
    sizes: tuple[Size, ...]
    classic: bool = False
    grid: Mapping[str, tuple[int, ...]] = field(default_factory=dict, hash=False)
    valid_only: bool = True

    def configs(self, gpu=None) -> tuple[list[KernelConfig], list[tuple[KernelConfig, str]]]:
        """The group's configs in order, and the ``(config, reason)`` pairs dropped as invalid on ``gpu``."""
        if self.classic:
            cands = classic_configs(self.rungs)
        else:
            cands = []
            for r in self.rungs:
                names = RUNGS[r].params
                for values in itertools.product(*(self.grid[n] for n in names)):
                    cands.append(KernelConfig(r, tuple(zip(names, values))))
        keep, dropped = [], []
        for cfg in cands:
            bad = violations(cfg, gpu)
            if bad and self.valid_only:
                dropped.append((cfg, bad[0][1]))
            else:
                keep.append(cfg)
        return keep, dropped


@dataclass(frozen=True)
class Sweep:
    name: str
    description: str
    groups: tuple[Group, ...]
    path: str = ""

    def tasks(self, gpu=None, sizes: Sequence[Size] | None = None) -> tuple[list[Task], list[tuple[KernelConfig, str]]]:
        """Every (config, size) in file order, without duplicates; ``sizes`` replaces each group's sizes.
        Also returns the configs dropped as invalid on ``gpu`` (once each)."""
        tasks: dict[tuple, Task] = {}
        dropped: dict[str, tuple[KernelConfig, str]] = {}
        for g in self.groups:
            cfgs, drop = g.configs(gpu)
            for cfg, why in drop:
                dropped.setdefault(cfg.key, (cfg, why))
            for (M, N, K), cfg in itertools.product(sizes or g.sizes, cfgs):
                t = Task(cfg, M, N, K)
                tasks.setdefault(t.key, t)
        return list(tasks.values()), list(dropped.values())


_GROUP_KEYS = {"rungs", "classic", "sizes", "valid_only"}
_TOP_KEYS = {"description", "group"}
_PARAMS = sorted({p for r in RUNGS.values() for p in r.params})


def parse_size(value: Any, where: str = "size") -> Size:
    """``2048`` -> (2048, 2048, 2048); ``[M, N, K]`` or ``"MxNxK"`` -> (M, N, K); every entry an integer >= 1."""
    if isinstance(value, str):
        parts = value.lower().split("x")
        try:
            nums = [int(p) for p in parts]
        except ValueError:
            raise SweepError(f"{where}: {value!r} is not a size (expected N or MxNxK)") from None
        value = nums[0] if len(nums) == 1 else nums
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value] * 3
    if not isinstance(value, (list, tuple)) or len(value) != 3 \
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise SweepError(f"{where}: {value!r} is not a size (expected an integer N for N x N x N, or [M, N, K])")
    try:
        return validate_size(*value)
    except ConfigError as exc:
        raise SweepError(f"{where}: {exc}") from None


def _int_list(value: Any, where: str) -> tuple[int, ...]:
    vals = value if isinstance(value, list) else [value]
    if not vals or not all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
        raise SweepError(f"{where}: must be an integer or a non-empty list of integers, got {value!r}")
    return tuple(dict.fromkeys(vals))


def parse_sweep(data: Mapping[str, Any], name: str, path: str = "") -> Sweep:
    """Validate a parsed sweep document (see SCHEMA.md, "Sweep files")."""
    where = path or name
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise SweepError(f"{where}: unknown top-level key {unknown[0]!r} (allowed: {', '.join(sorted(_TOP_KEYS))})")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise SweepError(f"{where}: 'description' must be a string")
    raw_groups = data.get("group")
    if not isinstance(raw_groups, list) or not raw_groups:
        raise SweepError(f"{where}: needs at least one [[group]] table")
    groups = []
    for i, g in enumerate(raw_groups, 1):
        at = f"{where}: group {i}"
        if not isinstance(g, Mapping):
            raise SweepError(f"{at}: must be a table")
        unknown = sorted(set(g) - _GROUP_KEYS - set(_PARAMS))
        if unknown:
            raise SweepError(f"{at}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(_GROUP_KEYS))} and "
                             f"the parameters {', '.join(_PARAMS)})")
        if "rungs" not in g:
            raise SweepError(f"{at}: missing 'rungs'")
        raw_rungs = g["rungs"] if isinstance(g["rungs"], list) else [g["rungs"]]
        if not raw_rungs:
            raise SweepError(f"{at}: 'rungs' is empty")
        try:
            rungs = tuple(dict.fromkeys(rung(r).number for r in raw_rungs))
        except ConfigError as exc:
            raise SweepError(f"{at}: {exc}") from None
        classic = g.get("classic", False)
        valid_only = g.get("valid_only", True)
        for k, v in (("classic", classic), ("valid_only", valid_only)):
            if not isinstance(v, bool):
                raise SweepError(f"{at}: {k!r} must be true or false, got {v!r}")
        params = {k: _int_list(v, f"{at}: {k}") for k, v in g.items() if k in _PARAMS}
        if classic and params:
            raise SweepError(f"{at}: give either 'classic = true' or parameter lists ({', '.join(params)}), not both")
        if not classic:
            used = set()
            for r in rungs:
                missing = [p for p in RUNGS[r].params if p not in params]
                if missing:
                    raise SweepError(f"{at}: rung {RUNGS[r].label} needs parameter list(s) {', '.join(missing)} "
                                     "(or 'classic = true')")
                used.update(RUNGS[r].params)
            unused = [p for p in params if p not in used]
            if unused:
                raise SweepError(f"{at}: parameter(s) {', '.join(unused)} taken by none of the group's rungs")
        if "sizes" not in g:
            raise SweepError(f"{at}: missing 'sizes'")
        raw_sizes = g["sizes"]
        if not isinstance(raw_sizes, list) or not raw_sizes:
            raise SweepError(f"{at}: 'sizes' must be a non-empty list of N or [M, N, K]")
        sizes = tuple(dict.fromkeys(parse_size(s, f"{at}: sizes[{j}]") for j, s in enumerate(raw_sizes)))
        groups.append(Group(rungs, sizes, classic, params, valid_only))
    return Sweep(name, description, tuple(groups), path)


def sweep_names() -> list[str]:
    return sorted(p.stem for p in SWEEP_DIR.glob("*.toml"))


def load_sweep(name_or_path: str | Path) -> Sweep:
    """Load ``experiments/sweeps/<name>.toml`` or a path to a sweep file."""
    text = str(name_or_path)
    path = Path(text) if (text.endswith(".toml") or os.sep in text) else SWEEP_DIR / f"{text}.toml"
    if not path.is_file():
        raise SweepError(f"no sweep {text!r} (file {path} not found); shipped sweeps: {', '.join(sweep_names())}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise SweepError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise SweepError(f"{path}: not a text file (a sweep file is TOML)") from None
    return parse_sweep(data, path.stem, str(path))


# --------------------------------------------------------------------------------------------------
# Result rows: schema, reading (resume) and writing
# --------------------------------------------------------------------------------------------------

_NUM = (int, float)
_OPT_NUM = (int, float, type(None))
# key -> allowed types (bool is never accepted where int/float is expected)
ROW_TYPES: dict[str, tuple[type, ...]] = {
    "schema": (str,), "schema_version": (int,), "sweep": (str,), "run_id": (str,), "date": (str,),
    "gpu": (dict,), "rung": (int,), "name": (str,), "params": (dict,), "config_key": (str,), "label": (str,),
    "M": (int,), "N": (int,), "K": (int,), "status": (str,), "reason": (str, type(None)),
    "grid": (list, type(None)), "block": (list, type(None)), "dynamic_smem_bytes": (int, type(None)),
    "attributes": (dict, type(None)), "occupancy_driver": (int, type(None)), "occupancy_model": (int, type(None)),
    "occupancy_limiter": (str, type(None)), "seed": (int, type(None)), "rel_error": _OPT_NUM,
    "error_bound": _OPT_NUM, "verified": (bool,), "l2_policy": (str, type(None)), "warmup": (int,),
    "times_s": (list,), "median_s": _OPT_NUM, "flop_per_s": _OPT_NUM, "cublas_median_s": _OPT_NUM,
    "cublas_flop_per_s": _OPT_NUM,
}
GPU_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,), "key": (str,), "cc": (str,), "sm_count": (int,), "clock_hz": _NUM, "clock_now_hz": _OPT_NUM,
    "mem_clock_now_hz": _OPT_NUM, "max_clock_hz": _OPT_NUM, "power_w": _OPT_NUM, "temperature_c": _OPT_NUM,
    "driver_version": (int,), "cuda_runtime_version": (int,), "nvrtc_version": (str,), "cupy_version": (str,),
}


def _type_problems(d: Mapping, types: Mapping[str, tuple[type, ...]], prefix: str = "") -> list[str]:
    out = []
    for k, allowed in types.items():
        if k not in d:
            out.append(f"missing key {prefix}{k!r}")
            continue
        v = d[k]
        if (isinstance(v, bool) and bool not in allowed) or not isinstance(v, allowed):
            out.append(f"{prefix}{k}: {type(v).__name__} {v!r} is not {'/'.join(t.__name__ for t in allowed)}")
    return out


def check_row(row: Mapping) -> list[str]:
    """Everything wrong with a measurement row (empty when it follows SCHEMA.md), including the invariants
    of an ``ok`` row (verified, error within the bound, >= 10 raw times, median and FLOP/s consistent)."""
    if not isinstance(row, Mapping):
        return [f"row is a {type(row).__name__}, not an object"]
    p = _type_problems(row, ROW_TYPES)
    if p:
        return p
    p += _type_problems(row["gpu"], GPU_TYPES, "gpu.")
    if row["schema"] != SCHEMA or row["schema_version"] != SCHEMA_VERSION:
        p.append(f"schema {row['schema']!r} v{row['schema_version']} is not {SCHEMA!r} v{SCHEMA_VERSION}")
    if row["status"] not in STATUSES:
        p.append(f"status {row['status']!r} is not one of {', '.join(STATUSES)}")
    try:
        d = datetime.fromisoformat(row["date"])
        if d.utcoffset() is None or d.utcoffset().total_seconds() != 0:
            p.append(f"date {row['date']!r} is not in UTC")
    except ValueError:
        p.append(f"date {row['date']!r} is not ISO 8601")
    try:
        cfg = KernelConfig.parse(row["config_key"])
        if row["status"] != "invalid":
            validate(cfg)
        if cfg.key != row["config_key"] or cfg.rung != row["rung"] or cfg.p != row["params"]:
            p.append(f"config_key {row['config_key']!r} does not match rung {row['rung']} / params {row['params']}")
    except ConfigError as exc:
        p.append(f"config_key {row['config_key']!r} is not a valid config: {exc}")
    if not all(isinstance(t, float) and t > 0 for t in row["times_s"]):
        p.append("times_s must hold positive floats")
    flops = 2.0 * row["M"] * row["N"] * row["K"]
    if row["status"] == "ok":
        t = row["times_s"]
        if row["verified"] is not True:
            p.append("status ok but verified is not true")
        if row["rel_error"] is None or row["error_bound"] is None or not row["rel_error"] <= row["error_bound"]:
            p.append(f"status ok but rel_error {row['rel_error']} exceeds error_bound {row['error_bound']}")
        if len(t) < MIN_REPS:
            p.append(f"status ok with {len(t)} times (< {MIN_REPS})")
        elif row["median_s"] != statistics.median(t):
            p.append(f"median_s {row['median_s']} != median(times_s) {statistics.median(t)}")
        elif row["flop_per_s"] is None or not math.isclose(row["flop_per_s"], flops / row["median_s"], rel_tol=1e-12):
            p.append(f"flop_per_s {row['flop_per_s']} != 2MNK/median_s")
        if row["cublas_median_s"] is None:
            p.append("status ok but no cuBLAS time (cublas_median_s)")
    else:
        if row["times_s"] or row["median_s"] is not None or row["flop_per_s"] is not None:
            p.append(f"status {row['status']} must carry no times")
        if not row["reason"]:
            p.append(f"status {row['status']} needs a reason")
        if row["verified"]:
            p.append(f"status {row['status']} cannot be verified")
    if row["cublas_median_s"] is not None and (
            row["cublas_flop_per_s"] is None
            or not math.isclose(row["cublas_flop_per_s"], flops / row["cublas_median_s"], rel_tol=1e-12)):
        p.append("cublas_flop_per_s != 2MNK/cublas_median_s")
    return p


@dataclass
class ResultsFile:
    """What a results file holds: its rows and the state of its last line."""

    path: Path
    rows: list[dict]
    truncated: bytes = b""     # an incomplete last line (a run killed mid-write): cut off by repair()
    unterminated: bool = False  # the last row is complete JSON but lacks its newline: completed by repair()


def _is_row_start(line: bytes) -> bool:
    return line.lstrip().startswith(b"{")


def read_results(path: str | Path) -> ResultsFile:
    """Read a JSON Lines results file.

    A last line that is complete JSON without its newline is kept (``unterminated``: :func:`repair` adds
    the newline); a last line that is the start of a row cut off mid-write is reported in ``truncated``
    and not returned. Anything else that is not a JSON object per line (a file of another kind, binary
    data, a corrupt line before the end) raises :class:`SweepError`: such a file is never cut."""
    path = Path(path)
    if not path.exists():
        return ResultsFile(path, [])
    if not path.is_file():
        raise SweepError(f"{path} is not a file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SweepError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if b"\0" in data:
        raise SweepError(f"{path} is not a results file (binary data); refusing to touch it")
    lines = data.split(b"\n")
    tail = lines.pop()            # after the last newline: b"" for a complete file
    rows = []
    truncated = b""
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            if i == len(lines) and not tail and _is_row_start(line) and rows:
                truncated = line + b"\n"
                break
            raise SweepError(f"{path}:{i}: not valid JSON ({exc}); not a results file, or a corrupt one: "
                             "fix or remove it (it is never cut)") from None
        if not isinstance(row, dict):
            raise SweepError(f"{path}:{i}: a row must be a JSON object; not a results file")
        rows.append(row)
    unterminated = False
    if tail.strip():
        try:
            row = json.loads(tail)
        except ValueError:
            row = None
        if isinstance(row, dict):
            rows.append(row)
            unterminated = True
        elif _is_row_start(tail) and (rows or tail.lstrip().startswith(b'{"schema"')):
            truncated = tail
        else:
            raise SweepError(f"{path}:{len(lines) + 1}: not a JSON row; not a results file: refusing to touch it "
                             "(use another --out)")
    return ResultsFile(path, rows, truncated, unterminated)


# Exclusive locks (fcntl.flock) on results files held by this process: path -> open file.
_LOCKS: dict[Path, object] = {}


def lock_results(path: str | Path):
    """Take an exclusive lock on a results file for the rest of the run (kept until :class:`RowWriter`
    closes it); refuses when another process holds it (two sweeps writing one file)."""
    import fcntl  # noqa: PLC0415 - POSIX only; sweeps run on Linux
    path = Path(path)
    key = path.resolve() if path.exists() else path.absolute()
    if key in _LOCKS:
        return _LOCKS[key]
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "ab")
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        raise SweepError(f"{path} is locked by another process (another sweep writing it?): wait for it to "
                         "finish or write elsewhere with --out") from None
    _LOCKS[path.resolve()] = fh
    return fh


def unlock_results(path: str | Path) -> None:
    fh = _LOCKS.pop(Path(path).resolve(), None)
    if fh is not None:
        fh.close()            # closing the file releases the lock


def repair(results: ResultsFile) -> str:
    """Lock the file, re-read it under the lock (``results`` is updated in place), then cut an
    incomplete last line off or add the missing newline of a complete last row; says what it did
    ("" when nothing)."""
    lock_results(results.path)
    fresh = read_results(results.path)
    results.rows, results.truncated, results.unterminated = fresh.rows, fresh.truncated, fresh.unterminated
    if results.unterminated:
        with results.path.open("ab") as fh:
            fh.write(b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        results.unterminated = False
        return "completed the last row (its newline was missing; the row is kept)"
    if not results.truncated:
        return ""
    size = results.path.stat().st_size
    with results.path.open("r+b") as fh:
        fh.truncate(size - len(results.truncated))
        fh.flush()
        os.fsync(fh.fileno())
    results.truncated = b""
    return "cut off an incomplete last line (a run was killed while writing it)"


def done_keys(results: ResultsFile, gpu_key: str) -> set[tuple[str, int, int, int]]:
    """(config_key, M, N, K) of rows with a final status; refuses rows of another GPU or schema."""
    done = set()
    for i, row in enumerate(results.rows, 1):
        if row.get("schema") != SCHEMA:
            raise SweepError(f"{results.path}: row {i} has schema {row.get('schema')!r}, not {SCHEMA!r}: "
                             "write measurement rows to a file of their own")
        key = (row.get("gpu") or {}).get("key")
        if key != gpu_key:
            raise SweepError(f"{results.path}: row {i} was measured on GPU {key!r}, this run is on {gpu_key!r}: "
                             "refusing to mix GPUs in one file (use --out)")
        if row.get("status") in FINAL_STATUSES:
            done.add((row["config_key"], row["M"], row["N"], row["K"]))
    return done


class RowWriter:
    """Appends rows to a JSON Lines file, each flushed and fsynced before the next is measured."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_results(self.path)           # exclusive while this writer is open
        self._fh = self.path.open("a", encoding="utf-8")

    def write(self, row: Mapping) -> None:
        line = json.dumps(row, allow_nan=False, separators=(",", ":"))
        self._fh.write(line + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()
        unlock_results(self.path)

    def __enter__(self) -> "RowWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def make_row(m, *, sweep: str, run_id: str, gpu: Mapping, cublas=None) -> dict:
    """A schema-1 row from a :class:`gpu.launcher.Measurement` (``m``), its run's provenance and the cuBLAS
    measurement at the same size (``cublas``; its time is used only if it was verified)."""
    cfg = m.config
    body = m.to_json()
    for k in ("rel_error", "error_bound", "median_s", "flop_per_s"):
        body[k] = _finite(body[k])
    cub_t = cublas.median_s if cublas is not None and cublas.status == "ok" else None
    row = {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "sweep": sweep, "run_id": run_id, "date": now_iso(),
           "gpu": dict(gpu), "rung": cfg.rung, "name": cfg.info.slug, "params": cfg.p, "config_key": cfg.key,
           "label": cfg.label, "M": m.M, "N": m.N, "K": m.K}
    row.update(body)
    row["cublas_median_s"] = cub_t
    row["cublas_flop_per_s"] = None if cub_t is None else 2.0 * m.M * m.N * m.K / cub_t
    return row


# --------------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------------


class CupyBackend:
    """The real GPU (cupy); the runner talks to the device only through these methods."""

    def __init__(self) -> None:
        from gpu import device, launcher  # noqa: PLC0415 - lazy: dry runs and tests need no GPU
        self.device, self.launcher = device, launcher
        self.info = device.detect_device()
        self.spec = device.device_spec(self.info)

    def gpu_block(self) -> dict:
        return self.info.to_json(self.spec.key, self.device.sample_smi(self.info.pci_bus_id))

    def preflight(self) -> None:
        self.launcher.check_tf32_off()

    def precompile(self, cfgs: Sequence[KernelConfig], workers: int | None, say: Callable[[str], None]) -> dict:
        return self.launcher.precompile(cfgs, self.spec, workers=workers, progress=say)

    def problem(self, M: int, N: int, K: int, seed: int):
        return self.launcher.make_problem(M, N, K, seed)

    def cublas(self, problem, **opts):
        return self.launcher.run_cublas(problem, l2_bytes=self.spec.l2_bytes, **opts)

    def run(self, cfg: KernelConfig, problem, **opts):
        return self.launcher.run_config(cfg, problem, spec=self.spec, **opts)

    def free(self, problem) -> None:
        problem.free()


@dataclass
class RunOptions:
    reps: int = 20
    warmup: int = 2
    l2_policy: str = "flush"
    max_config_s: float = 2.0
    time_limit_s: float | None = None
    limit: int | None = None
    seed: int | None = None
    workers: int | None = None

    def measure_opts(self) -> dict:
        return {"reps": self.reps, "warmup": self.warmup, "l2_policy": self.l2_policy,
                "max_config_s": self.max_config_s}


def _progress_line(n: int, total: int, m, cublas) -> str:
    size = f"{m.M}x{m.N}x{m.K}"
    head = f"[{n}/{total}] {size:>16} {m.config.label:<34}"
    if m.status != "ok":
        reason = (m.reason or "").strip().splitlines()[0][:100] if m.reason else ""
        return f"{head} {m.status}: {reason}"
    pct = ""
    if cublas is not None and cublas.status == "ok" and m.config.rung != 0:
        pct = f" ({100 * cublas.median_s / m.median_s:.0f} % of cuBLAS)"
    return f"{head} {m.flop_per_s / 1e9:9.0f} GFLOP/s{pct}"


def run_sweep(sweep: Sweep, backend, out: Path, opts: RunOptions, *, sizes: Sequence[Size] | None = None,
              log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True)) -> dict[str, int]:
    """Measure every pending (config, size) of ``sweep`` and append a row for each to ``out``.

    Returns counts per status (plus ``"skipped"`` already done and ``"pending"`` left by a time limit).
    Raises :class:`gpu.errors.DeviceLost` after recording the row of a launch that killed the context.
    """
    from gpu.errors import DeviceLost  # noqa: PLC0415

    backend.preflight()
    spec = backend.spec
    tasks, dropped = sweep.tasks(spec, sizes)
    results = read_results(out)
    what = repair(results)             # locks the file for this run, re-reads it, mends its last line
    if what:
        log(f"{out}: {what}")
    done = done_keys(results, spec.key)
    pending = [t for t in tasks if t.key not in done]
    counts = {"skipped": len(tasks) - len(pending)}
    if opts.limit is not None:
        pending = pending[:opts.limit]
    if spec.key.startswith("unmatched_"):
        log(f"note: no gpus/*.toml matches this device; using a spec built from its attributes ({spec.key})")
    log(f"sweep {sweep.name} on {spec.name} ({spec.key}): {len(tasks)} rows, {counts['skipped']} already in {out}, "
        f"{len(pending)} to run; {len(dropped)} configs dropped as invalid for {spec.key}")
    if not pending:
        return counts
    t0 = time.monotonic()
    errors = backend.precompile([t.config for t in pending if t.config.rung != 0], opts.workers, log)
    log(f"precompiled in {time.monotonic() - t0:.1f} s ({len(errors)} failed or invalid)")
    run_id = f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
    base_seed = secrets.randbelow(2**31) if opts.seed is None else opts.seed
    all_sizes = list(dict.fromkeys(t.size for t in tasks))
    by_size: dict[Size, list[Task]] = {}
    for t in pending:
        by_size.setdefault(t.size, []).append(t)
    n = 0
    stopped = False
    with RowWriter(out) as writer:
        for size, size_tasks in by_size.items():
            if opts.time_limit_s is not None and time.monotonic() - t0 > opts.time_limit_s:
                stopped = True
                break
            seed = base_seed + all_sizes.index(size)
            problem = backend.problem(*size, seed)
            try:
                cublas = backend.cublas(problem, **opts.measure_opts())
                gpu = backend.gpu_block()
                for task in size_tasks:
                    if opts.time_limit_s is not None and time.monotonic() - t0 > opts.time_limit_s:
                        stopped = True
                        break
                    try:
                        m = cublas if task.config.rung == 0 else backend.run(task.config, problem,
                                                                             **opts.measure_opts())
                    except DeviceLost as exc:
                        if exc.measurement is not None:
                            writer.write(make_row(exc.measurement, sweep=sweep.name, run_id=run_id, gpu=gpu,
                                                  cublas=cublas))
                        raise
                    writer.write(make_row(m, sweep=sweep.name, run_id=run_id, gpu=gpu, cublas=cublas))
                    counts[m.status] = counts.get(m.status, 0) + 1
                    n += 1
                    log(_progress_line(n, len(pending), m, cublas))
            finally:
                backend.free(problem)
            if stopped:
                break
    if stopped:
        counts["pending"] = len(pending) - n
        log(f"time limit of {opts.time_limit_s:.0f} s reached: {counts['pending']} rows left; run again to resume")
    log(f"sweep {sweep.name}: {n} rows written to {out} in {time.monotonic() - t0:.1f} s: "
        + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return counts


# --------------------------------------------------------------------------------------------------
# Dry run and summary (no GPU)
# --------------------------------------------------------------------------------------------------


def dry_run(sweep: Sweep, spec, out: Path | None, opts: RunOptions, sizes: Sequence[Size] | None = None,
            emit: Callable[[str], None] = print) -> dict[str, Any]:
    """List what a run would do on ``spec``'s GPU, with the model's prediction per row; no GPU needed.

    Rows already in ``out`` (for that GPU) are left out, as a run would skip them. Returns counts and the
    model's estimate of the timed device time (a lower bound: the model assumes latency is hidden)."""
    from model.timing import predict  # noqa: PLC0415

    tasks, dropped = sweep.tasks(spec, sizes)
    done: set = set()
    if out is not None and out.exists():
        done = done_keys(read_results(out), spec.key)     # a file the real run would refuse: refused here too
    pending = [t for t in tasks if t.key not in done]
    n_done = len(tasks) - len(pending)
    if opts.limit is not None:
        pending = pending[:opts.limit]
    emit(f"# sweep {sweep.name}: {sweep.description}")
    emit(f"# GPU {spec.name} ({spec.key}); output {out}")
    emit(f"{'M':>6} {'N':>6} {'K':>6}  {'config':<34} {'model GFLOP/s':>13} {'model time':>11}  bound")
    device_s = 0.0
    invalid = 0
    for t in pending:
        head = f"{t.M:>6} {t.N:>6} {t.K:>6}  {t.config.label:<34}"
        if t.config.rung == 0:
            cub = spec.cublas_sgemm_flop_per_s.get(t.M) if t.M == t.N == t.K else None
            flops = 2.0 * t.M * t.N * t.K
            if cub:
                device_s += flops / cub * (1 + opts.warmup + opts.reps)
            emit(f"{head} {'-' if not cub else f'{cub / 1e9:.0f}':>13} {'':>11}  (cuBLAS: measured, not modelled)")
            continue
        try:
            p = predict(spec, t.config, t.M, t.N, t.K)
        except ConfigError as exc:
            invalid += 1
            emit(f"{head} invalid: {exc}")
            continue
        reps = plan_reps(p.time_s, opts.reps, opts.max_config_s)
        device_s += p.time_s * (1 + opts.warmup + reps)
        emit(f"{head} {p.flop_per_s / 1e9:13.0f} {p.time_s * 1e3:9.3f} ms  {p.bound}")
    emit(f"# {len(pending)} rows to run ({len(tasks)} in the sweep, {n_done} "
         f"already done, {invalid} invalid, {len(dropped)} configs dropped as invalid for {spec.key}); "
         f"model estimate of timed kernel time {device_s:.0f} s (a lower bound)")
    return {"rows": len(pending), "total": len(tasks), "done": n_done,
            "dropped": len(dropped), "invalid": invalid, "device_s": device_s}


def summarize(paths: Iterable[str | Path]) -> str:
    """A short table per results file: rows per status and the best verified GFLOP/s of each rung."""
    out = []
    for path in paths:
        res = read_results(path)
        rows = [r for r in res.rows if r.get("schema") == SCHEMA]
        if not rows:
            raise SweepError(f"{path}: no measurement rows (schema {SCHEMA}): "
                             + ("the file is empty" if not res.rows else "not a results file"))
        by_status: dict[str, int] = {}
        for r in rows:
            by_status[r["status"]] = by_status.get(r["status"], 0) + 1
        gpu = rows[0]["gpu"]
        out.append(f"{path}: {len(rows)} rows on {gpu.get('name')} ({gpu.get('key')}): "
                   + ", ".join(f"{k} {v}" for k, v in sorted(by_status.items())))
        occ = [r for r in rows if r["occupancy_driver"] is not None]
        if occ:
            same = sum(r["occupancy_model"] == r["occupancy_driver"] for r in occ)
            out.append(f"  occupancy: model == driver in {same} of {len(occ)} compiled configs")
        out.append(f"  {'rung':<24} {'ok/rows':>9} {'best GFLOP/s':>13} {'% cuBLAS':>9}  best config @ size")
        for number in sorted({r["rung"] for r in rows}):
            rr = [r for r in rows if r["rung"] == number]
            ok = [r for r in rr if r["status"] == "ok"]
            if not ok:
                out.append(f"  {RUNGS[number].label:<24} {0:>4}/{len(rr):<4}")
                continue
            best = max(ok, key=lambda r: r["flop_per_s"])
            cub = best.get("cublas_flop_per_s")
            pct = f"{100 * best['flop_per_s'] / cub:.0f}" if cub else "-"
            out.append(f"  {RUNGS[number].label:<24} {len(ok):>4}/{len(rr):<4} {best['flop_per_s'] / 1e9:13.0f} "
                       f"{pct:>9}  {best['label']} @ {best['M']}x{best['N']}x{best['K']}")
    return "\n".join(out)


# --------------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    from analysis.cli import Parser, nonneg_int, positive_float, positive_int  # noqa: PLC0415
    ap = Parser(
        prog="python -m experiments.sweep",
        description="Run a sweep (experiments/sweeps/NAME.toml) on the GPU, appending one JSON line per "
                    "(config, size) to the results file; resumable. See experiments/SCHEMA.md.")
    ap.add_argument("name", nargs="?",
                    help=f"sweep name or path to a sweep .toml (shipped: {', '.join(sweep_names())})")
    ap.add_argument("--out", type=Path, help="results file (default experiments/results/<gpu key>/<sweep>.jsonl)")
    ap.add_argument("--dry-run", action="store_true",
                    help="list what would run, with the model's prediction, on --gpu's spec; needs no GPU")
    ap.add_argument("--gpu", help=f"GPU spec key: for --dry-run (default {DRY_RUN_GPU}); on a real run, the device "
                                  "must match it")
    ap.add_argument("--limit", type=positive_int, help="run at most N pending rows (N >= 1)")
    ap.add_argument("--sizes", nargs="+", metavar="SIZE", help="replace the sweep's sizes: N (square) or MxNxK")
    ap.add_argument("--reps", type=positive_int, default=20, help="timed repetitions per config (>= 10; fewer for slow "
                    "configs, down to 10, to keep one config's timed work under --max-config-s) [20]")
    ap.add_argument("--warmup", type=positive_int, default=2, help="warm-up launches before timing (>= 1) [2]")
    ap.add_argument("--max-config-s", type=positive_float, default=2.0, help="timed work per config, seconds [2.0]")
    ap.add_argument("--l2-policy", choices=("flush", "warm"), default="flush",
                    help="flush L2 before every timed repetition, or not [flush]")
    ap.add_argument("--time-limit", type=positive_float, help="start no new row after this many seconds (resume later)")
    ap.add_argument("--seed", type=nonneg_int, help="base seed of the inputs (default: random, stored per row)")
    ap.add_argument("--workers", type=positive_int, help="compile processes (default: CPU cores, at most 16)")
    ap.add_argument("--gpus", metavar="all|ID,...", help="run on several GPUs of this machine through Dask, "
                    "one worker per GPU (requirements-cluster.txt; see README 'Many GPUs and hosts')")
    ap.add_argument("--scheduler", metavar="ADDRESS", help="run on the workers of a running Dask scheduler "
                    "(tcp://host:8786); rows come back to this process, which writes them")
    ap.add_argument("--min-workers", type=positive_int, default=1, help="with --scheduler: wait for this many workers [1]")
    ap.add_argument("--summary", nargs="+", type=Path, metavar="FILE", help="print a summary of results files and exit")
    ap.add_argument("--list", action="store_true", help="list the shipped sweeps and exit")
    return ap


DRY_RUN_GPU = "rtx4060"   # the default GPU of every analysis command (analyze.py); a real run uses the device


def default_out(sweep: Sweep, gpu_key: str) -> Path:
    return RESULTS_DIR / gpu_key / f"{sweep.name}.jsonl"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    err = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    try:
        if args.summary:
            for f in args.summary:
                if not f.is_file():
                    raise SweepError(f"--summary {f}: no such file")
            print(summarize(args.summary))
            return 0
        if args.list:
            for name in sweep_names():
                s = load_sweep(name)
                print(f"{name:<10} {s.description}")
            return 0
        if not args.name:
            raise SweepError("give a sweep NAME (or --summary / --list); see --help")
        if args.reps < MIN_REPS or args.warmup < 1 or args.max_config_s <= 0:
            raise SweepError(f"need --reps >= {MIN_REPS}, --warmup >= 1 and --max-config-s > 0")
        sweep = load_sweep(args.name)
        sizes = [parse_size(s, "--sizes") for s in args.sizes] if args.sizes else None
        opts = RunOptions(reps=args.reps, warmup=args.warmup, l2_policy=args.l2_policy,
                          max_config_s=args.max_config_s, time_limit_s=args.time_limit, limit=args.limit,
                          seed=args.seed, workers=args.workers)
        if args.dry_run:
            from model.spec import load_gpu  # noqa: PLC0415
            spec = load_gpu(args.gpu or DRY_RUN_GPU)
            dry_run(sweep, spec, args.out or default_out(sweep, spec.key), opts, sizes)
            return 0
        if args.gpus or args.scheduler:   # many GPUs / hosts: experiments/distributed.py
            from experiments import distributed as dist  # noqa: PLC0415
            if args.gpus and args.scheduler:
                raise SweepError("give --gpus or --scheduler, not both")
            engine = dist.EngineOptions(gpus=dist.parse_gpus(args.gpus) if args.gpus else None,
                                        scheduler=args.scheduler, gpu_key=args.gpu.lower() if args.gpu else None,
                                        min_workers=max(1, args.min_workers), run=opts)
            dist.run_distributed(sweep, engine, out=args.out, sizes=sizes)
            return 0
        backend = CupyBackend()
        if args.gpu and backend.spec.key != args.gpu.lower():
            raise SweepError(f"--gpu {args.gpu} given, but the device is {backend.spec.name} ({backend.spec.key})")
        run_sweep(sweep, backend, args.out or default_out(sweep, backend.spec.key), opts, sizes=sizes)
        return 0
    except GemmscopeError as exc:
        err(f"error: {exc}")
        return exit_status(exc)


def exit_status(exc: BaseException) -> int:
    """The command-line exit status of an error: 3 no usable GPU, 4 the GPU was lost mid-run, 2 otherwise."""
    from gpu.errors import DeviceLost, GPUUnavailable  # noqa: PLC0415
    if isinstance(exc, GPUUnavailable):
        return 3
    if isinstance(exc, DeviceLost):
        return 4
    return 2


if __name__ == "__main__":
    sys.exit(main())
