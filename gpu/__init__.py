"""The real-GPU side of gemmscope: compile the ladder's kernels, verify and time them with cupy.

Importing ``gpu`` needs neither cupy nor a GPU (cupy is imported lazily); the entry points that do need
them raise :class:`GPUUnavailable`. Kernels live in ``gpu/kernels/NN_*.cu``; the registry
(:mod:`model.registry`) says how each is named, validated and launched.
"""
from .device import DeviceInfo, SmiSample, detect_device, device_spec, gpu_available, spec_from_attributes
from .errors import CompileError, DeviceLost, GPUUnavailable, TF32Enabled
from .launcher import (CompiledKernel, Measurement, Problem, compile_config, error_bound, make_problem,
                       precompile, run_config, run_cublas)

__all__ = [
    "CompileError", "CompiledKernel", "DeviceInfo", "DeviceLost", "GPUUnavailable",
    "Measurement", "Problem", "SmiSample", "TF32Enabled", "compile_config", "detect_device", "device_spec",
    "error_bound", "gpu_available", "make_problem", "precompile", "run_config", "run_cublas",
    "spec_from_attributes",
]
