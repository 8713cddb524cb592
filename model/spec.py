"""GPU spec files (``gpus/<key>.toml``): loading, validation and device matching.

A spec file describes one GPU board: chip-wide figures (SM count, clock, DRAM bandwidth, L2 size),
per-SM limits that drive the occupancy model, and optionally real measurements. Every numeric field
is an inline table ``{ value = ..., source = "..." }``; the loader checks each value and requires a
non-empty source, then returns a :class:`GPUSpec` holding plain values (SI base units: bytes, hertz,
bytes per second, FLOP per second) with the sources kept in a separate mapping.

Peak FP32 throughput is not stored; it is derived (:attr:`GPUSpec.peak_fp32_flop_per_s`).
"""

from __future__ import annotations

import functools
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from .errors import GemmscopeError

__all__ = [
    "GPU_DIR",
    "SCHEMA_VERSION",
    "GPUSpec",
    "SpecError",
    "TIMING_FIELDS",
    "TIMING_REQUIRED",
    "TimingField",
    "list_gpus",
    "load_gpu",
    "match_device",
    "parse_gpu",
]

SCHEMA_VERSION = 1
"""The only ``schema_version`` this loader understands."""

GPU_DIR: Path = Path(__file__).resolve().parent.parent / "gpus"
"""Folder of the shipped spec files (``<repo>/gpus``)."""


class SpecError(GemmscopeError, ValueError):
    """A spec file is missing, unparsable or invalid. The message names the file and the field."""


# --------------------------------------------------------------------------------------------------
# The spec object
# --------------------------------------------------------------------------------------------------


def _empty() -> Mapping[Any, Any]:
    return MappingProxyType({})


