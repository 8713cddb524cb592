#!/usr/bin/env python3
"""gemmscope: how fast should this tiled SGEMM kernel be on this GPU, why, and how far is the real one?

Run from the repository root. ``python analyze.py`` with no arguments writes the default report to
``reports/``; the subcommands below print single analyses (``--json`` for machine output).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from analysis.cli import (BadInput, Parser, check_problem, dim, input_files, nonneg_int,  # noqa: E402
                          output_dir, output_file, parse_config, positive_int, registers, run)

DEFAULT_GPU = "rtx4060"
DEFAULT_SIZE = (4096, 4096, 4096)
PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def _gpu(name: str):
    from model.spec import load_gpu
    return load_gpu(name)


def _print_json(obj) -> None:
    print(json.dumps(obj, indent=2, sort_keys=False, default=float))


# --------------------------------------------------------------------------------------------------
# derive
# --------------------------------------------------------------------------------------------------


def cmd_derive(args) -> int:
    gpu = _gpu(args.gpu)                 # before any output: a bad --gpu prints nothing but the error
    from analysis.cache import derivation, thread_limit_text
    d = derivation()                     # SymPy's result, memoised per source (analysis/cache.py)
    if args.json:
        _print_json(d["json"])
        return 0
    if args.markdown:
        print(d["markdown"])
        return 0
    print(d["text"])
    print("== Per-SM thread limit ==")
    print(thread_limit_text(gpu))
    return 0


# --------------------------------------------------------------------------------------------------
# occupancy
# --------------------------------------------------------------------------------------------------


def cmd_occupancy(args) -> int:
    from model.occupancy import occupancy
    occ = occupancy(_gpu(args.gpu), args.threads, args.regs, args.smem)
    if args.json:
        _print_json(occ.to_json())
    else:
        print(occ.explain())
    return 0


# --------------------------------------------------------------------------------------------------
# predict
# --------------------------------------------------------------------------------------------------


def _predictor(name: str):
    """The model behind ``predict``: the timing model (default) or the first roofline model."""
    if name == "roofline":
        from model.roofline import predict
    else:
        from model.timing import predict
    return predict


def _registers_for(model: str, gpu, cfg, regs):
    """Registers per thread the model is given: ``--regs`` if set; for the roofline model the compiler
    facts' figure (the timing model reads the facts itself), so both models agree on blocks per SM."""
    if regs is not None or model != "roofline":
        return regs
    from model.facts import facts_for
    f = facts_for(cfg, gpu.arch)
    return None if f is None else f.registers


def cmd_predict(args) -> int:
    from model.registry import classic_configs, validate, violations
    gpu = _gpu(args.gpu)
    M, N, K = args.size
    if args.regs is not None and not args.config:
        raise BadInput("--regs needs --config (it sets the registers of the configs you name)")
    if args.regs is not None and args.regs > gpu.max_registers_per_thread:
        raise BadInput(f"--regs {args.regs}: the limit on {gpu.name} is {gpu.max_registers_per_thread} per thread")
    if args.config:
        cfgs = [parse_config(c) for c in args.config]
        for c in cfgs:
            if c.rung == 0:
                raise BadInput("rung 00 (cuBLAS) is measured, not modelled; name a rung 01-06")
            validate(c, gpu)
    else:
        from model.registry import is_valid
        every = [c for c in classic_configs() if c.rung != 0]
        cfgs = [c for c in every if is_valid(c, gpu)]
    for c in cfgs:
        check_problem(gpu, M, N, K, c)
    if not args.config:
        for c in every:
            if c not in cfgs:       # e.g. rung 12's vector reductions on a GPU before Hopper
                print(f"note: {c.label} does not run on {gpu.name}: {violations(c, gpu)[0][0].why}", file=sys.stderr)
    from model.report import prediction_table, prediction_text
    predict = _predictor(args.model)
    if args.config:
        preds = [predict(gpu, c, M, N, K, registers=_registers_for(args.model, gpu, c, args.regs)) for c in cfgs]
        if args.json:
            _print_json([p.to_json() for p in preds])
        else:
            print("\n\n".join(prediction_text(p) for p in preds))
        return 0
    preds = [predict(gpu, c, M, N, K, registers=_registers_for(args.model, gpu, c, None)) for c in cfgs]
    if args.json:
        _print_json([p.to_json() for p in preds])
    else:
        print(prediction_table(preds, gpu))
    return 0


