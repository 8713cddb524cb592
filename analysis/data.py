"""Reading the shipped measurements (JSON Lines) into typed rows.

Files live under ``experiments/results/<gpu key>/*.jsonl``; each line is one JSON object. Two kinds of
line share the folders and are told apart by their ``schema`` field:

* ``"gemmscope.measurement"`` - one (rung, config, size) timing: what this module returns;
* ``"gemmscope.ncu"`` - hardware counters of one config: skipped here (read by ``explain``).

Only ``schema_version`` 1 is understood. A malformed line raises :class:`DataError` naming the file
and line; the caller decides whether that is fatal (the CLI prints it and exits 2).
"""
from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from model.errors import ConfigError, GemmscopeError
from model.registry import KernelConfig

__all__ = [
    "DEFAULT_DATA", "MEASUREMENT_SCHEMA", "NCU_SCHEMA", "SCHEMA_VERSION", "STATUSES",
    "DataError", "NoDataError", "Device", "Measurement",
    "find_files", "load", "parse_row", "resolve_gpu", "latest", "scored", "status_counts",
]

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT / "experiments" / "results" / "h200"
"""The shipped H200 data set (may be empty until the H200 sweep is committed)."""

MEASUREMENT_SCHEMA = "gemmscope.measurement"
NCU_SCHEMA = "gemmscope.ncu"
SCHEMA_VERSION = 1
STATUSES = ("ok", "invalid", "compile_error", "launch_error", "wrong_result")


class DataError(GemmscopeError, ValueError):
    """A measurement file or line is missing, unreadable or malformed (the message names file and line)."""


class NoDataError(DataError):
    """There are no usable measurements where some were expected."""


@dataclass(frozen=True)
class Device:
    """The ``gpu`` object of a row: what CUDA reported for the device that ran it."""

    name: str
    key: str | None
    cc_major: int | None
    cc_minor: int | None
    sm_count: int | None
    clock_hz: float | None = None
    clock_now_hz: float | None = None


@dataclass(frozen=True)
class Measurement:
    """One measured (rung, config, size) row, in SI units (seconds, FLOP/s)."""

    source: str                 # "file:line"
    device: Device
    config: KernelConfig
    M: int
    N: int
    K: int
    status: str
    reason: str
    verified: bool
    num_regs: int | None        # attributes.num_regs: the compiler's registers per thread
    median_s: float | None
    flop_per_s: float | None
    times_s: tuple[float, ...] = ()
    cublas_flop_per_s: float | None = None
    run_id: str = ""
    date: str = ""
    sweep: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False, repr=False)

    @property
    def rung(self) -> int:
        return self.config.rung

    @property
    def key(self) -> str:
        return self.config.key

    @property
    def label(self) -> str:
        return self.config.label

    @property
    def size(self) -> tuple[int, int, int]:
        return (self.M, self.N, self.K)

    @property
    def ok(self) -> bool:
        """Status ok, verified, and a positive performance figure."""
        return self.status == "ok" and self.verified and bool(self.flop_per_s)

    @property
    def scored(self) -> bool:
        """Counted in the model-versus-measured statistics: an ok, verified, modelled rung (>= 1)."""
        return self.ok and self.rung >= 1


# --------------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------------