@dataclass(frozen=True)
class GPUSpec:
    """One GPU, values only; ``sources`` maps the TOML path of each numeric field to its source.

    Units are in the names where they matter: ``*_hz`` hertz, ``*_bytes`` bytes, ``*_bytes_per_s``
    bytes per second, ``*_flop_per_s`` FLOP per second. Register counts are 32-bit registers;
    thread/warp/block counts are plain counts. All ``*_per_sm`` and ``*_sm`` limits are per SM.
    """

    key: str
    """File key, e.g. ``"h200"`` (the file is ``gpus/h200.toml``)."""
    name: str
    """Human-readable board name."""
    device_names: tuple[str, ...]
    """Names a CUDA device of this kind reports (matched by :func:`match_device`)."""
    arch: str
    """Compile target, e.g. ``"sm_90"``."""
    # chip
    cc_major: int
    cc_minor: int
    sm_count: int
    fp32_lanes_per_sm: int
    """FP32 FMA lanes ("CUDA cores") per SM; one FMA = 2 FLOP per lane per cycle."""
    boost_clock_hz: float
    """Maximum (boost) SM clock in Hz."""
    dram_bandwidth_bytes_per_s: float
    """Nominal (datasheet) DRAM bandwidth in B/s, decimal units (1 GB/s = 1e9 B/s)."""
    l2_bytes: int
    """L2 cache size in bytes."""
    warp_size: int
    """Threads per warp."""
    max_threads_per_block: int
    # per SM
    max_threads_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    """32-bit registers per SM."""
    max_registers_per_block: int
    max_registers_per_thread: int
    register_alloc_unit: int
    """Registers are allocated per warp in units of this many registers."""
    warp_alloc_granularity: int
    """Warps per block are rounded up to a multiple of this for the per-block register check."""
    sub_partitions: int
    """SM sub-partitions = warp schedulers per SM."""
    shared_bytes_per_sm: int
    """Shared memory per SM at the largest carveout, bytes."""
    shared_bytes_per_block: int
    """Shared memory per block without opt-in (the 48 KiB static limit), bytes."""
    shared_bytes_per_block_optin: int
    """Shared memory per block with the dynamic opt-in, bytes."""
    shared_alloc_unit: int
    """Shared memory allocation granularity per block, bytes."""
    shared_reserved_per_block: int
    """Shared memory the CUDA runtime reserves per resident block, bytes."""
    shared_carveout_steps_bytes: tuple[int, ...]
    """Supported shared-memory carveouts per SM, ascending, bytes; the last equals shared_bytes_per_sm."""
    l1_shared_bytes: int
    """Combined L1 + shared memory per SM, bytes."""
    shared_banks: int
    shared_bank_bytes: int
    """Width of one shared-memory bank, bytes."""
    int32_lanes_per_sm: int
    ld_st_units_per_sm: int
    """Load/store units per SM: a warp's memory instruction (global, local or shared) occupies the SM's
    load/store pipe ``warp_size / ld_st_units_per_sm`` cycles whatever its width (GA102/AD10x: 16, so 2
    cycles; GV100/GA100/GH100: 32, so 1 cycle)."""
    # measured (optional)
    copy_bandwidth_bytes_per_s: float | None
    """Measured device-to-device copy bandwidth (read + write bytes), B/s; None if not measured."""
    cublas_sgemm_flop_per_s: Mapping[int, float] = field(default_factory=_empty, hash=False)
    """Measured cuBLAS FP32 SGEMM throughput by square size M = N = K, FLOP/s; empty if none."""
    timing: Mapping[str, float] = field(default_factory=_empty, hash=False)
    """The optional ``[timing]`` table: measured or published latencies (cycles), bandwidths (B/s), the
    sustained SM clock (Hz) and the launch overhead (s), keyed as in :data:`TIMING_FIELDS`; only the
    fields the file gives (empty if it has no table). :attr:`missing_timing` lists the absent ones."""
    sources: Mapping[str, str] = field(default_factory=_empty, hash=False, repr=False)
    """Source string per TOML field path, e.g. ``sources["chip.sm_count"]``."""
    path: str = ""
    """The file this spec was read from (absolute path when loaded by :func:`load_gpu`)."""

    @property
    def compute_capability(self) -> str:
        """Compute capability as text, e.g. ``"9.0"``."""
        return f"{self.cc_major}.{self.cc_minor}"

    @property
    def peak_fp32_flop_per_s(self) -> float:
        """Peak non-tensor FP32 throughput, FLOP/s: 2 (FMA) x SMs x FP32 lanes/SM x boost clock."""
        return 2.0 * self.sm_count * self.fp32_lanes_per_sm * self.boost_clock_hz

    @property
    def warps_per_scheduler(self) -> int:
        """Resident warps per warp scheduler (sub-partition) at full occupancy."""
        return self.max_warps_per_sm // self.sub_partitions

    @property
    def missing_timing(self) -> tuple[str, ...]:
        """Keys of :data:`TIMING_REQUIRED` that this spec's ``[timing]`` table lacks (the model estimates them)."""
        return tuple(k for k in TIMING_REQUIRED if k not in self.timing)

    def source_of(self, attr: str) -> str:
        """Source string of a numeric attribute, by attribute name (``"sm_count"``) or TOML path."""
        if attr in self.sources:
            return self.sources[attr]
        try:
            return self.sources[_ATTR_TO_PATH[attr]]
        except KeyError:
            raise KeyError(f"{self.path}: no source recorded for {attr!r}") from None


# --------------------------------------------------------------------------------------------------
# Schema: one table drives parsing, validation and the attribute <-> TOML path map
# --------------------------------------------------------------------------------------------------

_Kind = Literal["pos_int", "nonneg_int", "pos_float", "int_steps"]


@dataclass(frozen=True)
class _Field:
    section: str  # "chip" or "sm"
    key: str  # key inside the TOML section
    attr: str  # GPUSpec attribute
    kind: _Kind

    @property
    def path(self) -> str:
        return f"{self.section}.{self.key}"


