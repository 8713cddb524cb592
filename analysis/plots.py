"""Plots (matplotlib, Agg, PNG). Each plot has a ``build_*`` function that returns the Figure (tests read
its axes) and a function of the plot's name that saves it and returns the path:

* :func:`roofline`  - hierarchical roofline (FP32 roof; DRAM, L2 and shared-memory ceilings) with measured
  (filled) and predicted (hollow) configs at their DRAM-level intensity;
* :func:`scatter`   - predicted against measured GFLOP/s, y = x and a +-10 % band;
* :func:`sizes`     - GFLOP/s against square matrix size for each rung's classic config and cuBLAS;
* :func:`occupancy` - blocks and active threads per SM against threads per block, RTX 4060 beside H200;
* :func:`errors`    - signed error by rung, the model beside the plain roofline.

One colour per rung throughout (``model.registry.RUNGS[n].color``). pyplot is never imported: figures
are plain :class:`matplotlib.figure.Figure` objects, so nothing is global and no display is needed.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from model.registry import RUNGS

__all__ = [
    "KINDS", "DPI", "RooflinePoint", "ceilings",
    "build_roofline", "build_scatter", "build_sizes", "build_occupancy", "build_errors",
    "roofline", "scatter", "sizes", "occupancy", "errors", "all_plots", "main",
]

KINDS = ("roofline", "scatter", "sizes", "occupancy", "errors")
DPI = 130
L2_ASSUMED_FACTOR = 2.5   # L2 bandwidth when the spec has none: 2.5 x nominal DRAM (a stated assumption)
OCCUPANCY_GPUS = ("rtx4060", "h200")
_CEIL = {"fp32": "#444444", "dram": "#8c564b", "l2": "#e377c2", "shared": "#17becf"}
_LIMITER = {"threads": ("#17becf", "thread (warp) slots"), "blocks": ("#e377c2", "resident-block limit"),
            "registers": ("#8c564b", "registers"), "shared_memory": ("#7f7f7f", "shared memory")}


def _figure(w: float, h: float, **kw):
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    return Figure(figsize=(w, h), **kw)


def _save(fig, out) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=DPI, bbox_inches="tight")
    return out


def _color(rung: int) -> str:
    return RUNGS[rung].color


def _flops_axis(ax, which: str = "y") -> None:
    from matplotlib.ticker import EngFormatter
    getattr(ax, f"{which}axis").set_major_formatter(EngFormatter(unit="FLOP/s", places=0, sep=" "))


def _thousands(ax, which: str = "y", minor: bool = False) -> None:
    """Plain numbers with thousands separators (1,000 rather than 10^3); on log axes label 2x and 5x too."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    axis = getattr(ax, f"{which}axis")
    fmt = FuncFormatter(lambda v, _: f"{v:,.0f}")
    axis.set_major_formatter(fmt)
    if minor:
        axis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
        axis.set_minor_formatter(fmt)
    else:
        axis.set_minor_formatter(NullFormatter())


def _gpu_name(gpu) -> str:
    return gpu.name.split(" (")[0]


# --------------------------------------------------------------------------------------------------
# Roofline
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RooflinePoint:
    """One config on the roofline: its rung, label, DRAM-level intensity (FLOP/B) and FLOP/s."""

    rung: int
    label: str
    intensity: float
    predicted: float
    measured: float | None = None


def ceilings(gpu) -> dict[str, tuple[float, str]]:
    """The roofline's ceilings: name -> (rate, legend text). Compute in FLOP/s, memory in B/s."""
    peak = gpu.peak_fp32_flop_per_s
    dram = gpu.dram_bandwidth_bytes_per_s
    out = {"fp32": (peak, f"FP32 peak {peak / 1e12:.1f} TFLOP/s ({gpu.sm_count} SMs x "
                          f"{gpu.fp32_lanes_per_sm} lanes x 2 x {gpu.boost_clock_hz / 1e9:.2f} GHz)"),
           "dram": (dram, f"DRAM {dram / 1e12:.3g} TB/s (datasheet)")}
    if gpu.copy_bandwidth_bytes_per_s:
        out["dram_measured"] = (gpu.copy_bandwidth_bytes_per_s,
                                f"DRAM {gpu.copy_bandwidth_bytes_per_s / 1e12:.3g} TB/s (measured copy)")
    l2 = gpu.timing.get("l2_bandwidth_bytes_per_s")
    if l2:
        out["l2"] = (l2, f"L2 {l2 / 1e12:.3g} TB/s (spec file)")
    else:
        l2 = L2_ASSUMED_FACTOR * dram
        out["l2"] = (l2, f"L2 {l2 / 1e12:.3g} TB/s (assumed: {L2_ASSUMED_FACTOR} x DRAM, no figure in the spec)")
    sh = gpu.sm_count * gpu.shared_banks * gpu.shared_bank_bytes * gpu.boost_clock_hz
    out["shared"] = (sh, f"shared memory {sh / 1e12:.3g} TB/s ({gpu.sm_count} SMs x {gpu.shared_banks} banks x "
                         f"{gpu.shared_bank_bytes} B x clock)")
    return out


