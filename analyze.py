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

from model.errors import GemmscopeError  # noqa: E402

DEFAULT_GPU = "rtx4060"
DEFAULT_SIZE = (4096, 4096, 4096)


def _gpu(name: str):
    from model.spec import load_gpu
    return load_gpu(name)


def _print_json(obj) -> None:
    print(json.dumps(obj, indent=2, sort_keys=False, default=float))


# --------------------------------------------------------------------------------------------------
# derive
# --------------------------------------------------------------------------------------------------


def cmd_derive(args) -> int:
    from model.intensity import derive
    from model.occupancy import derive_thread_limit
    d = derive()
    if args.json:
        _print_json(d.to_json())
        return 0
    if args.markdown:
        print(d.markdown())
        return 0
    print(d.text())
    print("== Per-SM thread limit ==")
    print(derive_thread_limit(_gpu(args.gpu)).text())
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


def cmd_predict(args) -> int:
    from model.registry import KernelConfig, classic_configs
    from model.report import prediction_table, prediction_text
    predict = _predictor(args.model)
    gpu = _gpu(args.gpu)
    M, N, K = args.size
    if args.config:
        preds = [predict(gpu, KernelConfig.parse(c), M, N, K, registers=args.regs) for c in args.config]
        if args.json:
            _print_json([p.to_json() for p in preds])
        else:
            print("\n\n".join(prediction_text(p) for p in preds))
        return 0
    cfgs = [c for c in classic_configs() if c.rung != 0]
    preds = [predict(gpu, c, M, N, K) for c in cfgs]
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
    from analysis.compare import main as compare_main
    return compare_main(args)


def cmd_plot(args) -> int:
    from analysis.plots import main as plot_main
    return plot_main(args)


def cmd_explain(args) -> int:
    from analysis.explain import main as explain_main
    return explain_main(args)


def cmd_report(args) -> int:
    from analysis.report import main as report_main
    return report_main(args)


def _size(values):
    return tuple(int(v) for v in values)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="analyze.py",
        description="gemmscope: a roofline and occupancy model of tiled FP32 SGEMM, and its comparison with "
                    "real kernels measured on a GPU. With no subcommand: write the default report to reports/.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def common(sp, gpu_default=DEFAULT_GPU):
        sp.add_argument("--gpu", default=gpu_default,
                        help=f"GPU spec: a key of gpus/*.toml or a path to a spec file (default {gpu_default})")
        sp.add_argument("--json", action="store_true", help="machine-readable JSON output")

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
    sp.add_argument("--threads", type=int, required=True, help="threads per block")
    sp.add_argument("--regs", type=int, default=None, help="registers per thread (default: not limiting)")
    sp.add_argument("--smem", type=int, default=0, help="shared memory per block in bytes (static + dynamic)")
    sp.set_defaults(func=cmd_occupancy)

    sp = sub.add_parser("predict", help="predict time and GFLOP/s of a config (default: the classic ladder)",
                        description="Predict time and FLOP/s with the binding limit. --config NAME:KEY=VAL,... "
                                    "(e.g. reg2d:BM=128,BN=128,BK=8,TM=8,TN=8; missing keys take the rung's classic "
                                    "values; may be repeated). Rungs: naive, smem_tiling, reg1d, reg2d, float4, "
                                    "double_buffer (or 01..06).")
    common(sp)
    sp.add_argument("--config", action="append", help="NAME[:KEY=VAL,...]; repeatable")
    sp.add_argument("--size", nargs=3, type=int, default=DEFAULT_SIZE, metavar=("M", "N", "K"),
                    help="problem size (default 4096 4096 4096)")
    sp.add_argument("--regs", type=int, default=None, help="registers per thread (default: the compiler facts or an estimate)")
    sp.add_argument("--model", choices=("timing", "roofline"), default="timing",
                    help="timing: the full model (simulator counts, compiler facts, latency hiding, waves; "
                         "default); roofline: the first model, min over FP32, DRAM and shared-memory roofs")
    sp.set_defaults(func=cmd_predict)

    sp = sub.add_parser("compare", help="model versus measured on shipped data (default: the H200 data set)",
                        description="Join measured rows with the model's predictions; per-row error and summary "
                                    "statistics (MAPE, Spearman, within 10 %% / 25 %%), beside the plain roofline. "
                                    "JSON values are fractions (0.1 = 10 %%).")
    sp.add_argument("data", nargs="*", help="JSON Lines files or folders (default: experiments/results/h200)")
    sp.add_argument("--json", action="store_true", help="print the summary as JSON")
    sp.add_argument("--rows", action="store_true", help="print every row")
    sp.add_argument("--model", choices=("timing", "roofline"), default="timing",
                    help="the model scored: timing (default; each rung predicted with parameters calibrated on "
                         "the other rungs) or roofline (the first model)")
    sp.add_argument("--published", nargs="?", const=True, default=None, metavar="FILE",
                    help="score the model against a published ladder on another GPU (default file: "
                         "experiments/published/rtxa6000_siboehm.toml); see analysis/published.py")
    sp.set_defaults(func=cmd_compare)

    sp = sub.add_parser("plot", help="draw one plot (roofline, scatter, sizes, occupancy, errors)",
                        description="Draw one plot as PNG from chosen data and GPU.")
    sp.add_argument("kind", help="roofline | scatter | sizes | occupancy | errors")
    sp.add_argument("data", nargs="*", help="JSON Lines files or folders (default: experiments/results/h200)")
    sp.add_argument("--gpu", default=None, help="GPU spec key (default: the data's GPU; occupancy: rtx4060 and h200)")
    sp.add_argument("--out", default=None, help="output PNG path (default reports/<kind>.png)")
    sp.set_defaults(func=cmd_plot)

    sp = sub.add_parser("explain", help="per-level counts and times of one config, beside ncu counters",
                        description="Per-level counts and times, the binding limit and why, and measured "
                                    "hardware counters side by side where ncu data exists.")
    common(sp, gpu_default="h200")
    sp.add_argument("--config", required=True, help="NAME[:KEY=VAL,...]")
    sp.add_argument("--size", nargs=3, type=int, default=(2048, 2048, 2048), metavar=("M", "N", "K"))
    sp.set_defaults(func=cmd_explain)

    sp = sub.add_parser("report", help="write the full report to reports/ (what no subcommand does)")
    sp.add_argument("--out", default="reports", help="output folder (default reports/)")
    sp.add_argument("data", nargs="*", help="JSON Lines files or folders (default: experiments/results/h200)")
    sp.set_defaults(func=cmd_report)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["report"])
    try:
        return args.func(args)
    except GemmscopeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:          # output piped into head, less, ...: not an error
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
