"""The CUDA device: availability, provenance (:class:`DeviceInfo`) and its :class:`~model.spec.GPUSpec`.

cupy is imported lazily (inside functions), so this module imports on a machine without cupy or a
GPU; the entry points that need a GPU raise :class:`~gpu.errors.GPUUnavailable` there.
"""
from __future__ import annotations

import functools
import shutil
import socket
import subprocess
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from model.spec import GPUSpec, list_gpus, load_gpu, match_device

from .errors import GPUUnavailable

SMI_FIELDS = ("clocks.sm", "clocks.mem", "clocks.max.sm", "power.draw", "temperature.gpu")


def cupy_module():
    """Import and return cupy, or raise :class:`GPUUnavailable` saying why it cannot be used."""
    try:
        import cupy  # noqa: PLC0415 - lazy on purpose
    except Exception as exc:  # ImportError, or a broken install raising anything at import
        raise GPUUnavailable(f"cupy cannot be imported ({type(exc).__name__}: {exc})") from exc
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError (no driver / no device), ImportError of a CUDA library
        raise GPUUnavailable(f"cupy finds no CUDA device ({type(exc).__name__}: {exc})") from exc
    if n < 1:
        raise GPUUnavailable("cupy reports 0 CUDA devices")
    return cupy


def gpu_available() -> tuple[bool, str]:
    """``(True, "")`` when cupy imports and sees a CUDA device, else ``(False, reason)``. Never raises."""
    try:
        cupy_module()
    except GPUUnavailable as exc:
        return False, exc.reason
    return True, ""


# --------------------------------------------------------------------------------------------------
# nvidia-smi
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SmiSample:
    """One nvidia-smi reading (None where the tool printed ``[N/A]`` or nothing)."""

    sm_clock_hz: float | None
    mem_clock_hz: float | None
    max_sm_clock_hz: float | None
    power_w: float | None
    temperature_c: float | None