def _dodge(xs: Sequence[float], step: float = 1.07, span: float = 1.35) -> list[float]:
    """Spread points that share an intensity sideways so none hides another: neighbours a factor ``step``
    apart on the log axis, the whole group within a factor ``span`` (so large groups stay local)."""
    groups: dict = {}
    for i, x in enumerate(xs):
        groups.setdefault(round(float(np.log10(x)), 3) if x > 0 else x, []).append(i)
    out = list(map(float, xs))
    for idx in groups.values():
        n = len(idx)
        if n < 2:
            continue
        d = min(np.log10(step), np.log10(span) / (n - 1))
        for j, i in enumerate(idx):
            out[i] = xs[i] * 10 ** (d * (j - (n - 1) / 2))
    return out


def naive_seed_intensity(K: int = 4096) -> float:
    """FLOP per DRAM byte of the naive kernel when nothing is reused from a cache (section 1 of the report):
    each output reads K elements of A and K of B (4 B each) and writes one: 2K / (4 (2K + 1)) ~ 0.25."""
    return 2.0 * K / (4.0 * (2 * K + 1))


def build_roofline(gpu, points: Sequence[RooflinePoint], subtitle: str = "", cublas: float | None = None,
                   seed_K: int | None = 4096):
    """Roofline of ``gpu`` at the DRAM level with ``points`` (measured filled, predicted hollow, joined by a
    thin line) at the model's DRAM-level intensity; the naive kernel's no-reuse intensity of section 1
    marked. Only ceilings that belong on this axis are drawn: FP32 and DRAM (datasheet and measured)."""
    from matplotlib.lines import Line2D
    fig = _figure(10.0, 6.2)
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")
    ceil = ceilings(gpu)
    peak = ceil["fp32"][0]
    xs_pts = [p.intensity for p in points if np.isfinite(p.intensity)]
    xlo = min([0.05] + [x / 2 for x in xs_pts])
    xhi = max([100.0] + [x * 3 for x in xs_pts])
    x = np.logspace(np.log10(xlo), np.log10(xhi), 400)
    ax.axhline(peak, color=_CEIL["fp32"], lw=2.2, label=ceil["fp32"][1], zorder=2)
    for key, style in (("dram", "-"), ("dram_measured", "--")):
        if key not in ceil:
            continue
        bw, text = ceil[key]
        ax.plot(x, np.minimum(peak, bw * x), style, color=_CEIL["dram"], lw=1.8, label=text, zorder=2)
    if cublas:
        ax.axhline(cublas, color=_color(0), lw=1.2, ls=(0, (1, 2)),
                   label=f"cuBLAS {cublas / 1e12:.1f} TFLOP/s (measured)")
    from matplotlib.collections import LineCollection
    many = len(points) > 40              # many configs: smaller markers, no connectors
    ms = 4.5 if many else 7.5
    xd = np.array(_dodge([p.intensity for p in points])) if points else np.zeros(0)
    rung_arr = np.array([p.rung for p in points])
    pred = np.array([p.predicted for p in points])
    meas = np.array([np.nan if p.measured is None else p.measured for p in points])
    for r in sorted(set(rung_arr.tolist())):
        m = rung_arr == r
        c = _color(r)
        has = m & np.isfinite(meas)
        if has.any() and not many:
            segs = [((x, y0), (x, y1)) for x, y0, y1 in zip(xd[has], meas[has], pred[has])]
            ax.add_collection(LineCollection(segs, colors=c, linewidths=0.8, alpha=0.6, zorder=3))
        ax.plot(xd[m], pred[m], "o", ls="", mfc="white", mec=c, mew=1.2 if many else 1.8, ms=ms + 1, zorder=4)
        if has.any():
            ax.plot(xd[has], meas[has], "o", ls="", color=c, ms=ms, alpha=0.7 if many else 1.0, zorder=5)
    if seed_K:
        xi = naive_seed_intensity(seed_K)
        dram = ceil["dram"][0]
        ax.axvline(xi, color=_color(1), lw=1.0, ls=":", zorder=1)
        naive = [(xd[i], meas[i] if np.isfinite(meas[i]) else pred[i]) for i, p in enumerate(points) if p.rung == 1]
        text = (f"naive kernel, no cache reuse (report section 1):\n{xi:.2f} FLOP/B -> at most "
                f"{xi * dram / 1e12:.1f} TFLOP/s from DRAM")
        if naive:
            tx, ty = min(naive, key=lambda t: t[0])
            text += ("\nmeasured naive kernels sit at higher intensity: L1 and L2\nserve most of their "
                     "re-reads, so DRAM sees far fewer bytes")
            ax.annotate("", xy=(tx, ty), xytext=(xi, ty), zorder=6,
                        arrowprops={"arrowstyle": "->", "color": _color(1), "lw": 1.0})
        ax.text(xi * 1.08, xi * dram / 6, text, fontsize=8, color="#333333", va="top",
                bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": "#bbbbbb", "lw": 0.6})
    ax.set_xlim(xlo, xhi)
    ys = [p.predicted for p in points] + [p.measured for p in points if p.measured]
    ax.set_ylim(min([peak / 1000] + [y / 2 for y in ys]), peak * 2.5)
    ax.set_xlabel("arithmetic intensity at DRAM level (FLOP per DRAM byte, as the model counts the traffic)")
    ax.set_ylabel("performance (FLOP/s)")
    _flops_axis(ax)
    ax.set_title(f"Roofline (DRAM level): {_gpu_name(gpu)}" + (f"\n{subtitle}" if subtitle else ""), fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    ax.grid(True, which="minor", alpha=0.1)
    handles, labels = ax.get_legend_handles_labels()
    rungs = sorted({p.rung for p in points})
    for r in rungs:
        handles.append(Line2D([], [], marker="o", ls="", color=_color(r), ms=7))
        labels.append(RUNGS[r].label)
    if any(p.measured is not None for p in points):
        handles.append(Line2D([], [], marker="o", ls="", color="#555555", ms=7))
        labels.append("filled: measured")
    handles.append(Line2D([], [], marker="o", ls="", mfc="white", mec="#555555", mew=1.8, ms=8))
    labels.append("hollow: predicted (model)")
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8.5, frameon=False)
    fig.text(0.01, -0.02, "L2 and shared-memory limits are not drawn: they bind against their own traffic, not "
             "DRAM's (analyze.py explain prints every level's time).", fontsize=8, color="#555555")
    return fig


def _roofline_points(cmp, size=None, classic_only: bool = True) -> tuple[list[RooflinePoint], tuple[int, int, int]]:
    """Points of one size: the rungs' classic configs (default; readable, one point each) at the size where
    most of them were measured, else every config at the size with the most configs."""
    from model.registry import classic_configs
    classic = {c.key for c in classic_configs()}
    rows = list(enumerate(cmp.rows))
    if classic_only and any(r.key in classic for _, r in rows):
        rows = [(i, r) for i, r in rows if r.key in classic]
    if size is None:   # the size with the most configs; ties: the largest
        counts: dict = {}
        for _, r in rows:
            counts[r.size] = counts.get(r.size, 0) + 1
        size = max(counts, key=lambda s: (counts[s], s == (4096, 4096, 4096), s))   # ties: 4096^3, else largest
    pts = [RooflinePoint(r.rung, r.label, float(cmp.predicted.intensity_dram[i]),
                         float(cmp.predicted.flop_per_s[i]), float(cmp.measured[i]))
           for i, r in rows if r.size == tuple(size)]
    return pts, tuple(size)


def _predicted_points(gpu, size=(4096, 4096, 4096)) -> list[RooflinePoint]:
    """Predicted-only points for the classic configs (used when there is no measured data)."""
    from model.registry import classic_configs, is_valid
    from model.timing import predict_rows
    cfgs = [c for c in classic_configs() if c.rung != 0 and is_valid(c, gpu)]
    res = predict_rows(gpu, cfgs, [size] * len(cfgs))
    inten = res["flops"] / res["dram_bytes"]
    return [RooflinePoint(c.rung, c.label, float(inten[i]), float(res["flop_per_s"][i])) for i, c in enumerate(cfgs)]


def _size_text(size) -> str:
    M, N, K = size
    return f"M = N = K = {M}" if M == N == K else f"M={M} N={N} K={K}"


def roofline(cmp, out, gpu=None, size=None) -> Path:
    """Save the roofline. With a Comparison: its classic configs at one size (default: the size where most
    were measured). With ``cmp=None``: the predicted classic configs on ``gpu`` at 4096^3."""
    if cmp is None:
        if gpu is None:
            raise ValueError("roofline needs a Comparison or a GPU spec")
        size = size or (4096, 4096, 4096)
        fig = build_roofline(gpu, _predicted_points(gpu, size),
                             f"classic configs at {_size_text(size)}: predictions only (no measured data)",
                             seed_K=size[2])
        return _save(fig, out)
    pts, size = _roofline_points(cmp, size)
    cub = max((r.flop_per_s for r in cmp.cublas if r.size == size), default=None)
    sub = (f"each rung's classic configs at {_size_text(size)}; x = FLOPs / the DRAM bytes the model counts "
           "(A, B, C once plus L2 misses)\n(configs of equal intensity are spread slightly sideways; a thin line "
           "joins a config's measured and predicted points)")
    fig = build_roofline(cmp.gpu, pts, sub, cublas=cub, seed_K=size[2])
    return _save(fig, out)


# --------------------------------------------------------------------------------------------------
# Scatter: predicted vs measured
# --------------------------------------------------------------------------------------------------


def build_scatter(cmp, show_baseline: bool = True):
    """Predicted against measured GFLOP/s (log-log), y = x, +-10 % band, +-25 % lines; colour by rung; where
    rows crowd, a grey hexagon density layer underneath says how many rows each cell holds."""
    from matplotlib.lines import Line2D
    fig = _figure(8.6, 6.6)
    ax = fig.add_subplot()
    meas = cmp.measured / 1e9
    pred = cmp.predicted.flop_per_s / 1e9
    base = cmp.predicted.baseline_flop_per_s / 1e9
    vals = np.concatenate([meas, pred] + ([base] if show_baseline else []))
    vals = vals[np.isfinite(vals) & (vals > 0)]
    lo, hi = vals.min() / 1.6, vals.max() * 1.6
    x = np.array([lo, hi])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.fill_between(x, x * 0.9, x * 1.1, color="#bbbbbb", alpha=0.45, lw=0, label="within +-10 %", zorder=1)
    ax.plot(x, x, color="k", lw=1.0, label="y = x (exact)", zorder=2)
    ax.plot(x, x * 1.25, color="k", lw=0.7, ls=":", label="+-25 %", zorder=2)
    ax.plot(x, x * 0.75, color="k", lw=0.7, ls=":", zorder=2)
    dense = len(meas) > 150
    ok = np.isfinite(pred) & (pred > 0)
    if dense:
        hb = ax.hexbin(meas[ok], pred[ok], xscale="log", yscale="log", gridsize=40, bins="log", mincnt=1,
                       cmap="Greys", extent=(np.log10(lo), np.log10(hi), np.log10(lo), np.log10(hi)), zorder=0,
                       alpha=0.9, linewidths=0)
        cb = fig.colorbar(hb, ax=ax, fraction=0.04, pad=0.02)
        cb.set_label("model rows per hexagon (log scale)", fontsize=8.5)
        cb.ax.tick_params(labelsize=8)
    if show_baseline:
        ax.plot(meas, base, "x", color="#7f7f7f", ms=4 if dense else 6, mew=0.8 if dense else 1.2,
                alpha=0.35 if dense else 1.0, label="plain roofline", zorder=3)
    rungs = cmp.rungs
    handles, labels = ax.get_legend_handles_labels()
    for r in sorted(set(rungs.tolist())):
        m = rungs == r
        ax.plot(meas[m], pred[m], "o", color=_color(r), ms=3.0 if dense else 7, mec="none" if dense else "white",
                mew=0.6, alpha=0.45 if dense else 1.0, zorder=4)
        handles.append(Line2D([], [], marker="o", ls="", color=_color(r), ms=7))
        labels.append(f"{RUNGS[r].label} ({int(m.sum())} rows)")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    ax.set_xlabel("measured (GFLOP/s)")
    ax.set_ylabel("predicted (GFLOP/s)")
    _thousands(ax, "x", minor=True)
    _thousands(ax, "y", minor=True)
    ax.tick_params(axis="x", which="both", labelrotation=45, labelsize=8)
    ax.tick_params(axis="y", which="both", labelsize=8)
    from .compare import summary
    s = summary(cmp.predicted.flop_per_s, cmp.measured)
    ax.set_title(f"Model vs measured: {_gpu_name(cmp.gpu)}, {s['n']} rows (config x size)\n"
                 f"MAPE {100 * s['mape']:.1f} %, {100 * s['within_10']:.0f} % within +-10 %"
                 + (f", Spearman {s['spearman']:.2f}" if s["spearman"] is not None else "")
                 + ("\n(timing model, leave-one-rung-out cross-validated)" if "cross" in cmp.predicted.model
                    or "calibrated on the other rungs" in cmp.predicted.model else ""), fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.22 if dense else 1.02, 1.0), fontsize=8.5,
              frameon=False)
    fig.text(0.01, -0.03, "Above the diagonal the model is optimistic (predicts faster than measured), below it "
             "pessimistic." + (" Points are translucent; the grey hexagons count the rows beneath them." if dense
                               else ""), fontsize=8, color="#555555")
    return fig