def _positive_int(value: Any, what: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DataError(f"{where}: field {what!r} must be a positive integer, got {value!r}")
    return value


def _optional_number(value: Any, what: str, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise DataError(f"{where}: field {what!r} must be a positive number or null, got {value!r}")
    return float(value)


def _cc(gpu: Mapping[str, Any], where: str) -> tuple[int | None, int | None]:
    """Compute capability from ``cc`` ("9.0", 9.0, [9, 0], {"major": 9, "minor": 0}) or cc_major/cc_minor."""
    if "cc_major" in gpu:
        return int(gpu["cc_major"]), int(gpu.get("cc_minor", 0))
    cc = gpu.get("cc")
    if cc is None:
        return None, None
    try:
        if isinstance(cc, Mapping):
            return int(cc["major"]), int(cc["minor"])
        if isinstance(cc, (list, tuple)):
            return int(cc[0]), int(cc[1])
        major, _, minor = str(cc).partition(".")
        return int(major), int(minor or 0)
    except (KeyError, IndexError, TypeError, ValueError):
        raise DataError(f"{where}: field 'gpu.cc' must look like \"9.0\", got {cc!r}") from None


def _device(gpu: Any, where: str) -> Device:
    if not isinstance(gpu, Mapping):
        raise DataError(f"{where}: field 'gpu' must be an object, got {gpu!r}")
    name = gpu.get("name")
    if not isinstance(name, str) or not name.strip():
        raise DataError(f"{where}: field 'gpu.name' must be a non-empty string, got {name!r}")
    major, minor = _cc(gpu, where)
    sms = gpu.get("sm_count")
    if sms is not None:
        sms = _positive_int(sms, "gpu.sm_count", where)
    key = gpu.get("key")
    return Device(name=name.strip(), key=str(key) if key else None, cc_major=major, cc_minor=minor, sm_count=sms,
                  clock_hz=_optional_number(gpu.get("clock_hz"), "gpu.clock_hz", where),
                  clock_now_hz=_optional_number(gpu.get("clock_now_hz"), "gpu.clock_now_hz", where))


def parse_row(obj: Any, where: str = "<row>") -> Measurement | None:
    """One parsed JSON line -> :class:`Measurement`; ``None`` for an ncu line. Raises :class:`DataError`."""
    if not isinstance(obj, Mapping):
        raise DataError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    schema = obj.get("schema")
    if schema == NCU_SCHEMA:
        return None
    if schema != MEASUREMENT_SCHEMA:
        raise DataError(f"{where}: field 'schema' must be {MEASUREMENT_SCHEMA!r} or {NCU_SCHEMA!r}, got {schema!r}")
    version = obj.get("schema_version")
    if isinstance(version, bool) or version != SCHEMA_VERSION:
        raise DataError(f"{where}: schema_version {version!r} is not supported (this reader knows {SCHEMA_VERSION})")
    for req in ("gpu", "rung", "M", "N", "K", "status"):
        if req not in obj:
            raise DataError(f"{where}: field {req!r} missing")
    device = _device(obj["gpu"], where)
    rung = obj["rung"]
    if isinstance(rung, bool) or not isinstance(rung, int):
        raise DataError(f"{where}: field 'rung' must be an integer, got {rung!r}")
    params = obj.get("params") or {}
    if not isinstance(params, Mapping):
        raise DataError(f"{where}: field 'params' must be an object, got {params!r}")
    try:
        cfg = KernelConfig.from_json({"rung": rung, "params": params})
    except (ConfigError, TypeError, ValueError) as e:
        raise DataError(f"{where}: bad config (rung {rung}, params {dict(params)}): {e}") from None
    key = obj.get("config_key")
    if key is not None and key != cfg.key:
        raise DataError(f"{where}: config_key {key!r} does not match rung and params ({cfg.key!r})")
    M, N, K = (_positive_int(obj[d], d, where) for d in ("M", "N", "K"))
    status = obj["status"]
    if status not in STATUSES:
        raise DataError(f"{where}: field 'status' must be one of {', '.join(STATUSES)}, got {status!r}")
    verified = obj.get("verified") is True
    median_s = _optional_number(obj.get("median_s"), "median_s", where)
    flop_per_s = _optional_number(obj.get("flop_per_s"), "flop_per_s", where)
    if flop_per_s is None and median_s is not None:
        flop_per_s = 2.0 * M * N * K / median_s
    if status == "ok" and verified and flop_per_s is None:
        raise DataError(f"{where}: an ok, verified row needs 'flop_per_s' or 'median_s'")
    attrs = obj.get("attributes") or {}
    regs = attrs.get("num_regs") if isinstance(attrs, Mapping) else None
    if regs is not None:
        regs = _positive_int(regs, "attributes.num_regs", where)
    times = obj.get("times_s") or ()
    if not isinstance(times, (list, tuple)):
        raise DataError(f"{where}: field 'times_s' must be a list, got {times!r}")
    return Measurement(
        source=where, device=device, config=cfg, M=M, N=N, K=K, status=status,
        reason=str(obj.get("reason") or ""), verified=verified, num_regs=regs, median_s=median_s,
        flop_per_s=flop_per_s, times_s=tuple(float(t) for t in times),
        cublas_flop_per_s=_optional_number(obj.get("cublas_flop_per_s"), "cublas_flop_per_s", where),
        run_id=str(obj.get("run_id") or ""), date=str(obj.get("date") or ""), sweep=str(obj.get("sweep") or ""),
        raw=obj)


def find_files(paths: Iterable[str | Path]) -> list[Path]:
    """The ``*.jsonl`` files named by ``paths`` (files as given; folders searched recursively, sorted)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(p.rglob("*.jsonl")))
        elif p.is_file():
            out.append(p)
        else:
            raise DataError(f"{p}: no such file or folder")
    return out


def load(paths: Sequence[str | Path] | None = None, forced_residency: bool = False) -> list[Measurement]:
    """Every measurement row in ``paths`` (files or folders; default: the shipped H200 folder).

    ncu lines are skipped; blank lines are ignored. Rows run at a forced residency (extra unused shared
    memory, ``target_blocks_per_sm`` set: experiments/residency.py) are a different experiment from the
    config at its own occupancy and are skipped unless ``forced_residency``. A missing *default* folder gives an empty list
    (the data may not be shipped yet); a missing explicit path raises :class:`DataError`.
    """
    if not paths:
        if not DEFAULT_DATA.is_dir():
            return []
        paths = [DEFAULT_DATA]
    rows: list[Measurement] = []
    for f in find_files(paths):
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise DataError(f"{f}: not a JSON Lines text file (undecodable byte at offset {e.start})") from None
        except OSError as e:
            raise DataError(f"{f}: cannot read: {e.strerror or e}") from None
        for i, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{f}:{i}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                hint = (" (the last line of the file: a run cut off mid-write? `python -m experiments.sweep` "
                        "cuts it off when it resumes)") if i == len(text.splitlines()) else ""
                raise DataError(f"{where}: invalid JSON: {e}{hint}") from None
            if not forced_residency and isinstance(obj, dict) and obj.get("target_blocks_per_sm") is not None:
                continue
            row = parse_row(obj, where)
            if row is not None:
                rows.append(row)
    return rows


# --------------------------------------------------------------------------------------------------
# Selection
# --------------------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def resolve_gpu(device: Device):
    """The :class:`~model.spec.GPUSpec` for a row's device: :func:`model.spec.match_device` on name,
    compute capability and SM count, else the row's ``gpu.key`` through :func:`model.spec.load_gpu`."""
    from model.spec import SpecError, load_gpu, match_device
    # The row's own key first: a broken spec file of some other GPU must not stop this one's data.
    if device.key:
        try:
            spec = load_gpu(device.key)
        except SpecError:
            spec = None
        if spec is not None and (device.cc_major is None or device.sm_count is None or (
                (spec.cc_major, spec.cc_minor, spec.sm_count) == (device.cc_major, device.cc_minor or 0,
                                                                   device.sm_count))):
            return spec
    if device.cc_major is not None and device.sm_count is not None:
        try:
            spec = match_device(device.name, device.cc_major, device.cc_minor or 0, device.sm_count)
        except SpecError as e:
            raise DataError(f"cannot identify the measured device {device.name!r}: a spec file in gpus/ is "
                            f"broken: {e}") from None
        if spec is not None:
            return spec
    cc = "?" if device.cc_major is None else f"{device.cc_major}.{device.cc_minor}"
    raise DataError(f"no GPU spec in gpus/ matches the measured device {device.name!r} (cc {cc}, "
                    f"{device.sm_count} SMs, key {device.key!r}); add a gpus/<key>.toml for it")


def describe_files(paths: Sequence[str | Path]) -> str:
    """Why ``paths`` gave no measurement rows, in a few words per file (empty, ncu rows, other schema)."""
    out = []
    for f in find_files(paths):
        try:
            text = f.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            out.append(f"{f}: unreadable")
            continue
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if not lines:
            out.append(f"{f} is empty")
            continue
        schemas = Counter()
        for ln in lines:
            try:
                obj = json.loads(ln)
                schemas[obj.get("schema") if isinstance(obj, dict) else type(obj).__name__] += 1
            except json.JSONDecodeError:
                schemas["not JSON"] += 1
        what = ", ".join(f"{n} {k}" for k, n in schemas.most_common())
        out.append(f"{f} holds {what} rows" + (" (Nsight Compute counters, not timings)"
                                               if NCU_SCHEMA in schemas else ""))
    return "; ".join(out) if out else "no *.jsonl files there"


def latest(rows: Iterable[Measurement]) -> list[Measurement]:
    """One row per (device, config, size): the one with the latest ``date`` (ties: the one read last).
    Repeated sweeps append rows; the newest measurement of a point replaces older ones."""
    best: dict[tuple, tuple[str, int, Measurement]] = {}
    for i, r in enumerate(rows):
        k = (r.device.name, r.key, r.size)
        if k not in best or (r.date, i) >= best[k][:2]:
            best[k] = (r.date, i, r)
    return [v[2] for v in sorted(best.values(), key=lambda v: v[1])]


def scored(rows: Iterable[Measurement]) -> list[Measurement]:
    """Rows the comparison scores: status ok, verified, rung >= 1 (cuBLAS is measured, not modelled)."""
    return [r for r in rows if r.scored]


def status_counts(rows: Iterable[Measurement]) -> dict[str, int]:
    """How many rows have each status (``ok`` rows that failed verification count as ``unverified``)."""
    c: Counter = Counter()
    for r in rows:
        c["unverified" if r.status == "ok" and not r.verified else r.status] += 1
    return dict(c)


# --------------------------------------------------------------------------------------------------
# Nsight Compute rows (experiments/ncu_run.py: schema "gemmscope.ncu")
# --------------------------------------------------------------------------------------------------


def load_ncu(path: str | Path, *, kernels_only: bool = False) -> list[dict]:
    """The ``ok`` rows of a ``gemmscope.ncu`` JSON Lines file (empty if the file is absent).

    Blank or unreadable lines and rows of other schemas are skipped; ``kernels_only`` also drops
    cuBLAS (rung 00) and rows whose config this registry no longer knows."""
    path = Path(path)
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if row.get("schema", "gemmscope.ncu") != "gemmscope.ncu" or row.get("status", "ok") != "ok":
            continue
        if kernels_only:
            try:
                if KernelConfig.parse(row["config_key"]).rung == 0 or not row.get("metrics"):
                    continue
            except Exception:  # noqa: BLE001 - a config this registry no longer knows: not simulable
                continue
        rows.append(row)
    return rows