def parse_smi(text: str) -> SmiSample | None:
    """Parse the first line of ``nvidia-smi --query-gpu=<SMI_FIELDS> --format=csv,noheader,nounits``
    (clocks in MHz, power in W, temperature in °C)."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return None
    parts = [p.strip() for p in lines[0].split(",")]
    if len(parts) != len(SMI_FIELDS):
        return None

    def num(s: str) -> float | None:
        try:
            return float(s)
        except ValueError:  # "[N/A]", "[Not Supported]"
            return None

    sm, mem, smax, power, temp = (num(p) for p in parts)
    mhz = lambda v: None if v is None else v * 1e6  # noqa: E731
    return SmiSample(mhz(sm), mhz(mem), mhz(smax), power, temp)


def sample_smi(pci_bus_id: str | None = None, timeout_s: float = 10.0) -> SmiSample | None:
    """Read the current clocks, power and temperature with nvidia-smi; None when it is absent or fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    cmd = [exe, f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader,nounits"]
    if pci_bus_id:
        cmd.append(f"--id={pci_bus_id}")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if p.returncode != 0 and pci_bus_id:
        return sample_smi(None, timeout_s)
    return parse_smi(p.stdout) if p.returncode == 0 else None


# --------------------------------------------------------------------------------------------------
# Device information
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceInfo:
    """Provenance of the current CUDA device (SI units: Hz, bytes)."""

    name: str
    cc_major: int
    cc_minor: int
    sm_count: int
    clock_hz: float            # peak SM clock (attribute ClockRate, kHz -> Hz)
    mem_clock_hz: float        # peak memory clock (MemoryClockRate, kHz -> Hz)
    bus_width_bits: int
    l2_bytes: int
    driver_version: int        # e.g. 13000 for CUDA 13.0
    runtime_version: int
    nvrtc_version: str         # e.g. "13.0"
    cupy_version: str
    pci_bus_id: str | None
    hostname: str
    smi: SmiSample | None      # nvidia-smi reading taken at detection
    attributes: Mapping[str, int] = field(default_factory=dict, hash=False, compare=False, repr=False)

    @property
    def compute_capability(self) -> str:
        return f"{self.cc_major}.{self.cc_minor}"

    def to_json(self, key: str, smi: SmiSample | None = None) -> dict[str, Any]:
        """The ``gpu`` block of a measurement row; ``smi`` overrides the reading taken at detection."""
        s = smi if smi is not None else self.smi
        return {
            "name": self.name, "key": key, "cc": self.compute_capability, "sm_count": self.sm_count,
            "clock_hz": self.clock_hz,
            "clock_now_hz": None if s is None else s.sm_clock_hz,
            "mem_clock_now_hz": None if s is None else s.mem_clock_hz,
            "max_clock_hz": None if s is None else s.max_sm_clock_hz,
            "power_w": None if s is None else s.power_w,
            "temperature_c": None if s is None else s.temperature_c,
            "driver_version": self.driver_version, "cuda_runtime_version": self.runtime_version,
            "nvrtc_version": self.nvrtc_version, "cupy_version": self.cupy_version,
            "hostname": self.hostname,
        }


@functools.lru_cache(maxsize=None)
def detect_device() -> DeviceInfo:
    """Read the current device's attributes and the software versions (cached per process)."""
    cupy = cupy_module()
    dev = cupy.cuda.Device()
    attrs = dict(dev.attributes)
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    # CuPy 14's attribute dict lacks ComputeCapabilityMajor/Minor on some builds: take them from the
    # device properties (the same cudaDeviceProp fields).
    attrs.setdefault("ComputeCapabilityMajor", int(props["major"]))
    attrs.setdefault("ComputeCapabilityMinor", int(props["minor"]))
    for a, p in (("MemoryClockRate", "memoryClockRate"), ("GlobalMemoryBusWidth", "memoryBusWidth"),
                 ("L2CacheSize", "l2CacheSize"), ("ClockRate", "clockRate")):
        if a not in attrs and p in props:
            attrs[a] = int(props[p])
    name = props["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    try:
        pci = dev.pci_bus_id
    except Exception:  # noqa: BLE001 - provenance only
        pci = None
    try:
        major, minor = cupy.cuda.nvrtc.getVersion()
        nvrtc = f"{major}.{minor}"
    except Exception as exc:  # noqa: BLE001 - NVRTC missing shows up at compile time too
        nvrtc = f"unavailable ({type(exc).__name__})"
    return DeviceInfo(
        name=name,
        cc_major=int(attrs["ComputeCapabilityMajor"]), cc_minor=int(attrs["ComputeCapabilityMinor"]),
        sm_count=int(attrs["MultiProcessorCount"]),
        clock_hz=float(attrs["ClockRate"]) * 1e3, mem_clock_hz=float(attrs["MemoryClockRate"]) * 1e3,
        bus_width_bits=int(attrs["GlobalMemoryBusWidth"]), l2_bytes=int(attrs["L2CacheSize"]),
        driver_version=int(cupy.cuda.runtime.driverGetVersion()),
        runtime_version=int(cupy.cuda.runtime.runtimeGetVersion()),
        nvrtc_version=nvrtc, cupy_version=str(cupy.__version__), pci_bus_id=pci,
        hostname=socket.gethostname(), smi=sample_smi(pci), attributes=MappingProxyType(attrs),
    )


# --------------------------------------------------------------------------------------------------
# GPUSpec of the device
# --------------------------------------------------------------------------------------------------

UNMATCHED_NOTE = ("unmatched device: no gpus/*.toml entry matches it, so this spec was built from the "
                  "device's attributes")


def _template_for(cc_major: int, cc_minor: int) -> GPUSpec:
    """A shipped spec of the same compute capability (else the same major, else the newest) whose
    architectural constants (lanes, allocation units, carveout steps, banks) an unmatched device borrows."""
    specs = [load_gpu(k) for k in list_gpus()]
    for pick in ((lambda s: (s.cc_major, s.cc_minor) == (cc_major, cc_minor)),
                 (lambda s: s.cc_major == cc_major), (lambda s: True)):
        found = [s for s in specs if pick(s)]
        if found:
            return max(found, key=lambda s: (s.cc_major, s.cc_minor, s.key))
    raise GPUUnavailable("no shipped GPU spec to build an unmatched device's spec from")  # pragma: no cover


# GPUSpec field <- device attribute (both read as integers).
_FROM_ATTRIBUTE = (
    ("sm_count", "MultiProcessorCount"),
    ("l2_bytes", "L2CacheSize"),
    ("warp_size", "WarpSize"),
    ("max_threads_per_block", "MaxThreadsPerBlock"),
    ("max_threads_per_sm", "MaxThreadsPerMultiProcessor"),
    ("max_blocks_per_sm", "MaxBlocksPerMultiprocessor"),
    ("registers_per_sm", "MaxRegistersPerMultiprocessor"),
    ("max_registers_per_block", "MaxRegistersPerBlock"),
    ("shared_bytes_per_sm", "MaxSharedMemoryPerMultiprocessor"),
    ("shared_bytes_per_block", "MaxSharedMemoryPerBlock"),
    ("shared_bytes_per_block_optin", "MaxSharedMemoryPerBlockOptin"),
    ("shared_reserved_per_block", "ReservedSharedMemoryPerBlock"),
)
# GPUSpec fields no attribute reports: borrowed from a shipped spec of the same compute capability.
_FROM_TEMPLATE = ("fp32_lanes_per_sm", "max_registers_per_thread", "register_alloc_unit", "warp_alloc_granularity",
                  "sub_partitions", "shared_alloc_unit", "l1_shared_bytes", "shared_banks", "shared_bank_bytes",
                  "int32_lanes_per_sm", "ld_st_units_per_sm")


def spec_from_attributes(name: str, attrs: Mapping[str, int]) -> GPUSpec:
    """A :class:`GPUSpec` for a device no shipped file matches, from ``cupy.cuda.Device().attributes``.

    Limits the attributes report (SMs, clock, L2, threads, blocks, registers, shared memory) come from
    the device; constants they do not report (FP32/INT32 lanes per SM, allocation units, carveout steps,
    banks, L1 size) come from a shipped spec of the same compute capability. The name, the key
    (``unmatched_<name>``) and every source say that the spec is unmatched.
    """
    major, minor = int(attrs["ComputeCapabilityMajor"]), int(attrs["ComputeCapabilityMinor"])
    t = _template_for(major, minor)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for f, a in _FROM_ATTRIBUTE:
        if a in attrs:
            values[f], sources[f] = int(attrs[a]), f"{UNMATCHED_NOTE}: device attribute {a}"
        else:
            values[f], sources[f] = getattr(t, f), f"{UNMATCHED_NOTE}: attribute {a} missing; assumed from {t.key}"
    for f in _FROM_TEMPLATE:
        values[f] = getattr(t, f)
        sources[f] = f"{UNMATCHED_NOTE}: not reported by the device; assumed from {t.key} (CC {t.compute_capability})"
    values["max_warps_per_sm"] = values["max_threads_per_sm"] // values["warp_size"]
    sources["max_warps_per_sm"] = f"{UNMATCHED_NOTE}: MaxThreadsPerMultiProcessor / WarpSize"
    values["boost_clock_hz"] = float(attrs["ClockRate"]) * 1e3
    sources["boost_clock_hz"] = f"{UNMATCHED_NOTE}: device attribute ClockRate (kHz) x 1e3"
    if attrs.get("MemoryClockRate") and attrs.get("GlobalMemoryBusWidth"):
        values["dram_bandwidth_bytes_per_s"] = 2.0 * float(attrs["MemoryClockRate"]) * 1e3 \
            * int(attrs["GlobalMemoryBusWidth"]) / 8
        sources["dram_bandwidth_bytes_per_s"] = (f"{UNMATCHED_NOTE}: 2 x MemoryClockRate x GlobalMemoryBusWidth / 8 "
                                                 "from device attributes (a formula, not a measurement)")
    else:
        values["dram_bandwidth_bytes_per_s"] = t.dram_bandwidth_bytes_per_s
        sources["dram_bandwidth_bytes_per_s"] = f"{UNMATCHED_NOTE}: memory attributes missing; assumed from {t.key}"
    smem_sm = values["shared_bytes_per_sm"]
    values["shared_carveout_steps_bytes"] = tuple(s for s in t.shared_carveout_steps_bytes if s < smem_sm) + (smem_sm,)
    sources["shared_carveout_steps_bytes"] = (f"{UNMATCHED_NOTE}: carveout steps of {t.key} up to device attribute "
                                              "MaxSharedMemoryPerMultiprocessor")
    key = "unmatched_" + "".join(c if c.isalnum() else "_" for c in name.lower()).strip("_")
    return GPUSpec(key=key, name=f"{name} (unmatched; spec built from device attributes)", device_names=(name,),
                   arch=f"sm_{major}{minor}", cc_major=major, cc_minor=minor, copy_bandwidth_bytes_per_s=None,
                   sources=MappingProxyType(sources), path="", **values)


def device_spec(info: DeviceInfo | None = None) -> GPUSpec:
    """The shipped spec matching the device (:func:`model.spec.match_device`), or one built from its
    attributes (:func:`spec_from_attributes`, key ``unmatched_*``) when none matches."""
    info = detect_device() if info is None else info
    spec = match_device(info.name, info.cc_major, info.cc_minor, info.sm_count)
    return spec if spec is not None else spec_from_attributes(info.name, info.attributes)


def is_unmatched(spec: GPUSpec) -> bool:
    return spec.key.startswith("unmatched_")