def scatter(cmp, out) -> Path:
    return _save(build_scatter(cmp), out)


# --------------------------------------------------------------------------------------------------
# Sizes: GFLOP/s against square size
# --------------------------------------------------------------------------------------------------


def _series_configs(cmp) -> dict[int, str]:
    """Per rung, the config key to draw: the rung's first classic config if measured at a square size,
    else the config measured at the most square sizes."""
    from model.registry import KernelConfig
    square = [r for r in cmp.rows if r.M == r.N == r.K]
    out = {}
    for rung in sorted({r.rung for r in square}):
        keys = [r.key for r in square if r.rung == rung]
        classic = KernelConfig.make(rung, **RUNGS[rung].classic[0]).key
        out[rung] = classic if classic in keys else max(set(keys), key=lambda k: (keys.count(k), k))
    return out


def _size_ticks(sizes) -> list[int]:
    """Major tick positions: powers of two first, then other sizes not within 15 % of a tick (1000 next to
    1024 would print over it; :func:`build_sizes` labels such sizes on a second row)."""
    sizes = sorted(set(sizes))
    ticks = [s for s in sizes if s & (s - 1) == 0]
    for s in sizes:
        if s not in ticks and all(max(s, t) / min(s, t) > 1.15 for t in ticks):
            ticks.append(s)
    return sorted(ticks)


