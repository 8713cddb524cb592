"""Collect Nsight Compute counters for every rung's classic config (default 2048^3) into ``ncu.jsonl``.

    python -m experiments.ncu_run [--out FILE] [--size N | --mnk M N K] [--configs KEY ...] [--extra-metrics NAME ...]
                                  [--ncu PATH]

For each config it runs

    ncu --clock-control none --csv --print-units base --metrics <METRICS> -k regex:<kernel>
        --launch-skip 1 --launch-count 1 python -m experiments.ncu_target <config_key> M N K

(``experiments/ncu_target.py`` launches the config twice; the first launch is the warm-up ncu skips).
cuBLAS (rung 00) has no kernel name of ours: ncu profiles every kernel (``-k regex:.``) of the two
calls and the second call's kernels are kept (the longest one's counters are the row's metrics).
A metric name ncu rejects is dropped and the run retried; the row lists what was dropped. One JSON
line per config, schema ``gemmscope.ncu`` v1 (experiments/SCHEMA.md).
"""
from __future__ import annotations

import argparse
import csv
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

from model.errors import GemmscopeError
from model.registry import KernelConfig, classic_configs, validate_size

from .sweep import RESULTS_DIR, RowWriter, SweepError, now_iso, read_results

SCHEMA = "gemmscope.ncu"
SCHEMA_VERSION = 1
REPO = Path(__file__).resolve().parent.parent
METRICS = (
    "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum", "lts__t_sectors_op_read.sum",
    "lts__t_sectors_op_write.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum", "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__inst_executed.sum", "sm__warps_active.avg.pct_of_peak_sustained_active", "gpu__time_duration.sum",
    "launch__registers_per_thread", "launch__occupancy_limit_registers", "sm__cycles_elapsed.avg.per_second",
)

# --------------------------------------------------------------------------------------------------
# Parsing ncu's CSV
# --------------------------------------------------------------------------------------------------

# unit -> (factor to the base unit, base unit); units not listed are kept as printed
_UNITS: dict[str, tuple[float, str]] = {}
for _base, _scaled in (("byte", (("", 1.0), ("K", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12))),):
    for _p, _f in _scaled:
        _UNITS[f"{_p}{_base}"] = (_f, "byte")
        _UNITS[f"{_p}B" if _p else "B"] = (_f, "byte")