_REQUIRED: tuple[_Field, ...] = (
    _Field("chip", "compute_capability_major", "cc_major", "pos_int"),
    _Field("chip", "compute_capability_minor", "cc_minor", "nonneg_int"),
    _Field("chip", "sm_count", "sm_count", "pos_int"),
    _Field("chip", "fp32_lanes_per_sm", "fp32_lanes_per_sm", "pos_int"),
    _Field("chip", "boost_clock_hz", "boost_clock_hz", "pos_float"),
    _Field("chip", "dram_bandwidth_bytes_per_s", "dram_bandwidth_bytes_per_s", "pos_float"),
    _Field("chip", "l2_bytes", "l2_bytes", "pos_int"),
    _Field("chip", "warp_size", "warp_size", "pos_int"),
    _Field("chip", "max_threads_per_block", "max_threads_per_block", "pos_int"),
    _Field("sm", "max_threads", "max_threads_per_sm", "pos_int"),
    _Field("sm", "max_warps", "max_warps_per_sm", "pos_int"),
    _Field("sm", "max_blocks", "max_blocks_per_sm", "pos_int"),
    _Field("sm", "registers", "registers_per_sm", "pos_int"),
    _Field("sm", "max_registers_per_block", "max_registers_per_block", "pos_int"),
    _Field("sm", "max_registers_per_thread", "max_registers_per_thread", "pos_int"),
    _Field("sm", "register_alloc_unit", "register_alloc_unit", "pos_int"),
    _Field("sm", "warp_alloc_granularity", "warp_alloc_granularity", "pos_int"),
    _Field("sm", "sub_partitions", "sub_partitions", "pos_int"),
    _Field("sm", "shared_bytes", "shared_bytes_per_sm", "pos_int"),
    _Field("sm", "shared_bytes_per_block", "shared_bytes_per_block", "pos_int"),
    _Field("sm", "shared_bytes_per_block_optin", "shared_bytes_per_block_optin", "pos_int"),
    _Field("sm", "shared_alloc_unit", "shared_alloc_unit", "pos_int"),
    _Field("sm", "shared_reserved_per_block", "shared_reserved_per_block", "nonneg_int"),
    _Field("sm", "shared_carveout_steps_bytes", "shared_carveout_steps_bytes", "int_steps"),
    _Field("sm", "l1_shared_bytes", "l1_shared_bytes", "pos_int"),
    _Field("sm", "shared_banks", "shared_banks", "pos_int"),
    _Field("sm", "shared_bank_bytes", "shared_bank_bytes", "pos_int"),
    _Field("sm", "int32_lanes", "int32_lanes_per_sm", "pos_int"),
    _Field("sm", "ld_st_units", "ld_st_units_per_sm", "pos_int"),
)

_MEASURED_KEYS = ("copy_bandwidth_bytes_per_s", "cublas_sgemm_flop_per_s")
_TOP_KEYS = ("schema_version", "key", "name", "device_names", "arch", "chip", "sm", "measured", "timing")
_SECTION_KEYS: dict[str, frozenset[str]] = {
    s: frozenset(f.key for f in _REQUIRED if f.section == s) for s in ("chip", "sm")
}
_ATTR_TO_PATH: dict[str, str] = {f.attr: f.path for f in _REQUIRED} | {
    k: f"measured.{k}" for k in _MEASURED_KEYS
}
_KEY_RE = re.compile(r"[a-z0-9_]+")


@dataclass(frozen=True)
class TimingField:
    """One field of the ``[timing]`` table: its unit, plausibility range and meaning."""

    key: str
    unit: str
    """``"cycles"`` (SM clock cycles), ``"Hz"``, ``"B/s"`` (decimal bytes per second), ``"s"`` or ``"FLOP/s"``."""
    low: float
    high: float
    """Plausibility range: a value outside ``[low, high]`` is refused as a likely unit error."""
    required: bool
    """Part of a complete table (every shipped spec has it); the model estimates a missing one."""
    doc: str