# --------------------------------------------------------------------------------------------------
# commands implemented in analysis/ (compare, plot, report, explain)
# --------------------------------------------------------------------------------------------------


def cmd_compare(args) -> int:
    if getattr(args, "published", None):
        from analysis.published import main as published_main
        return published_main(None if args.published is True else args.published, as_json=args.json)
    input_files(args.data)
    if args.predictions:
        input_files([args.predictions])
    from analysis.compare import main as compare_main
    return compare_main(args)


def cmd_plot(args) -> int:
    from analysis.plots import KINDS
    if args.kind not in KINDS:
        raise BadInput(f"unknown plot kind {args.kind!r}; choose one of {', '.join(KINDS)}")
    if args.out is not None:
        output_file(args.out, PLOT_SUFFIXES, "--out")
    if args.kind == "occupancy" and args.data:
        raise BadInput("plot occupancy takes no data files (it draws the occupancy calculator)")
    input_files(args.data)
    if args.gpu:
        _gpu(args.gpu)
    from analysis.plots import main as plot_main
    return plot_main(args)


def cmd_explain(args) -> int:
    from model.registry import validate
    gpu = _gpu(args.gpu)
    cfg = parse_config(args.config)
    if cfg.rung == 0:
        raise BadInput("rung 00 (cuBLAS) is measured, not modelled; name a rung 01-06")
    validate(cfg, gpu)
    check_problem(gpu, *args.size, cfg)
    from analysis.explain import main as explain_main
    return explain_main(args)


