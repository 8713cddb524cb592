"""Display conversions. Everything inside gemmscope is in SI base units (seconds, bytes, FLOP, hertz);
these functions are the only place prefixes appear. Decimal prefixes (k = 1e3, M = 1e6, G = 1e9,
T = 1e12, P = 1e15) except where a name says KiB/MiB (1024-based)."""
from __future__ import annotations

PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))


def _si(x: float) -> tuple[float, str]:
    ax = abs(x)
    for scale, p in PREFIXES:
        if ax >= scale:
            return x / scale, p
    return x, ""


def fmt_bytes(b: float) -> str:
    v, p = _si(b)
    return f"{v:.3g} {p}B"


def fmt_rate(r: float, unit: str = "FLOP") -> str:
    v, p = _si(r)
    return f"{v:.3g} {p}{unit}/s"


def fmt_time(t: float) -> str:
    if t >= 1:
        return f"{t:.3g} s"
    if t >= 1e-3:
        return f"{t * 1e3:.3g} ms"
    if t >= 1e-6:
        return f"{t * 1e6:.3g} µs"
    return f"{t * 1e9:.3g} ns"


def gflops(flop_per_s: float) -> float:
    """FLOP/s -> GFLOP/s (1e9)."""
    return flop_per_s / 1e9


def tflops(flop_per_s: float) -> float:
    """FLOP/s -> TFLOP/s (1e12)."""
    return flop_per_s / 1e12