def build_sizes(cmp):
    """Measured (solid) and predicted (dashed) GFLOP/s against square size, one line per rung, and cuBLAS;
    log-log, so small sizes are as readable as large; every measured size labelled."""
    from matplotlib.lines import Line2D
    fig = _figure(9.0, 5.8)
    ax = fig.add_subplot()
    series = _series_configs(cmp)
    all_sizes = set()
    ys = []
    for k, (rung, key) in enumerate(series.items()):
        idx = [i for i, r in enumerate(cmp.rows) if r.key == key and r.M == r.N == r.K]
        idx.sort(key=lambda i: cmp.rows[i].M)
        s = np.array([cmp.rows[i].M for i in idx])
        all_sizes.update(s.tolist())
        c = _color(rung)
        ax.plot(s, cmp.measured[idx] / 1e9, "-o", color=c, lw=1.8, ms=5, label=cmp.rows[idx[0]].label)
        # dashes of three phases: rungs whose predictions coincide (04-06 often do) interleave their colours
        ax.plot(s, cmp.predicted.flop_per_s[idx] / 1e9, ls=(3 * (k % 3), (3, 6)), color=c, lw=1.6, marker="o",
                mfc="white", ms=5)
        ys += list(cmp.measured[idx] / 1e9) + list(cmp.predicted.flop_per_s[idx] / 1e9)
    cub = sorted((r.M, r.flop_per_s) for r in cmp.cublas if r.M == r.N == r.K)
    cub_src = "measured"
    if not cub and cmp.gpu.cublas_sgemm_flop_per_s:
        cub = sorted(cmp.gpu.cublas_sgemm_flop_per_s.items())
        cub_src = "spec file"
    if cub:
        cs, cf = zip(*cub)
        all_sizes.update(cs)
        ax.plot(cs, np.array(cf) / 1e9, "-s", color=_color(0), lw=2.0, ms=5, label=f"00 cuBLAS ({cub_src})")
        ys += list(np.array(cf) / 1e9)
    peak = cmp.gpu.peak_fp32_flop_per_s / 1e9
    ax.axhline(peak, color=_CEIL["fp32"], lw=1.0, ls=":", label=f"FP32 peak {peak / 1e3:.1f} TFLOP/s")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ticks = _size_ticks(all_sizes)
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    crowded = sorted(set(all_sizes) - set(ticks))
    ax.set_xticks(crowded, minor=True)
    ax.set_xticklabels([str(t) for t in crowded], minor=True)
    ax.tick_params(axis="x", which="minor", pad=14, labelsize=8.5, length=8)
    if len(ticks) == 1:
        ax.set_xlim(ticks[0] / 1.5, ticks[0] * 1.5)
    ys = [y for y in ys if np.isfinite(y) and y > 0]
    ax.set_ylim(min(ys) / 1.5 if ys else peak / 1000, peak * 1.5)
    ax.set_xlabel("matrix size M = N = K (log2 scale; sizes next to a power of two are labelled on a second row)")
    ax.set_ylabel("GFLOP/s (log scale)")
    _thousands(ax, "y", minor=True)
    ax.set_title(f"Performance against size: {_gpu_name(cmp.gpu)}\nsolid = measured, dashed = predicted "
                 "(each rung's classic config)", fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    h, labels = ax.get_legend_handles_labels()
    h += [Line2D([], [], color="k", ls="-", marker="o", ms=5), Line2D([], [], color="k", ls="--", marker="o",
                                                                       mfc="white", ms=5)]
    labels += ["measured", "predicted (model)"]
    ax.legend(h, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8.5, frameon=False)
    return fig


def sizes(cmp, out) -> Path:
    return _save(build_sizes(cmp), out)


# --------------------------------------------------------------------------------------------------
# Occupancy: blocks and threads per SM against threads per block
# --------------------------------------------------------------------------------------------------


def build_occupancy(gpus: Sequence = None, notes: dict | None = None):
    """Blocks per SM (top) and active threads per SM (bottom) against threads per block (32..1024), one
    column per GPU; markers coloured by the binding limit; the seed's 16x16 and 32x32 blocks annotated.
    ``notes``: GPU key -> text printed under that GPU's column (the report puts the model's predictions
    and the measured times of the two blocks there, read from the Prediction objects)."""
    from matplotlib.lines import Line2D
    from model.occupancy import occupancy as occ_fn
    from model.spec import load_gpu
    gpus = [load_gpu(g) if isinstance(g, str) else g for g in (gpus or OCCUPANCY_GPUS)]
    fig = _figure(max(6.0, 5.2 * len(gpus)), 7.4)
    axes = fig.subplots(2, len(gpus), sharex=True, squeeze=False)
    threads = np.arange(32, 1025, 32)
    for col, gpu in enumerate(gpus):
        occs = [occ_fn(gpu, int(t)) for t in threads]
        blocks = np.array([o.blocks_per_sm for o in occs])
        active = np.array([o.active_threads for o in occs])
        lim = [o.limiter for o in occs]
        top, bot = axes[0][col], axes[1][col]
        top.step(threads, blocks, where="mid", color="#999999", lw=1.0, zorder=1)
        bot.plot(threads, active, color="#999999", lw=1.0, zorder=1)
        bot.axhline(gpu.max_threads_per_sm, color="k", ls="--", lw=1.0,
                    label=f"max {gpu.max_threads_per_sm} threads/SM")
        for name in dict.fromkeys(lim):
            m = np.array([x == name for x in lim])
            c, text = _LIMITER[name]
            top.plot(threads[m], blocks[m], "o", color=c, ms=4.5, label=f"binds: {text}", zorder=3)
            bot.plot(threads[m], active[m], "o", color=c, ms=4.5, zorder=3)
        changes = 0
        for i in range(1, len(lim)):          # where the binding limit changes
            if lim[i] != lim[i - 1]:
                changes += 1
                for ax in (top, bot):
                    ax.axvline((threads[i] + threads[i - 1]) / 2, color="#bbbbbb", lw=0.8, ls="-.")
        # the seed's two blocks; labels sit in the empty lower part of the threads panel
        for side, pos in ((16, (0.20, 0.34)), (32, (0.97, 0.12))):
            t = side * side
            o = occs[int(np.flatnonzero(threads == t)[0])]
            idle = o.idle_threads
            text = (f"{side}x{side} = {t} threads: {o.blocks_per_sm} block{'s' if o.blocks_per_sm != 1 else ''}"
                    f"/SM,\n{o.active_threads} threads active" + (" (full)" if idle == 0 else f", {idle} idle"))
            bot.plot([t], [o.active_threads], "o", ms=11, mfc="none", mec="k", mew=1.4, zorder=4)
            bot.annotate(text, (t, o.active_threads), xytext=pos, textcoords="axes fraction",
                         ha="left" if side == 16 else "right", va="center", fontsize=8.5,
                         arrowprops={"arrowstyle": "->", "lw": 0.8, "color": "#333333"},
                         bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": "#999999", "lw": 0.6})
            top.plot([t], [o.blocks_per_sm], "o", ms=11, mfc="none", mec="k", mew=1.4, zorder=4)
        top.set_title(f"{_gpu_name(gpu)} (CC {gpu.compute_capability})\n{gpu.max_threads_per_sm} threads, "
                      f"{gpu.max_blocks_per_sm} blocks per SM", fontsize=10)
        top.set_ylabel("resident blocks per SM")
        bot.set_ylabel("active threads per SM")
        bot.set_xlabel("threads per block")
        bot.set_ylim(0, gpu.max_threads_per_sm * 1.12)
        top.set_ylim(0, blocks.max() * 1.12)
        for ax in (top, bot):
            ax.set_xticks([32, 256, 512, 768, 1024])
            ax.grid(True, alpha=0.3)
        th, tl = top.get_legend_handles_labels()
        if changes:
            th.append(Line2D([], [], color="#bbbbbb", lw=0.8, ls="-."))
            tl.append("the binding limit changes")
        top.legend(th, tl, loc="upper right", fontsize=8, frameon=True)
        bot.legend(loc="upper right", fontsize=8, frameon=True)
        note = (notes or {}).get(gpu.key)
        if note:
            bot.text(0.0, -0.2, note, transform=bot.transAxes, ha="left", va="top", fontsize=8,
                     family="monospace", bbox={"boxstyle": "round,pad=0.4", "fc": "#f7f7f7", "ec": "#bbbbbb",
                                               "lw": 0.6})
    fig.suptitle("Occupancy against block size: threads and resident blocks only"
                 + ("\n" if len(gpus) < 2 else " ") + "(no register or shared-memory pressure, as in the seed)",
                 fontsize=11)
    fig.subplots_adjust(hspace=0.12, wspace=0.3, top=0.87)   # fixed layout: tight_layout would draw the figure once more
    return fig


def occupancy(out, gpus: Sequence = None, notes: dict | None = None) -> Path:
    return _save(build_occupancy(gpus, notes), out)


# --------------------------------------------------------------------------------------------------
# Errors: signed error by rung, model beside plain roofline
# --------------------------------------------------------------------------------------------------


def build_errors(cmp):
    """Signed error (predicted - measured)/measured in % by rung: the model (box in the rung's colour) beside
    the plain roofline (grey); boxes show quartiles and 1.5 IQR whiskers, rows beyond them are dots."""
    from matplotlib.patches import Patch
    fig = _figure(9.0, 5.6)
    ax = fig.add_subplot()
    rungs = cmp.rungs
    present = sorted(set(rungs.tolist()))
    em = 100 * cmp.errors
    eb = 100 * cmp.baseline_errors
    off = 0.2
    for i, r in enumerate(present):
        m = rungs == r
        for data, dx, face, edge, alpha in ((em[m], -off, _color(r), _color(r), 0.55),
                                            (eb[m], off, "#d9d9d9", "#7f7f7f", 0.9)):
            bp = ax.boxplot([data], positions=[i + dx], widths=0.32, patch_artist=True, showfliers=True,
                            medianprops={"color": "k", "lw": 1.4},
                            flierprops={"marker": "o", "ms": 2.5, "mfc": edge, "mec": "none", "alpha": 0.6})
            for patch in bp["boxes"]:
                patch.set_facecolor(face)
                patch.set_alpha(alpha)
                patch.set_edgecolor(edge)
        ax.text(i, 1.0, f"n={int(m.sum())}", transform=ax.get_xaxis_transform(), ha="center", va="bottom",
                fontsize=8, color="#555555")
    ax.axhspan(-10, 10, color="#bbbbbb", alpha=0.35, lw=0, zorder=0)
    ax.axhline(0, color="k", lw=0.9)
    allv = np.concatenate([em, eb])
    allv = allv[np.isfinite(allv)]
    top = float(np.max(allv)) if allv.size else 10.0
    bottom = float(np.min(allv)) if allv.size else -10.0
    if top > 300:      # errors above +300 %: linear to +-100 %, logarithmic above - marked on the plot
        ax.set_yscale("symlog", linthresh=100, linscale=2.0)
        ticks = [-100, -50, -25, 0, 25, 50, 100] + [v for v in (200, 500, 1000, 2000, 5000, 10000, 20000, 50000)
                                                    if v <= top * 1.5]
        ax.set_ylim(min(-30.0, bottom - 10), top * 1.4)
        ax.axhline(100, color="#555555", lw=0.9, ls=(0, (6, 3)), zorder=1)
        ax.text(1.0, 100, " scale changes here:\n linear below +100 %,\n logarithmic above", va="center",
                ha="left", transform=ax.get_yaxis_transform(), fontsize=8, color="#333333")
        scale_note = " (linear to +100 %, logarithmic above)"
    else:
        lo, hi = min(-20.0, bottom - 10), max(20.0, top + 15)
        step = 25 if hi - lo <= 200 else 50
        ticks = list(range(int(np.floor(lo / step) * step), int(np.ceil(hi / step) * step) + 1, step))
        ax.set_ylim(lo, hi)
        scale_note = ""
    ax.set_yticks(ticks)
    ax.set_yticklabels([f"{t:+d} %" if t else "0" for t in ticks])
    ax.minorticks_off()
    ax.set_xticks(range(len(present)))
    ax.set_xticklabels([f"{r:02d}\n" + textwrap.fill(RUNGS[r].title, 14) for r in present], fontsize=9)
    ax.set_xlim(-0.6, len(present) - 0.4)
    ax.set_xlabel("rung")
    ax.set_ylabel("signed error (predicted - measured) / measured (%)" + scale_note, fontsize=9)
    ax.set_title(f"Prediction error by rung: {_gpu_name(cmp.gpu)}, {len(cmp.rows)} rows\n"
                 "> 0: predicted faster than measured (optimistic); grey band: within +-10 %", fontsize=11, pad=16)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend([Patch(fc="white", ec="k"), Patch(fc="#d9d9d9", ec="#7f7f7f"), Patch(fc="#bbbbbb", alpha=0.35)],
              ["left box of each pair: timing model\n(filled in that rung's colour)", "right box: plain roofline",
               "within +-10 %"], loc="upper left", bbox_to_anchor=(1.16, 1.0), fontsize=8.5, frameon=False)
    return fig


def errors(cmp, out) -> Path:
    return _save(build_errors(cmp), out)


# --------------------------------------------------------------------------------------------------
# All plots, CLI
# --------------------------------------------------------------------------------------------------


_JOB: dict = {}   # what forked workers of all_plots read (inherited, never pickled)


def _render(kind: str) -> tuple[str, Path]:
    j = _JOB
    out = j["outdir"] / f"{kind}.png"
    if kind == "occupancy":
        return kind, occupancy(out, notes=j["notes"])
    if j["cmp"] is None:
        return kind, roofline(None, out, gpu=j["gpu"])
    return kind, {"roofline": roofline, "scatter": scatter, "sizes": sizes, "errors": errors}[kind](j["cmp"], out)


def all_plots(cmp, outdir, gpu=None, notes: dict | None = None, progress=None, workers: int | None = None,
              key: str | None = None) -> dict[str, Path]:
    """Every plot into ``outdir`` (``<kind>.png``). With ``cmp=None`` only the data-free ones: the
    occupancy plot and a predictions-only roofline of ``gpu`` (when given).

    The plots are independent, so they are drawn by ``workers`` forked processes (default: the CPU count,
    at most 4; 1 draws them here), which inherit ``cmp`` instead of recomputing it; ``progress(kind)`` is
    called as each one is written.

    ``key``: a fingerprint of everything the plots depend on (the data files and the sources: see
    :func:`analysis.report.inputs_key`). A figure whose sidecar ``.<kind>.key`` holds the same key is not
    drawn again."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    tick = progress or (lambda name: None)
    kinds = (["roofline", "scatter", "sizes", "errors"] if cmp is not None else
             (["roofline"] if gpu is not None else [])) + ["occupancy"]
    tag = None if key is None else f"{key}-{cmp is None}"
    done = {k: outdir / f"{k}.png" for k in kinds if figure_is_current(outdir / f"{k}.png", tag)}
    for k in done:
        tick(k)
    out = _draw([k for k in kinds if k not in done], cmp, outdir, gpu, notes, tick, workers)
    for path in out.values():
        mark_figure(path, tag)
    out.update(done)
    return {k: out[k] for k in kinds}


def _key_file(png: Path) -> Path:
    return png.with_name(f".{png.stem}.key")


def figure_is_current(png: Path, key: str | None) -> bool:
    """True when ``png`` exists and was drawn from inputs with this ``key`` (its sidecar ``.<stem>.key``);
    never with no key or with ``GEMMSCOPE_NO_CACHE`` set."""
    import os
    if key is None or os.environ.get("GEMMSCOPE_NO_CACHE"):
        return False
    try:
        return png.is_file() and _key_file(png).read_text(encoding="utf-8") == key
    except OSError:
        return False


def mark_figure(png: Path, key: str | None) -> None:
    """Record that ``png`` was drawn from inputs with this ``key`` (nothing without a key)."""
    if key is None:
        return
    try:
        _key_file(png).write_text(key, encoding="utf-8")
    except OSError:
        pass


def _draw(kinds, cmp, outdir, gpu, notes, tick, workers) -> dict[str, Path]:
    import os
    if not kinds:
        return {}
    _JOB.clear()
    _JOB.update(cmp=cmp, gpu=gpu, notes=notes, outdir=outdir)
    workers = min(4, os.cpu_count() or 1) if workers is None else workers
    out: dict[str, Path] = {}
    try:
        import multiprocessing as mp
        ctx = mp.get_context("fork") if workers > 1 and "fork" in mp.get_all_start_methods() else None
    except (ImportError, ValueError):
        ctx = None
    if ctx is None:
        for k in kinds:
            out[k] = _render(k)[1]
            tick(k)
        return out
    _figure(1, 1)                       # import matplotlib once, before forking
    # the slowest first, so that the pool finishes together
    order = sorted(kinds, key=["occupancy", "roofline", "scatter", "sizes", "errors"].index)
    with ctx.Pool(min(workers, len(order))) as pool:
        for k, path in pool.imap_unordered(_render, order):
            out[k] = path
            tick(k)
    return {k: out[k] for k in kinds}


def main(args) -> int:
    """``analyze.py plot KIND [DATA...] [--gpu KEY] [--out PATH]``; prints the path written."""
    from .data import NoDataError, load
    from .compare import compare, _no_data_message
    from model.errors import GemmscopeError
    from model.spec import load_gpu
    kind = args.kind
    if kind not in KINDS:
        raise GemmscopeError(f"unknown plot kind {kind!r}; choose one of {', '.join(KINDS)}")
    out = Path(args.out or Path("reports") / "figures" / f"{kind}.png")
    gpu_key = getattr(args, "gpu", None)
    if kind == "occupancy":
        from .report import block_size_notes
        gpus = [load_gpu(gpu_key)] if gpu_key else [load_gpu(g) for g in OCCUPANCY_GPUS]
        path = occupancy(out, gpus, notes=block_size_notes(gpus))
    else:
        paths = list(getattr(args, "data", None) or [])
        rows = load(paths)
        if not rows and kind == "roofline":
            path = roofline(None, out, gpu=load_gpu(gpu_key or "h200"))
        elif not rows:
            raise NoDataError(_no_data_message(paths))
        else:
            cmp = compare(rows)
            if gpu_key and load_gpu(gpu_key).key != cmp.gpu.key:
                raise GemmscopeError(f"--gpu {gpu_key} does not match the data's GPU ({cmp.gpu.key})")
            path = {"roofline": roofline, "scatter": scatter, "sizes": sizes, "errors": errors}[kind](cmp, out)
    print(path)
    return 0