def cmd_report(args) -> int:
    output_dir(args.out, "--out")
    input_files(args.data)
    from analysis.report import main as report_main
    return report_main(args)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="analyze.py",
        description="gemmscope: a performance model of tiled FP32 SGEMM, and its comparison with real kernels "
                    "measured on a GPU. With no subcommand: write the report (reports/report.md and its figures "
                    "in reports/figures/).")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    def common(sp):
        sp.add_argument("--gpu", default=DEFAULT_GPU,
                        help=f"GPU spec: a key of gpus/*.toml or a path to a spec file (default {DEFAULT_GPU})")
        sp.add_argument("--json", action="store_true", help="machine-readable JSON output")

    def size(sp):
        sp.add_argument("--size", nargs=3, type=dim, default=DEFAULT_SIZE, metavar=("M", "N", "K"),
                        help="problem size (default %s %s %s)" % DEFAULT_SIZE)

    sp = sub.add_parser("derive", help="derive the arithmetic intensity of each tiling level (SymPy), step by step",
                        description="Derive FLOP per element of naive, shared-memory-tiled and register-tiled SGEMM "
                                    "symbolically, and the per-SM thread limit of the GPU. --json prints the five "
                                    "formulas (naive, tiled_exact, tiled_limit, tiled_square, register_limit) as "
                                    "SymPy-parseable strings.")
    common(sp)
    sp.add_argument("--markdown", action="store_true", help="print the derivation as Markdown with LaTeX")
    sp.set_defaults(func=cmd_derive)

    sp = sub.add_parser("occupancy", help="blocks per SM for a block shape, and which limit binds",
                        description="CUDA's occupancy calculator: blocks per SM from threads, warps, resident blocks, "
                                    "registers and shared memory.")
    common(sp)
    sp.add_argument("--threads", type=positive_int, required=True, help="threads per block")
    sp.add_argument("--regs", type=registers, default=None, help="registers per thread, 1-255 (default: not limiting)")
    sp.add_argument("--smem", type=nonneg_int, default=0, help="shared memory per block in bytes (static + dynamic)")
    sp.set_defaults(func=cmd_occupancy)

    sp = sub.add_parser("predict", help="predict time and GFLOP/s of a config (default: the classic ladder)",
                        description="Predict time and FLOP/s with the binding limit. --config NAME:KEY=VAL,... "
                                    "(e.g. reg2d:BM=128,BN=128,BK=8,TM=8,TN=8; missing keys take the rung's classic "
                                    "values; may be repeated). Rungs: naive, smem_tiling, reg1d, reg2d, float4, "
                                    "double_buffer (or 01..06).")
    common(sp)
    sp.add_argument("--config", action="append", help="NAME[:KEY=VAL,...]; repeatable")
    size(sp)
    sp.add_argument("--regs", type=registers, default=None,
                    help="registers per thread for the --config configs, 1-255 (default: the compiler facts for the "
                         "GPU's architecture, or an estimate)")
    sp.add_argument("--model", choices=("timing", "roofline"), default="timing",
                    help="timing: the full model (simulator counts, compiler facts, latency hiding, waves; "
                         "default); roofline: the first model, min over FP32, DRAM and shared-memory roofs")
    sp.set_defaults(func=cmd_predict)

    sp = sub.add_parser("compare", help="model versus measured on shipped data (default: the H200 data set)",
                        description="Join measured rows with the model's predictions; per-row error and summary "
                                    "statistics (MAPE, Spearman, within 10 % / 25 %), beside the plain roofline. "
                                    "With --predictions FILE: score predictions committed before the measurement "
                                    "(experiments/predictions/<sweep>.jsonl) against the measured rows. "
                                    "JSON values are fractions (0.1 = 10 %).")
    sp.add_argument("data", nargs="*", help="JSON Lines files or folders (default: experiments/results/h200)")
    sp.add_argument("--json", action="store_true", help="print the summary as JSON")
    sp.add_argument("--rows", action="store_true", help="print every row")
    sp.add_argument("--model", choices=("timing", "roofline"), default="timing",
                    help="the model scored: timing (default; each rung predicted with parameters calibrated on "
                         "the other rungs) or roofline (the first model)")
    sp.add_argument("--published", nargs="?", const=True, default=None, metavar="FILE",
                    help="score the model against a published ladder on another GPU (default file: "
                         "experiments/published/rtxa6000_siboehm.toml); see analysis/published.py")
    sp.add_argument("--predictions", metavar="FILE", default=None,
                    help="score this predictions file (experiments/predict.py) instead of predicting now")
    sp.set_defaults(func=cmd_compare)

    sp = sub.add_parser("plot", help="draw one plot (roofline, scatter, sizes, occupancy, errors)",
                        description="Draw one plot as PNG from chosen data and GPU.")
    sp.add_argument("kind", help="roofline | scatter | sizes | occupancy | errors")
    sp.add_argument("data", nargs="*", help="JSON Lines files or folders (default: experiments/results/h200)")
    sp.add_argument("--gpu", default=None, help="GPU spec key (default: the data's GPU; occupancy: rtx4060 and h200)")
    sp.add_argument("--out", default=None,
                    help="output file, .png/.svg/.pdf (default reports/figures/<kind>.png, beside the report's)")
    sp.set_defaults(func=cmd_plot)

    sp = sub.add_parser("explain", help="per-level counts and times of one config, beside ncu counters",
                        description="Per-level counts and times, the binding limit and why, and measured "
                                    "hardware counters side by side where ncu data exists (the H200 at 2048^3: "
                                    "--gpu h200 --size 2048 2048 2048).")
    common(sp)
    sp.add_argument("--config", required=True, help="NAME[:KEY=VAL,...]")
    size(sp)
    sp.set_defaults(func=cmd_explain)

    sp = sub.add_parser("report", help="write the full report to reports/ (what no subcommand does)",
                        description="Write reports/report.md and its figures (reports/figures/).")
    sp.add_argument("--out", default="reports", help="output folder (default reports/)")
    sp.add_argument("data", nargs="*", help="JSON Lines files or folders (default: experiments/results/h200)")
    sp.set_defaults(func=cmd_report)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["report"])
    return run(lambda: args.func(args))


if __name__ == "__main__":
    sys.exit(main())
