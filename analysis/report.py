"""The default report: ``python analyze.py`` (or ``analyze.py report [--out DIR] [DATA...]``) writes
``<out>/report.md`` with its figures in ``<out>/figures/``:

1. the arithmetic-intensity derivation (SymPy, :func:`model.intensity.derive`);
2. the RTX 4060's per-SM limits and the seed's 16x16 versus 32x32 argument (with the occupancy plot);
3. the model's predictions for the seed's (classic) configs on the RTX 4060 at 4096^3;
4. model versus measured on the shipped data (default ``experiments/results/h200``): summary, by rung and
   best-config picks, the plain roofline beside, and the roofline, scatter, sizes and errors plots.

Without shipped data section 4 says so and the report still has sections 1-3, the occupancy plot and a
predictions-only roofline.
"""
from __future__ import annotations

from pathlib import Path

from .data import NoDataError, load

REPORT_NAME = "report.md"
FIG_DIR = "figures"
SEED_GPU = "rtx4060"
SEED_SIZE = (4096, 4096, 4096)
SECTIONS = ("1. Arithmetic intensity, derived", "2. RTX 4060: per-SM limits and the block-size argument",
            "3. Predictions for the seed's configs on the RTX 4060", "4. Model versus measured")


def _img(path: Path, root: Path, alt: str) -> str:
    return f"![{alt}]({path.relative_to(root).as_posix()})"


def _limits_section(gpu, figs: dict, root: Path) -> str:
    from model.occupancy import derive_thread_limit
    d = derive_thread_limit(gpu)
    lines = [f"## {SECTIONS[1]}", "",
             "The seed's count of thread slots per SM, generalised (SM x warp schedulers x 1 x warps per "
             "scheduler x threads per warp), and what a square block of each side length gets when only threads "
             "and resident blocks limit it:", "", "```text", d.text(), "```", ""]
    for side, t, blocks, idle in d.blocks:
        lines.append(f"- **{side}x{side} = {t} threads**: {d.threads_per_sm} / {t} -> {blocks} block"
                     f"{'s' if blocks != 1 else ''} per SM, {blocks * t} threads active, {idle} thread slots idle"
                     f" ({100 * idle / d.threads_per_sm:.0f} %).")
    best = min(d.blocks, key=lambda b: b[3])
    lines += ["", f"So on the {gpu.name.split(' (')[0]} the {best[0]}x{best[0]} block fills the SM and is the "
                  "better choice, as the seed concludes; registers and shared memory can lower both counts "
                  "(`analyze.py occupancy --threads T --regs R --smem S`).", ""]
    if "occupancy" in figs:
        lines += [_img(figs["occupancy"], root, "occupancy against block size, RTX 4060 and H200"), "",
                  "*Blocks and active threads per SM against threads per block; colour = the limit that binds.*", ""]
    return "\n".join(lines)


def _predictions_section(gpu) -> str:
    from model.registry import classic_configs, is_valid
    from model.roofline import plain_roofline
    from model.timing import predict, rates
    M, N, K = SEED_SIZE
    cfgs = [c for c in classic_configs() if c.rung != 0 and is_valid(c, gpu)]
    preds = [predict(gpu, c, M, N, K) for c in cfgs]
    peak = gpu.peak_fp32_flop_per_s
    lines = [f"## {SECTIONS[2]}", "",
             f"M = N = K = {M} on the {gpu.name.split(' (')[0]} (FP32 peak {peak / 1e12:.2f} TFLOP/s, DRAM "
             f"{gpu.dram_bandwidth_bytes_per_s / 1e9:.0f} GB/s), with the timing model (`model/timing.py`). "
             f"Registers per thread and the instruction mix come from the compiler facts for {gpu.arch} "
             "(NVRTC, as CuPy compiles on that GPU); no RTX 4060 measurements are shipped, so its rates and "
             "latencies are assumptions: " + "; ".join(rates(gpu).notes) + ". `analyze.py predict "
             "--config NAME` prints the formula and numbers of one row, `analyze.py explain` the counts.", "",
             "| config | time | GFLOP/s | % of peak | bound | blocks/SM | occupancy limiter | plain roofline GFLOP/s |",
             "|---|---:|---:|---:|---|---:|---|---:|"]
    from model.units import fmt_time
    for p in preds:
        o = p.occupancy
        lines.append(f"| {p.config.label} | {fmt_time(p.time_s)} | {p.flop_per_s / 1e9:,.0f} | "
                     f"{100 * p.flop_per_s / peak:.1f} | {p.bound} | {o.blocks_per_sm if o else '-'} | "
                     f"{o.limiter if o else '-'} | {plain_roofline(gpu, p.config, M, N, K) / 1e9:,.0f} |")
    skipped = [c.label for c in classic_configs() if c.rung != 0 and not is_valid(c, gpu)]
    if skipped:
        lines += ["", f"Not launchable on this GPU (skipped): {', '.join(skipped)}."]
    return "\n".join(lines) + "\n"