for _name, _f in (("nsecond", 1.0), ("usecond", 1e3), ("msecond", 1e6), ("second", 1e9),
                  ("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9)):
    _UNITS[_name] = (_f, "nsecond")
for _name, _f in (("cycle/second", 1.0), ("cycle/usecond", 1e6), ("cycle/nsecond", 1e9), ("hz", 1.0),
                  ("Hz", 1.0), ("khz", 1e3), ("KHz", 1e3), ("mhz", 1e6), ("MHz", 1e6), ("ghz", 1e9), ("GHz", 1e9)):
    _UNITS[_name] = (_f, "cycle/second")


def parse_number(text: str) -> float | None:
    """``"1,342,177,280"`` -> 1342177280.0; ``"98.35"`` -> 98.35; ``"n/a"`` or ``""`` -> None."""
    s = text.strip().replace(",", "").replace("\u202f", "").replace(" ", "")
    if not s or s.lower() in ("n/a", "nan", "-"):
        return None
    try:
        return float(s)
    except ValueError:
        return None


def normalize(value: float | None, unit: str) -> tuple[float | None, str]:
    """A value in a scaled unit (``Mbyte``, ``msecond``, ``GHz``) in its base unit (byte, nsecond, cycle/second)."""
    u = unit.strip()
    if u in _UNITS:
        f, base = _UNITS[u]
        return (None if value is None else value * f), base
    return value, u


def parse_ncu_csv(text: str) -> list[dict[str, Any]]:
    """The kernels in ncu ``--csv`` output (details page), in profiling order:
    ``[{"id", "kernel_name", "metrics": {name: value}, "units": {name: unit}}]``.

    Lines before the CSV header (program output, ``==PROF==`` messages) are skipped; numbers may carry
    thousands separators; scaled units are converted to base units."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines)
                  if ln.startswith('"') and '"Metric Name"' in ln and '"Metric Value"' in ln), None)
    if start is None:
        return []
    body = [ln for ln in lines[start:] if ln.startswith('"')]
    kernels: dict[str, dict[str, Any]] = {}
    for rec in csv.DictReader(io.StringIO("\n".join(body))):
        kid = rec.get("ID", "")
        if kid == "ID" or not rec.get("Metric Name"):
            continue
        k = kernels.setdefault(kid, {"id": kid, "kernel_name": rec.get("Kernel Name", ""), "metrics": {}, "units": {}})
        value, unit = normalize(parse_number(rec.get("Metric Value", "")), rec.get("Metric Unit", "") or "")
        k["metrics"][rec["Metric Name"]] = value
        k["units"][rec["Metric Name"]] = unit
    return list(kernels.values())


def rejected_metrics(output: str, requested: Sequence[str]) -> list[str]:
    """Requested metric names that ncu's error messages name (e.g. ``==ERROR== Failed to find metric X``)."""
    bad = []
    for line in output.splitlines():
        low = line.lower()
        if "error" not in low and "not found" not in low and "invalid" not in low and "failed" not in low:
            continue
        for m in requested:
            if re.search(rf"(?<![\w.]){re.escape(m)}(?![\w.])", line) and m not in bad:
                bad.append(m)
    return bad


# --------------------------------------------------------------------------------------------------
# Running ncu
# --------------------------------------------------------------------------------------------------


def ncu_command(ncu: str, cfg: KernelConfig, M: int, N: int, K: int, metrics: Sequence[str],
                base_units: bool = True) -> list[str]:
    cmd = [ncu, "--clock-control", "none", "--csv"]
    if base_units:
        cmd += ["--print-units", "base"]
    cmd += ["--metrics", ",".join(metrics)]
    if cfg.rung == 0:
        cmd += ["-k", "regex:."]                       # every kernel of both calls; see module docstring
    else:
        cmd += ["-k", f"regex:{cfg.info.kernel}", "--launch-skip", "1", "--launch-count", "1"]
    return cmd + [sys.executable, "-m", "experiments.ncu_target", cfg.key, str(M), str(N), str(K)]


def ncu_version(ncu: str) -> str | None:
    try:
        p = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"Version\s+([\w.]+)", p.stdout)
    return m.group(1) if m else (p.stdout.strip().splitlines() or [None])[-1]


def profile(ncu: str, cfg: KernelConfig, M: int, N: int, K: int, metrics: Sequence[str] = METRICS,
            timeout_s: float = 600) -> dict[str, Any]:
    """Run ncu on one config; returns the row body (status, kernel, metrics, units, dropped_metrics, reason)."""
    metrics = list(metrics)
    dropped: list[str] = []
    base_units = True
    for _ in range(len(METRICS) + 2):
        cmd = ncu_command(ncu, cfg, M, N, K, metrics, base_units)
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=REPO, check=False)
        except subprocess.TimeoutExpired:
            return {"status": "error", "reason": f"ncu timed out after {timeout_s:.0f} s", "dropped_metrics": dropped}
        out = p.stdout + "\n" + p.stderr
        kernels = parse_ncu_csv(p.stdout) or parse_ncu_csv(out)
        if kernels:
            break
        if base_units and "print-units" in out:
            base_units = False                      # an ncu without --print-units: units are normalised here
            continue
        bad = rejected_metrics(out, metrics)
        if not bad or len(bad) == len(metrics):
            tail = "\n".join(out.strip().splitlines()[-15:])
            return {"status": "error", "reason": f"ncu exit {p.returncode}, no counters:\n{tail}",
                    "dropped_metrics": dropped, "command": " ".join(cmd)}
        dropped += bad
        metrics = [m for m in metrics if m not in bad]
    else:
        return {"status": "error", "reason": "ncu kept rejecting metrics", "dropped_metrics": dropped}
    if cfg.rung == 0:
        second = kernels[len(kernels) // 2:] if len(kernels) >= 2 else kernels
        main = max(second, key=lambda k: k["metrics"].get("gpu__time_duration.sum") or 0.0)
        names = [k["kernel_name"] for k in second]
    else:
        main = kernels[-1]
        names = [main["kernel_name"]]
    missing = [m for m in metrics if m not in main["metrics"]]
    return {"status": "ok", "reason": None, "kernel_name": main["kernel_name"], "kernels": names,
            "metrics": main["metrics"], "units": main["units"], "dropped_metrics": dropped + missing,
            "command": " ".join(cmd)}


def make_row(cfg: KernelConfig, M: int, N: int, K: int, body: dict, *, version: str | None, gpu_name: str,
             gpu_key: str) -> dict[str, Any]:
    row = {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "date": now_iso(), "gpu": gpu_name,
           "gpu_key": gpu_key, "ncu_version": version, "config_key": cfg.key, "rung": cfg.rung,
           "name": cfg.info.slug, "label": cfg.label, "params": cfg.p, "M": M, "N": N, "K": K,
           "kernel_name": None, "kernels": [], "metrics": {}, "units": {}, "dropped_metrics": [],
           "status": "error", "reason": None, "command": None}
    row.update(body)
    return row


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.ncu_run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="output file (default experiments/results/<gpu key>/ncu.jsonl)")
    ap.add_argument("--size", type=int, default=2048, help="square size M = N = K [2048]")
    ap.add_argument("--mnk", type=int, nargs=3, metavar=("M", "N", "K"), help="non-square size (overrides --size)")
    ap.add_argument("--configs", nargs="+", metavar="KEY",
                    help="config keys or NAME:K=V,... (default: every rung's classic configs, cuBLAS included)")
    ap.add_argument("--extra-metrics", nargs="+", default=[], metavar="NAME",
                    help="metrics collected beside the usual ones (a name ncu rejects is dropped, as theirs are)")
    ap.add_argument("--ncu", default=shutil.which("ncu") or "ncu", help="ncu executable")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per ncu run [600]")
    args = ap.parse_args(argv)
    try:
        M, N, K = validate_size(*(args.mnk or (args.size,) * 3))
        cfgs = [KernelConfig.parse(c) for c in args.configs] if args.configs else classic_configs()
        metrics = METRICS + tuple(m for m in args.extra_metrics if m not in METRICS)
        if shutil.which(args.ncu) is None:
            raise SweepError(f"ncu not found ({args.ncu!r}); give --ncu PATH")
        from gpu.device import detect_device, device_spec  # noqa: PLC0415
        info = detect_device()
        spec = device_spec(info)
        out = args.out or RESULTS_DIR / spec.key / "ncu.jsonl"
        done = {(r.get("config_key"), r.get("M"), r.get("N"), r.get("K")) for r in read_results(out).rows
                if r.get("schema") == SCHEMA and r.get("status") == "ok" and r.get("gpu_key") == spec.key}
        version = ncu_version(args.ncu)
        print(f"ncu {version} on {info.name}: {len(cfgs)} configs at {M}x{N}x{K} -> {out}", file=sys.stderr)
        failed = 0
        with RowWriter(out) as writer:
            for i, cfg in enumerate(cfgs, 1):
                if (cfg.key, M, N, K) in done:
                    print(f"[{i}/{len(cfgs)}] {cfg.label}: already in {out}", file=sys.stderr)
                    continue
                body = profile(args.ncu, cfg, M, N, K, metrics=metrics, timeout_s=args.timeout)
                writer.write(make_row(cfg, M, N, K, body, version=version, gpu_name=info.name, gpu_key=spec.key))
                failed += body["status"] != "ok"
                t = body.get("metrics", {}).get("gpu__time_duration.sum")
                shown = f"{t / 1e6:.3f} ms" if t else (body.get("reason") or " ").splitlines()[0][:120]
                drop = f", dropped {', '.join(body['dropped_metrics'])}" if body.get("dropped_metrics") else ""
                print(f"[{i}/{len(cfgs)}] {cfg.label}: {body['status']} {shown}{drop}", file=sys.stderr)
        return 1 if failed else 0
    except GemmscopeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
