"""Timing with CUDA events: warm-up, L2 flush between repetitions, raw times in seconds.

Protocol of :func:`time_launches` (every repetition):

    [flush: fill a 2 x L2-sized scratch buffer]  record(start)  launch  record(end)

The flush is outside the event pair, so it is not timed; it evicts A, B and C from L2, so every
repetition starts with a cold L2 (policy ``"flush"``). Policy ``"warm"`` skips the flush (repetitions
then reuse whatever the previous one left in L2, and the row says so). Everything is queued on the
current stream and synchronised once at the end. A spin kernel of ``LEAD_PER_REP_S`` per repetition is
queued first, so the host has queued every repetition before the GPU reaches the first one: the GPU never
waits for the host inside a timed region, even for kernels shorter than Python's launch overhead.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .device import cupy_module

L2_POLICIES = ("flush", "warm")
MIN_REPS = 10
LEAD_PER_REP_S = 100e-6      # > the host's cost of queueing one repetition (fill, 2 events, launch)

_SPIN_SRC = r"""
extern "C" __global__ void gemmscope_spin(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}
"""
_SPIN: list = []


def spin(seconds: float, clock_hz: float = 2e9) -> None:
    """Queue a one-thread kernel that keeps the GPU busy for at least ``seconds`` (at ``clock_hz`` or less)."""
    cp = cupy_module()
    if not _SPIN:
        _SPIN.append(cp.RawKernel(_SPIN_SRC, "gemmscope_spin"))
    _SPIN[0]((1,), (1,), (np.int64(int(seconds * clock_hz)),))


class L2Flusher:
    """A scratch buffer of ``factor`` x the L2 size, overwritten by :meth:`flush`."""

    def __init__(self, l2_bytes: int, factor: int = 2) -> None:
        cp = cupy_module()
        self.nbytes = max(int(factor * l2_bytes), 1 << 20)
        self.buf = cp.empty(self.nbytes // 4, dtype=cp.float32)
        self._n = 0

    def flush(self) -> None:
        self._n += 1
        self.buf.fill(float(self._n % 7))   # a different value each time: no write can be elided


_FLUSHERS: dict[int, L2Flusher] = {}


def flusher(l2_bytes: int) -> L2Flusher:
    """The process-wide flusher for an L2 of ``l2_bytes`` (allocated once)."""
    if l2_bytes not in _FLUSHERS:
        _FLUSHERS[l2_bytes] = L2Flusher(l2_bytes)
    return _FLUSHERS[l2_bytes]


def time_launches(launch: Callable[[], object], reps: int, flush: Callable[[], None] | None,
                  lead: bool = True) -> list[float]:
    """Seconds of each of ``reps`` launches, timed with CUDA events (flush, if given, before each; a spin
    kernel first when ``lead``)."""
    cp = cupy_module()
    if lead:
        spin(reps * LEAD_PER_REP_S)
    pairs = []
    for _ in range(reps):
        if flush is not None:
            flush()
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        launch()
        end.record()
        pairs.append((start, end))
    pairs[-1][1].synchronize()
    return [float(cp.cuda.get_elapsed_time(s, e)) / 1e3 for s, e in pairs]


def plan_reps(estimate_s: float, reps: int, max_config_s: float, min_reps: int = MIN_REPS) -> int:
    """Repetitions for a launch of ``estimate_s`` seconds: ``reps`` unless that exceeds ``max_config_s``
    of timed work, never fewer than ``min_reps``."""
    if reps < min_reps:
        raise ValueError(f"reps must be >= {min_reps}, got {reps}")
    if estimate_s <= 0 or not math.isfinite(estimate_s):
        return reps
    return max(min_reps, min(reps, int(max_config_s // estimate_s)))
