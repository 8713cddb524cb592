"""Typed errors of the real-GPU side (all are :class:`~model.errors.GemmscopeError`).

The sweep turns :class:`CompileError` (and the model's :class:`~model.errors.ConfigError`, and the
driver's launch errors) into recorded rows; :class:`GPUUnavailable`, :class:`TF32Enabled`
and :class:`DeviceLost` stop a run.
"""
from __future__ import annotations

from model.errors import GemmscopeError


class GPUUnavailable(GemmscopeError, RuntimeError):
    """No usable CUDA GPU: cupy is missing, or it finds no device / driver."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"needs a CUDA GPU and cupy: {reason}")
        self.reason = reason


class CompileError(GemmscopeError, RuntimeError):
    """NVRTC rejected a kernel instantiation; ``log`` holds the compiler's message."""

    def __init__(self, name_expression: str, log: str) -> None:
        super().__init__(f"{name_expression}: compilation failed:\n{log}")
        self.name_expression = name_expression
        self.log = log


class DeviceLost(GemmscopeError, RuntimeError):
    """A launch left the CUDA context unusable (sticky error): the process must stop.

    ``measurement`` is the ``launch_error`` result of the config that did it, for the caller to record.
    """

    def __init__(self, message: str, measurement=None) -> None:
        super().__init__(message)
        self.measurement = measurement


class TF32Enabled(GemmscopeError, RuntimeError):
    """``CUPY_TF32`` is set: cupy.matmul would use TF32 tensor cores, not an FP32 reference."""