def _provenance(rows, root_dir: Path) -> str:
    files = sorted({r.source.rsplit(":", 1)[0] for r in rows})
    shown = []
    for f in files:
        try:
            shown.append(Path(f).resolve().relative_to(root_dir).as_posix())
        except ValueError:
            shown.append(f)
    runs = sorted({r.run_id for r in rows if r.run_id})
    dates = sorted({r.date[:10] for r in rows if r.date})
    clocks = sorted({r.device.clock_now_hz for r in rows if r.device.clock_now_hz})
    parts = [f"Data: {len(rows)} rows from {', '.join(f'`{s}`' for s in shown)}"]
    if runs:
        parts.append(f"runs {', '.join(runs)}")
    if dates:
        parts.append(f"dated {dates[0]}" + (f" to {dates[-1]}" if len(dates) > 1 else ""))
    if clocks:
        parts.append(f"SM clock during the runs {clocks[0] / 1e9:.2f}" +
                     (f"-{clocks[-1] / 1e9:.2f}" if len(clocks) > 1 else "") + " GHz")
    return "; ".join(parts) + "."


def _measured_section(cmp, rows, figs: dict, root: Path, no_data: str | None) -> str:
    from .compare import format_markdown, BASELINE_NAME
    from .data import ROOT
    if cmp is None:
        lines = [f"## {SECTIONS[3]}", "", f"**No measured data.** {no_data}", "",
                 "Once the sweep's JSON Lines are committed under `experiments/results/<gpu>/`, this section "
                 "compares them with the model (`analyze.py compare` prints the same).", ""]
        if "roofline" in figs:
            lines += [_img(figs["roofline"], root, "roofline, predictions only"), "",
                      "*Roofline of the H200 with the model's predictions for the classic configs "
                      "(no measurements).*", ""]
        return "\n".join(lines)
    lines = [f"## {SECTIONS[3]}: {cmp.gpu.name}", "", _provenance(rows, ROOT), "",
             f"Model: {cmp.predicted.model}. Baseline: {BASELINE_NAME}. Statistics are over rows with status ok and "
             "verified results, rungs 01-06; cuBLAS (00) is a measured reference.", "",
             format_markdown(cmp), ""]
    captions = {
        "scatter": "Predicted against measured GFLOP/s; the grey band is +-10 %, crosses are the plain roofline.",
        "errors": "Signed error by rung: the model (left, rung colour) beside the plain roofline (right, grey).",
        "roofline": "Hierarchical roofline: filled = measured, hollow = predicted, at the model's DRAM-level "
                    "intensity; ceilings for DRAM, L2 and shared memory.",
        "sizes": "GFLOP/s against square size, each rung's classic config: solid measured, dashed predicted; "
                 "cuBLAS in black.",
    }
    for k in ("scatter", "errors", "roofline", "sizes"):
        if k in figs:
            lines += [_img(figs[k], root, k), "", f"*{captions[k]}*", ""]
    return "\n".join(lines)


def build(out_dir, data_paths=None) -> dict:
    """Write the report; returns ``{"path", "figures", "comparison", "no_data"}`` (no printing)."""
    from model.intensity import derive
    from model.spec import load_gpu
    from . import plots
    from .compare import compare, _no_data_message
    out_dir = Path(out_dir)
    fig_dir = out_dir / FIG_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = load(data_paths or None)
    cmp, no_data = None, None
    if rows:
        try:
            cmp = compare(rows)
        except NoDataError as e:
            no_data = str(e)
    else:
        no_data = _no_data_message(data_paths)
    figs = plots.all_plots(cmp, fig_dir, gpu=None if cmp is not None else load_gpu("h200"))
    seed_gpu = load_gpu(SEED_GPU)
    parts = [
        "# gemmscope report",
        "",
        "How fast should a tiled FP32 SGEMM kernel be on a GPU, why, and how far is the real one? Written by "
        "`python analyze.py` (`analyze.py report --out DIR [DATA...]`). Units: SI, decimal prefixes "
        "(1 GFLOP/s = 1e9 FLOP/s); error fractions are shown as %.",
        "",
        "Contents: " + " | ".join(SECTIONS),
        "",
        f"## {SECTIONS[0]}",
        "",
        "FLOP per element accessed at each tiling level, counted and simplified symbolically "
        "(`analyze.py derive`).",
        "",
        derive().markdown(),
        _limits_section(seed_gpu, figs, out_dir),
        _predictions_section(seed_gpu),
        _measured_section(cmp, rows, figs, out_dir, no_data),
    ]
    path = out_dir / REPORT_NAME
    path.write_text("\n".join(parts).rstrip() + "\n", encoding="utf-8")
    return {"path": path, "figures": figs, "comparison": cmp, "no_data": no_data}


def main(args) -> int:
    """``analyze.py`` / ``analyze.py report [--out DIR] [DATA...]``: write the report, print a short summary."""
    from model.occupancy import derive_thread_limit
    from model.spec import load_gpu
    res = build(getattr(args, "out", None) or "reports", list(getattr(args, "data", None) or []))
    d = derive_thread_limit(load_gpu(SEED_GPU))
    print("gemmscope report")
    print("  RTX 4060: " + "; ".join(f"{s}x{s} block -> {b} block{'s' if b != 1 else ''}/SM, {idle} idle thread slots"
                                     for s, _, b, idle in d.blocks))
    cmp = res["comparison"]
    if cmp is None:
        print(f"  measured: none. {res['no_data']}")
    else:
        j = cmp.to_json()
        rho = "-" if j["spearman"] is None else f"{j['spearman']:.2f}"
        print(f"  measured: {j['n']} rows on {cmp.gpu.key}: model MAPE {100 * j['mape']:.0f} %, Spearman {rho}, "
              f"{100 * j['within_10']:.0f} % within +-10 % (plain roofline MAPE {100 * j['baseline']['mape']:.0f} %)")
    print(f"  figures: {len(res['figures'])} PNG in {res['path'].parent / FIG_DIR}")
    print(f"wrote {res['path']}")
    return 0
