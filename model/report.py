"""Text renderings of model results. Pure functions of the result objects; no printing here."""
from __future__ import annotations

from typing import Sequence

from .roofline import Prediction
from .units import fmt_rate, fmt_time


def prediction_text(p: Prediction) -> str:
    """Kerncraft-style: the binding roof with formula and numbers, then every roof, occupancy and notes."""
    lines = [f"{p.config.label} at M={p.M} N={p.N} K={p.K} on {p.gpu}",
             f"  predicted: {fmt_time(p.time_s)}, {fmt_rate(p.flop_per_s)} ({p.flops / 1e9:.4g} GFLOP)",
             f"  bound: {p.binding.describe()}",
             "  roofs:"]
    for r in sorted(p.roofs, key=lambda r: -r.time_s):
        lines.append(f"    {r.describe()}")
    if p.occupancy is not None:
        o = p.occupancy
        lines.append(f"  occupancy: {o.blocks_per_sm} blocks/SM of {o.threads_per_block} threads "
                     f"(limiter: {o.limiter}), {o.active_threads}/{o.max_threads_per_sm} thread slots, "
                     f"{p.blocks} blocks in {p.waves} wave(s)")
    lines.append("  intensity: " + ", ".join(f"{k} {v:.3g} FLOP/B" for k, v in p.intensity_flop_per_byte.items() if v is not None))
    for n in p.notes:
        lines.append(f"  note: {n}")
    return "\n".join(lines)


def prediction_table(preds: Sequence[Prediction], gpu=None) -> str:
    """One line per prediction: config, time, GFLOP/s, % of FP32 peak, bound, blocks/SM and limiter."""
    if not preds:
        return "(no predictions)"
    p0 = preds[0]
    head = f"Predictions at M={p0.M} N={p0.N} K={p0.K} on {p0.gpu}"
    if gpu is not None:
        head += f" (FP32 peak {gpu.peak_fp32_flop_per_s / 1e12:.2f} TFLOP/s)"
    rows = [head,
            f"{'config':34s} {'time':>10s} {'GFLOP/s':>9s} {'% peak':>7s} {'bound':>7s} {'blk/SM':>6s} {'limiter':>13s}"]
    for p in preds:
        pct = 100 * p.flop_per_s / gpu.peak_fp32_flop_per_s if gpu is not None else float("nan")
        occ = p.occupancy
        rows.append(f"{p.config.label:34s} {fmt_time(p.time_s):>10s} {p.flop_per_s / 1e9:9.0f} {pct:7.1f} "
                    f"{p.bound:>7s} {occ.blocks_per_sm if occ else '-':>6} {occ.limiter if occ else '-':>13s}")
    return "\n".join(rows)
