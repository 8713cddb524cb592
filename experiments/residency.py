"""Forced residency on one GPU: the same kernel at b = 1, 2, 4, 6, 8 resident blocks per SM.

    python -m experiments.residency                 # measure (GPU): appends experiments/results/<gpu>/residency.jsonl
    python -m experiments.residency --predict-only  # no GPU: the model's predictions, written to
                                                    # experiments/predictions/residency.jsonl (never overwritten)
    python -m experiments.residency --dry-run       # list the rows and the model's predictions

Each kernel is launched with extra dynamic shared memory that it does not use, so that only ``b`` of its
blocks fit on an SM (``shared/reference/forced-residency.md``): the padding is found with the driver
(``cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor``, the kernel's
``max_dynamic_shared_size_bytes`` raised to the GPU's opt-in limit first), not by arithmetic. Everything
else is as in a sweep (``gpu/launcher.py``): fresh random inputs, the output poisoned and verified against a
float64 reference, the median of CUDA-event timings after a warm-up with L2 flushed, cuBLAS in the same run.
Rows follow the sweep schema (experiments/SCHEMA.md) plus ``extra_dynamic_smem_bytes`` (the padding) and
``target_blocks_per_sm``; the driver's resulting occupancy is the row's ``occupancy_driver``. A run resumes:
rows already in the file are skipped. The ladder: 256-thread blocks at b = 1, 2, 4, 6, 8 and 1024-thread
blocks at b = 1, 2 (a b above the kernel's own occupancy is skipped), the naive, shared-memory and
register-tiled classic configs, at 2048^3 - a few minutes of GPU time.

The model predicts the same rows from the residency alone (``model.timing.predict(...,
max_blocks_per_sm=b)``), with no change to its rates.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from model.registry import KernelConfig  # noqa: E402

SWEEP = "residency"
SIZE = (2048, 2048, 2048)
CONFIGS = {
    "01:BX=16,BY=16,COALESCED=1": (1, 2, 4, 6, 8),
    "02:BM=16,BN=16,BK=16": (1, 2, 4, 6, 8),
    "04:BM=128,BN=128,BK=8,TM=8,TN=8": (1, 2, 4, 6, 8),
    "05:BM=128,BN=128,BK=8,TM=8,TN=8": (1, 2, 4, 6, 8),
    "06:BM=128,BN=128,BK=8,TM=8,TN=8": (1, 2, 4, 6, 8),
    "03:BM=64,BN=64,BK=8,TM=8": (1, 2, 3),
    "01:BX=32,BY=32,COALESCED=1": (1, 2),
    "02:BM=32,BN=32,BK=32": (1, 2),
}
"""Config key -> the resident blocks per SM to force (256-thread blocks: 1, 2, 4, 6, 8; 512: 1, 2, 3; 1024: 1, 2)."""


def ladder(spec) -> list[tuple[KernelConfig, int, int]]:
    """(config, target b, natural blocks per SM from the model's occupancy) for every row that can run
    on ``spec``: a target above the natural occupancy is dropped (padding only lowers it)."""
    from model.facts import registers_for
    from model.occupancy import occupancy
    from model.registry import geometry
    out = []
    for key, bs in CONFIGS.items():
        cfg = KernelConfig.parse(key)
        g = geometry(cfg)
        regs = registers_for(cfg, spec.arch)
        natural = occupancy(spec, g.threads, regs or 32, g.smem_bytes).blocks_per_sm
        out.extend((cfg, b, natural) for b in bs if b <= natural)
    return out


def predictions(spec) -> list[dict]:
    from experiments.predict import PRED_SCHEMA, PRED_SCHEMA_VERSION, git_commit
    from experiments.sweep import now_iso
    from model.timing import predict
    commit, made = git_commit(), now_iso()
    rows = []
    for cfg, b, natural in ladder(spec):
        p = predict(spec, cfg, *SIZE, max_blocks_per_sm=b)
        rows.append({"schema": PRED_SCHEMA, "schema_version": PRED_SCHEMA_VERSION, "sweep": SWEEP,
                     "gpu_key": spec.key, "config": cfg.key, "label": cfg.label, "M": SIZE[0], "N": SIZE[1],
                     "K": SIZE[2], "target_blocks_per_sm": b, "natural_blocks_per_sm": natural,
                     "model": "timing", "model_commit": commit, "made": made, "time_s": p.time_s,
                     "flop_per_s": p.flop_per_s, "bound": p.bound})
    return rows


def find_padding(ck, b: int, limit: int) -> tuple[int, int] | None:
    """Smallest extra dynamic shared memory (bytes, 128-byte steps) at which the driver fits exactly ``b``
    blocks per SM; None if no padding up to ``limit`` gives ``b``. Returns (padding, blocks)."""
    import cupy as cp
    occ = lambda pad: int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(  # noqa: E731
        ck.kernel.kernel.ptr, ck.threads, ck.dynamic_smem_bytes + pad))
    if occ(0) == b:
        return 0, b
    if occ(0) < b:
        return None
    lo, hi = 0, limit // 128          # occ(lo*128) > b; find the smallest step with occ <= b
    if occ(hi * 128) > b:
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if occ(mid * 128) > b:
            lo = mid
        else:
            hi = mid
    got = occ(hi * 128)
    return (hi * 128, got) if got == b else None


def measure(out: Path, reps: int, say=lambda s: print(s, file=sys.stderr, flush=True)) -> int:
    from experiments.sweep import make_row, read_results, RowWriter
    from gpu import device, launcher
    info = device.detect_device()
    spec = device.device_spec(info)
    launcher.check_tf32_off()
    done = set()
    if out.exists():
        for r in read_results(out).rows:
            done.add((r.get("config_key"), r.get("target_blocks_per_sm")))
    todo = [(c, b) for c, b, _ in ladder(spec) if (c.key, b) not in done]
    say(f"residency on {spec.name}: {len(todo)} rows to run ({len(done)} already in {out})")
    if not todo:
        return 0
    run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-residency"
    problem = launcher.make_problem(*SIZE, seed=int(time.time()) % (2 ** 31))
    n = 0
    try:
        cublas = launcher.run_cublas(problem, reps=reps, l2_bytes=spec.l2_bytes)
        gpu = info.to_json(spec.key, device.sample_smi(info.pci_bus_id))
        with RowWriter(out) as w:
            for cfg, b in todo:
                ck = launcher.compile_config(cfg, spec)
                limit = spec.shared_bytes_per_block_optin - ck.attributes["shared_size_bytes"] - ck.dynamic_smem_bytes
                ck.kernel.max_dynamic_shared_size_bytes = ck.dynamic_smem_bytes + limit
                found = find_padding(ck, b, limit)
                if found is None:
                    say(f"  {cfg.label}: no padding gives {b} blocks per SM; skipped")
                    continue
                pad, got = found
                m = launcher.run_config(cfg, problem, spec=spec, reps=reps, extra_dynamic_smem=pad)
                row = make_row(m, sweep=SWEEP, run_id=run_id, gpu=gpu, cublas=cublas)
                row.update(extra_dynamic_smem_bytes=pad, target_blocks_per_sm=b)
                w.write(row)
                n += 1
                gf = f"{m.flop_per_s / 1e9:8.0f} GFLOP/s" if m.status == "ok" else m.status
                say(f"  [{n}/{len(todo)}] {cfg.label:<34} b={b} (driver {m.occupancy_driver}, pad {pad} B): {gf}")
    finally:
        problem.free()
    return 0


def score(pred_path: Path, meas_path: Path) -> tuple[list[dict], dict]:
    """Predictions committed before measuring against the measured forced-residency rows, matched on
    (config, size, target blocks per SM). Returns per-row dicts and summary statistics (GFLOP/s errors)."""
    from experiments.predict import read_predictions
    pred = {(r["config"], r["M"], r["N"], r["K"], r["target_blocks_per_sm"]): r for r in read_predictions(pred_path)}
    rows = []
    for line in meas_path.read_text(encoding="utf-8").splitlines():
        m = json.loads(line)
        key = (m["config_key"], m["M"], m["N"], m["K"], m.get("target_blocks_per_sm"))
        p = pred.get(key)
        if p is None or m.get("status") != "ok" or not m.get("verified") or not p.get("time_s"):
            continue
        rows.append({"label": m["label"], "b": key[-1], "natural": p.get("natural_blocks_per_sm"),
                     "driver": m.get("occupancy_driver"), "pred_flop_per_s": p["flop_per_s"],
                     "meas_flop_per_s": m["flop_per_s"], "error": m["median_s"] / p["time_s"] - 1.0})
    err = [abs(r["error"]) for r in rows]
    summary = {"rows": len(rows), "mape": sum(err) / len(err) if err else None, "max": max(err, default=None)}
    return rows, summary


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.residency", description=__doc__.split("\n\n")[0])
    ap.add_argument("--predict-only", action="store_true", help="write the model's predictions (no GPU)")
    ap.add_argument("--dry-run", action="store_true", help="list the rows with the model's predictions")
    ap.add_argument("--gpu", default="h200", help="GPU spec for --predict-only / --dry-run [h200]")
    ap.add_argument("--out", type=Path, help="output file (default: results/<gpu>/residency.jsonl, or "
                                             "predictions/residency.jsonl with --predict-only)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--score", nargs=2, type=Path, metavar=("PREDICTIONS", "RESULTS"),
                    help="score committed predictions against measured rows (no GPU)")
    a = ap.parse_args(argv)
    if a.score:
        try:
            rows, summary = score(*a.score)
        except (OSError, ValueError, KeyError) as exc:
            print(f"error: cannot score {a.score[0]} against {a.score[1]}: {exc}", file=sys.stderr)
            return 2
        print(f"{'config':<30} {'b':>2} {'natural':>7} {'driver':>6} {'pred GFLOP/s':>12} {'meas':>8} {'error':>7}")
        for r in rows:
            print(f"{r['label']:<30} {r['b']:>2} {r['natural']!s:>7} {r['driver']!s:>6} "
                  f"{r['pred_flop_per_s'] / 1e9:12.0f} {r['meas_flop_per_s'] / 1e9:8.0f} {100 * r['error']:+6.1f}%")
        if summary["rows"]:
            print(f"{summary['rows']} rows: MAPE {100 * summary['mape']:.1f} %, max {100 * summary['max']:.1f} %")
        return 0
    if a.reps < 10:
        print("error: --reps must be at least 10", file=sys.stderr)
        return 2
    if a.predict_only or a.dry_run:
        from model.spec import SpecError, load_gpu
        try:
            spec = load_gpu(a.gpu)
        except SpecError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        rows = predictions(spec)
        if a.dry_run:
            for r in rows:
                print(f"{r['label']:<34} b={r['target_blocks_per_sm']} (natural {r['natural_blocks_per_sm']}): "
                      f"{r['flop_per_s'] / 1e9:8.0f} GFLOP/s predicted, bound {r['bound']}")
            return 0
        out = a.out or ROOT / "experiments" / "predictions" / "residency.jsonl"
        if out.exists():
            print(f"error: {out} exists: predictions are never overwritten", file=sys.stderr)
            return 2
        from experiments.predict import write_predictions
        write_predictions(out, rows)
        print(f"{len(rows)} predictions written to {out}")
        return 0
    try:
        from gpu import device
        spec = device.device_spec(device.detect_device())
    except Exception as exc:  # noqa: BLE001 - no GPU / no CuPy: one clear line
        print(f"error: no CUDA GPU to measure on ({type(exc).__name__}: {exc}); use --predict-only", file=sys.stderr)
        return 2
    out = a.out or ROOT / "experiments" / "results" / spec.key / "residency.jsonl"
    return measure(out, a.reps)


if __name__ == "__main__":
    sys.exit(main())