TIMING_FIELDS: tuple[TimingField, ...] = (
    TimingField("sustained_clock_hz", "Hz", 1e8, 5e9, True,
                "SM clock under a sustained FP32 (FFMA) load; <= 1.1 x chip.boost_clock_hz"),
    TimingField("l1_latency_cycles", "cycles", 1, 2000, True, "L1 hit latency, dependent loads (pointer chase)"),
    TimingField("shared_latency_cycles", "cycles", 1, 2000, True, "shared-memory load latency, dependent loads"),
    TimingField("l2_latency_cycles", "cycles", 1, 2000, True, "L2 hit latency (L1 bypassed), dependent loads"),
    TimingField("dram_latency_cycles", "cycles", 1, 2000, True,
                "DRAM latency: dependent loads that miss L2, TLB hits"),
    TimingField("shared_bandwidth_bytes_per_s", "B/s", 1e9, 1e15, True, "shared-memory load bandwidth, all SMs"),
    TimingField("l2_bandwidth_bytes_per_s", "B/s", 1e9, 1e15, True, "L2 read bandwidth (hits), all SMs"),
    TimingField("dram_read_bandwidth_bytes_per_s", "B/s", 1e9, 1e14, True, "DRAM read bandwidth"),
    TimingField("dram_copy_bandwidth_bytes_per_s", "B/s", 1e9, 1e14, True,
                "DRAM device-to-device copy bandwidth, read + write bytes counted"),
    TimingField("launch_overhead_s", "s", 1e-7, 1e-3, True, "time of an empty kernel launch as the sweeps time it"),
    TimingField("l2_reduction_bytes_per_s", "B/s", 1e9, 1e15, False,
                "float reductions in L2 (RED.ADD.F32, split-K's epilogue): 32-byte sector requests a second x 32 B"),
    TimingField("dram_reduction_bytes_per_s", "B/s", 1e9, 1e15, False,
                "float reductions into a buffer beyond the L2 (each sector read from DRAM, reduced and written back; "
                "split-K's epilogue when C does not fit): bytes of the buffer reduced a second"),
    TimingField("fp32_flop_per_s", "FLOP/s", 1e9, 1e16, False, "achieved FP32 FFMA throughput, all SMs"),
    TimingField("ffma_latency_cycles", "cycles", 1, 2000, False, "latency of a dependent FFMA"),
    TimingField("l2_latency_spread_cycles", "cycles", 0.1, 2000, False,
                "standard deviation of one L2 hit's latency (a warp waiting for several loads waits for the slowest)"),
    TimingField("dram_latency_spread_cycles", "cycles", 0.1, 2000, False,
                "standard deviation of one DRAM access's latency (L2 miss, TLB hit)"),
    TimingField("dram_page_bytes", "B", 32, 1 << 20, False,
                "bytes of DRAM whose lines a warp waiting for several loads gets together (one latency draw; beyond "
                "them each line's latency is its own)"),
    TimingField("batch_wait_per_load_cycles", "cycles", 0.01, 200, False,
                "cycles each further load a warp has in flight adds to its wait, beyond their issue and the "
                "slowest latency"),
)
"""Every field the ``[timing]`` table may hold (a closed set: a typo is refused, naming the field)."""

TIMING_REQUIRED: tuple[str, ...] = tuple(f.key for f in TIMING_FIELDS if f.required)
"""The fields of a complete ``[timing]`` table."""

_TIMING_BY_KEY: dict[str, TimingField] = {f.key: f for f in TIMING_FIELDS}


# --------------------------------------------------------------------------------------------------
# Validation helpers (each raises SpecError naming the file and the field)
# --------------------------------------------------------------------------------------------------


class _Checker:
    """Collects sources while checking one document; ``fail`` raises a SpecError for this file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.sources: dict[str, str] = {}

    def fail(self, field_path: str, problem: str) -> SpecError:
        return SpecError(f"{self.path}: field {field_path!r} {problem}")

    def table(self, data: Mapping[str, Any], name: str, *, required: bool) -> Mapping[str, Any] | None:
        if name not in data:
            if required:
                raise self.fail(name, "missing (expected a [" + name + "] table)")
            return None
        value = data[name]
        if not isinstance(value, Mapping):
            raise self.fail(name, f"must be a table, got {type(value).__name__}")
        return value

    def string(self, data: Mapping[str, Any], key: str) -> str:
        if key not in data:
            raise self.fail(key, "missing")
        value = data[key]
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, f"must be a non-empty string, got {value!r}")
        return value

    def sourced(self, table: Mapping[str, Any], field_path: str, key: str) -> Any:
        """Unwrap ``{ value = ..., source = "..." }``, record the source and return the raw value."""
        if key not in table:
            raise self.fail(field_path, "missing")
        entry = table[key]
        if not isinstance(entry, Mapping):
            raise self.fail(
                field_path,
                f"has no source: expected {{ value = ..., source = \"...\" }}, got bare {entry!r}",
            )
        extra = sorted(set(entry) - {"value", "source"})
        if extra:
            raise self.fail(field_path, f"has unknown key(s) {extra}; only 'value' and 'source' are allowed")
        if "value" not in entry:
            raise self.fail(field_path, "has no value")
        source = entry.get("source")
        if not isinstance(source, str) or not source.strip():
            raise self.fail(field_path, "has no source (needs a non-empty source string)")
        self.sources[field_path] = source
        return entry["value"]

    def integer(self, value: Any, field_path: str, *, minimum: int) -> int:
        what = "a positive integer" if minimum > 0 else "a non-negative integer"
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(field_path, f"must be {what}, got {value!r}")
        return value

    def positive_float(self, value: Any, field_path: str) -> float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok or not math.isfinite(value) or value <= 0:
            raise self.fail(field_path, f"must be a positive finite number, got {value!r}")
        return float(value)

    def typed(self, value: Any, f: _Field) -> Any:
        if f.kind == "pos_int":
            return self.integer(value, f.path, minimum=1)
        if f.kind == "nonneg_int":
            return self.integer(value, f.path, minimum=0)
        if f.kind == "pos_float":
            return self.positive_float(value, f.path)
        # int_steps: non-empty list of non-negative ints, strictly ascending
        if not isinstance(value, list) or not value:
            raise self.fail(f.path, f"must be a non-empty list of integers, got {value!r}")
        steps = tuple(self.integer(v, f.path, minimum=0) for v in value)
        if any(b <= a for a, b in zip(steps, steps[1:])):
            raise self.fail(f.path, f"must be strictly ascending, got {list(steps)}")
        return steps


def _check_consistency(v: Mapping[str, Any], c: _Checker) -> None:
    """Cross-field rules; ``v`` maps GPUSpec attribute names to validated values."""

    def need(cond: bool, attr: str, problem: str) -> None:
        if not cond:
            raise c.fail(_ATTR_TO_PATH[attr], problem)

    need(
        v["max_warps_per_sm"] * v["warp_size"] == v["max_threads_per_sm"],
        "max_warps_per_sm",
        f"inconsistent: sm.max_warps ({v['max_warps_per_sm']}) x chip.warp_size ({v['warp_size']}) "
        f"!= sm.max_threads ({v['max_threads_per_sm']})",
    )
    need(
        v["max_warps_per_sm"] % v["sub_partitions"] == 0,
        "sub_partitions",
        f"inconsistent: {v['sub_partitions']} does not divide sm.max_warps ({v['max_warps_per_sm']})",
    )
    need(
        v["max_threads_per_block"] <= v["max_threads_per_sm"]
        and v["max_threads_per_block"] % v["warp_size"] == 0,
        "max_threads_per_block",
        f"inconsistent: {v['max_threads_per_block']} must be a multiple of chip.warp_size "
        f"({v['warp_size']}) and <= sm.max_threads ({v['max_threads_per_sm']})",
    )
    need(
        v["max_registers_per_block"] <= v["registers_per_sm"],
        "max_registers_per_block",
        f"inconsistent: {v['max_registers_per_block']} > sm.registers ({v['registers_per_sm']})",
    )
    need(
        v["shared_bytes_per_block"] <= v["shared_bytes_per_block_optin"],
        "shared_bytes_per_block",
        f"inconsistent: {v['shared_bytes_per_block']} > sm.shared_bytes_per_block_optin "
        f"({v['shared_bytes_per_block_optin']})",
    )
    need(
        v["shared_bytes_per_block_optin"] <= v["shared_bytes_per_sm"],
        "shared_bytes_per_block_optin",
        f"inconsistent: {v['shared_bytes_per_block_optin']} > sm.shared_bytes ({v['shared_bytes_per_sm']})",
    )
    need(
        v["shared_carveout_steps_bytes"][-1] == v["shared_bytes_per_sm"],
        "shared_carveout_steps_bytes",
        f"inconsistent: largest step {v['shared_carveout_steps_bytes'][-1]} != sm.shared_bytes "
        f"({v['shared_bytes_per_sm']})",
    )
    need(
        v["shared_bytes_per_sm"] <= v["l1_shared_bytes"],
        "l1_shared_bytes",
        f"inconsistent: {v['l1_shared_bytes']} < sm.shared_bytes ({v['shared_bytes_per_sm']})",
    )


def _parse_timing(table: Mapping[str, Any], v: Mapping[str, Any], c: _Checker) -> dict[str, float]:
    """Validate a ``[timing]`` table against :data:`TIMING_FIELDS` and the validated chip values ``v``."""
    unknown = sorted(set(table) - set(_TIMING_BY_KEY))
    if unknown:
        raise c.fail(f"timing.{unknown[0]}", f"unknown (allowed in [timing]: {', '.join(_TIMING_BY_KEY)})")
    out: dict[str, float] = {}
    for f in TIMING_FIELDS:
        if f.key not in table:
            continue
        p = f"timing.{f.key}"
        x = c.positive_float(c.sourced(table, p, f.key), p)
        if not f.low <= x <= f.high:
            raise c.fail(p, f"implausible: {x:g} {f.unit} is outside [{f.low:g}, {f.high:g}] {f.unit} "
                            f"({f.doc}; check the unit)")
        out[f.key] = x
    # bounds from the chip: nothing measured beats the hardware by more than the 10 % a clock above
    # the rated boost allows
    boost = v["boost_clock_hz"]
    clock = out.get("sustained_clock_hz")
    if clock is not None and not 0.25 * boost <= clock <= 1.1 * boost:
        raise c.fail("timing.sustained_clock_hz", f"implausible: {clock:g} Hz is not within 0.25 .. 1.1 x "
                                                  f"chip.boost_clock_hz ({boost:g} Hz)")
    top_clock = 1.1 * max(boost, clock or 0.0)
    ceilings = {
        "shared_bandwidth_bytes_per_s": (v["sm_count"] * v["shared_banks"] * v["shared_bank_bytes"] * top_clock,
                                         "SMs x banks x bank bytes x 1.1 x clock"),
        "dram_read_bandwidth_bytes_per_s": (1.1 * v["dram_bandwidth_bytes_per_s"],
                                            "1.1 x chip.dram_bandwidth_bytes_per_s"),
        "dram_copy_bandwidth_bytes_per_s": (1.1 * v["dram_bandwidth_bytes_per_s"],
                                            "1.1 x chip.dram_bandwidth_bytes_per_s"),
        "fp32_flop_per_s": (2.0 * v["sm_count"] * v["fp32_lanes_per_sm"] * top_clock,
                            "2 x SMs x FP32 lanes x 1.1 x clock"),
    }
    for key, (ceiling, what) in ceilings.items():
        if key in out and out[key] > ceiling:
            raise c.fail(f"timing.{key}", f"implausible: {out[key]:g} exceeds the hardware ceiling {ceiling:g} ({what})")
    order = [k for k in ("l1_latency_cycles", "l2_latency_cycles", "dram_latency_cycles") if k in out]
    for lo, hi in zip(order, order[1:]):
        if not out[lo] < out[hi]:
            raise c.fail(f"timing.{hi}", f"implausible: {out[hi]:g} cycles is not above timing.{lo} ({out[lo]:g}); "
                                         "a chase that should miss a cache level hit it")
    return out


# --------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------


def parse_gpu(data: Mapping[str, Any], path: str) -> GPUSpec:
    """Validate a parsed spec document and build a :class:`GPUSpec`.

    ``data`` is what ``tomllib.load`` returns for a spec file; ``path`` is used in error messages
    and stored as :attr:`GPUSpec.path`. Raises :class:`SpecError` on the first problem found.
    """
    c = _Checker(path)
    if not isinstance(data, Mapping):
        raise SpecError(f"{path}: expected a TOML document (table), got {type(data).__name__}")

    unknown = sorted(set(data) - set(_TOP_KEYS))
    if unknown:
        raise c.fail(unknown[0], f"unknown (allowed top-level keys: {', '.join(_TOP_KEYS)})")

    if "schema_version" not in data:
        raise c.fail("schema_version", "missing")
    version = data["schema_version"]
    if isinstance(version, bool) or version != SCHEMA_VERSION:
        raise c.fail("schema_version", f"must be {SCHEMA_VERSION}, got {version!r}")

    key = c.string(data, "key")
    if not _KEY_RE.fullmatch(key):
        raise c.fail("key", f"must be lowercase letters, digits and '_', got {key!r}")
    name = c.string(data, "name")
    arch = c.string(data, "arch")
    raw_names = data.get("device_names")
    if (
        not isinstance(raw_names, list)
        or not raw_names
        or not all(isinstance(n, str) and n.strip() for n in raw_names)
    ):
        raise c.fail("device_names", f"must be a non-empty list of non-empty strings, got {raw_names!r}")

    # [chip] and [sm]: required, closed sets of keys
    values: dict[str, Any] = {}
    for section, allowed in _SECTION_KEYS.items():
        table = c.table(data, section, required=True)
        assert table is not None
        extra = sorted(set(table) - allowed)
        if extra:
            raise c.fail(f"{section}.{extra[0]}", f"unknown (allowed in [{section}]: {', '.join(sorted(allowed))})")
    for f in _REQUIRED:
        table = data[f.section]
        values[f.attr] = c.typed(c.sourced(table, f.path, f.key), f)

    expected_arch = f"sm_{values['cc_major']}{values['cc_minor']}"
    if arch != expected_arch:
        raise c.fail("arch", f"inconsistent: {arch!r} but compute capability gives {expected_arch!r}")
    _check_consistency(values, c)

    # [measured]: optional, closed set of keys
    copy_bw: float | None = None
    sgemm: dict[int, float] = {}
    measured = c.table(data, "measured", required=False)
    if measured is not None:
        extra = sorted(set(measured) - set(_MEASURED_KEYS))
        if extra:
            raise c.fail(f"measured.{extra[0]}", f"unknown (allowed in [measured]: {', '.join(_MEASURED_KEYS)})")
        if "copy_bandwidth_bytes_per_s" in measured:
            p = "measured.copy_bandwidth_bytes_per_s"
            copy_bw = c.positive_float(c.sourced(measured, p, "copy_bandwidth_bytes_per_s"), p)
        if "cublas_sgemm_flop_per_s" in measured:
            p = "measured.cublas_sgemm_flop_per_s"
            raw = c.sourced(measured, p, "cublas_sgemm_flop_per_s")
            if not isinstance(raw, Mapping) or not raw:
                raise c.fail(p, f"must be a non-empty table {{ \"<size>\" = <FLOP/s>, ... }}, got {raw!r}")
            for size, flops in raw.items():
                if not (isinstance(size, str) and size.isdigit() and int(size) > 0):
                    raise c.fail(p, f"keys must be positive integer sizes such as \"4096\", got {size!r}")
                sgemm[int(size)] = c.positive_float(flops, f"{p}.{size}")
            sgemm = dict(sorted(sgemm.items()))

    # [timing]: optional (a half-written spec still loads), closed set of sourced, plausible numbers
    timing: dict[str, float] = {}
    timing_table = c.table(data, "timing", required=False)
    if timing_table is not None:
        timing = _parse_timing(timing_table, values, c)

    return GPUSpec(
        key=key,
        name=name,
        device_names=tuple(raw_names),
        arch=arch,
        **values,
        copy_bandwidth_bytes_per_s=copy_bw,
        cublas_sgemm_flop_per_s=MappingProxyType(sgemm),
        timing=MappingProxyType(timing),
        sources=MappingProxyType(dict(c.sources)),
        path=path,
    )


def list_gpus() -> list[str]:
    """Keys of the shipped spec files (``gpus/*.toml`` stems), sorted."""
    return sorted(p.stem for p in GPU_DIR.glob("*.toml"))


def _normalize_key(name: str) -> str:
    """``"RTX-4060"`` / ``"RTX A6000"`` -> ``"rtx4060"`` / ``"rtxa6000"``."""
    return re.sub(r"[\s\-]", "", name.strip().lower())


@functools.lru_cache(maxsize=None)
def _load_resolved(path: Path) -> GPUSpec:
    """Read, parse and validate one file (cached per resolved path for the life of the process)."""
    shown = str(path)
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise SpecError(f"{shown}: file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{shown}: invalid TOML: {exc}") from exc
    spec = parse_gpu(data, shown)
    if path.parent == GPU_DIR and spec.key != path.stem:
        raise SpecError(f"{shown}: field 'key' must equal the file name {path.stem!r}, got {spec.key!r}")
    return spec


def load_gpu(name_or_path: str | Path) -> GPUSpec:
    """Load a GPU spec by key (``"h200"``; case, spaces and '-' ignored) or by path to a ``.toml`` file.

    Raises :class:`SpecError` for an unknown key (listing the known ones), a missing or invalid file.
    Results are cached per resolved path for the life of the process (edits to a file already
    loaded are not seen; ``_load_resolved.cache_clear()`` drops the cache).
    """
    text = str(name_or_path)
    looks_like_path = isinstance(name_or_path, Path) or text.endswith(".toml") or "/" in text or "\\" in text
    if looks_like_path:
        return _load_resolved(Path(text).expanduser().resolve())
    key = _normalize_key(text)
    path = GPU_DIR / f"{key}.toml"
    if not path.is_file():
        raise SpecError(f"unknown GPU {text!r}; known keys: {', '.join(list_gpus()) or '(none)'} (in {GPU_DIR})")
    return _load_resolved(path.resolve())



def match_device(device_name: str, cc_major: int, cc_minor: int, sm_count: int) -> GPUSpec | None:
    """The shipped spec for a detected device, or None.

    A spec matches when one of its ``device_names`` and ``device_name`` contain each other
    (case-insensitive substring, either way) and compute capability and SM count agree exactly.
    An exact name match wins over a substring match; among substring matches the longest
    ``device_names`` entry wins.
    """
    wanted = device_name.strip().lower()
    if not wanted:
        return None
    best: tuple[int, int, GPUSpec] | None = None
    for key in list_gpus():
        spec = load_gpu(key)
        if (spec.cc_major, spec.cc_minor, spec.sm_count) != (cc_major, cc_minor, sm_count):
            continue
        for candidate in spec.device_names:
            n = candidate.strip().lower()
            if n == wanted:
                rank = (1, len(n))
            elif n in wanted or wanted in n:
                rank = (0, len(n))
            else:
                continue
            if best is None or rank > best[:2]:
                best = (*rank, spec)
    return None if best is None else best[2]
