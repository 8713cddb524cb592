"""Does a kernel slow the GPU's clock? Each config is verified and timed (``gpu.launcher.run_config``, the sweep's
own measurement), then launched back to back for ``--seconds`` while ``nvidia-smi`` samples the SM clock, the
power draw and the active clock-event (throttle) reasons every 20 ms.

    python -m experiments.clockprobe --out FILE.json [--seconds 1.5] KEY:M:N:K [KEY:M:N:K ...]

Why: the model runs every kernel at the sustained FFMA clock (``gpus/h200.toml``: 1.98 GHz during independent FFMA
chains on every SM); a kernel that draws more power may run at a lower clock, which Nsight Compute's cycle counts do
not show but wall-clock times do. JSON, schema ``gemmscope.clockprobe``, version 1: per config the verified
measurement (median, status, error), the sustained loop's per-launch CUDA-event times, and the nvidia-smi samples
taken during it (raw lines kept). Needs a GPU, CuPy and nvidia-smi.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import subprocess
import sys
import time

from .microbench import UsageError, _check_new_file, _write, require_gpu

QUERY = "timestamp,clocks.sm,power.draw,clocks_event_reasons.active,temperature.gpu"


def _parse_item(item: str):
    from model.registry import KernelConfig, validate_size
    try:
        key, m, n, k = item.rsplit(":", 3)
        cfg = KernelConfig.parse(key)
        M, N, K = validate_size(int(m), int(n), int(k))
    except Exception as exc:   # one line naming the bad item
        raise UsageError(f"{item!r} is not CONFIG_KEY:M:N:K ({exc})") from exc
    return cfg, M, N, K


def probe(cfg, M, N, K, seconds: float, seed: int) -> dict:
    import cupy as cp
    import numpy as np
    from gpu.device import device_spec
    from gpu.launcher import compile_config, make_problem, run_config
    from model.registry import geometry, grid

    spec = device_spec()
    prob = make_problem(M, N, K, seed)
    meas = run_config(cfg, prob, spec=spec, reps=20)
    row = {"config_key": cfg.key, "label": cfg.label, "M": M, "N": N, "K": K, "status": meas.status,
           "verified": bool(getattr(meas, "verified", False)), "median_s": meas.median_s,
           "rel_error": meas.rel_error}
    if meas.status != "ok":
        row["reason"] = meas.reason
        return row
    if cfg.rung == 0:
        def launch() -> None:
            cp.matmul(prob.A, prob.B, out=prob.C)
    else:
        ck = compile_config(cfg, spec)
        g, blk = grid(cfg, M, N), geometry(cfg).block
        args = (prob.A, prob.B, prob.C, np.int32(M), np.int32(N), np.int32(K))

        def launch() -> None:
            ck.kernel(g, blk, args, shared_mem=ck.dynamic_smem_bytes)
    smi = subprocess.Popen(["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits", "-lms", "20"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    time.sleep(0.2)
    t_start = time.time()
    times = []
    ev = [cp.cuda.Event() for _ in range(2)]
    while time.time() - t_start < seconds:
        ev[0].record()
        for _ in range(10):
            launch()
        ev[1].record()
        ev[1].synchronize()
        times.append(cp.cuda.get_elapsed_time(ev[0], ev[1]) * 1e-3 / 10)
    t_end = time.time()
    time.sleep(0.1)
    smi.terminate()
    out, _ = smi.communicate(timeout=5)
    row.update({"loop_s": t_end - t_start, "loop_launch_s": times, "loop_median_s": float(np.median(times)),
                "smi_query": QUERY, "smi_lines": out.strip().splitlines()})
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.clockprobe", description=__doc__.split("\n\n")[0])
    ap.add_argument("items", nargs="+", help="CONFIG_KEY:M:N:K")
    ap.add_argument("--out", default=None, help="JSON file to write (a new file; default: print only)")
    ap.add_argument("--seconds", type=float, default=1.5, help="sustained loop per config (default 1.5)")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args(argv)
    try:
        if not 0.1 <= args.seconds <= 60:
            raise UsageError("--seconds must be between 0.1 and 60")
        items = [_parse_item(it) for it in args.items]
        out = _check_new_file(args.out, "--out")
        require_gpu()
    except UsageError as exc:
        print(f"clockprobe: {exc}", file=sys.stderr)
        return 2
    import cupy as cp
    rows = []
    for cfg, M, N, K in items:
        r = probe(cfg, M, N, K, args.seconds, args.seed)
        clocks = [float(x.split(",")[1]) for x in r.get("smi_lines", []) if x.count(",") >= 4
                  and x.split(",")[1].strip().replace(".", "").isdigit()]
        print(f"{cfg.label:50s} {M}x{N}x{K} {r['status']} median {r['median_s'] or 0:.3e} s, loop "
              f"{r.get('loop_median_s', 0):.3e} s, SM clock {min(clocks, default=0):.0f}-{max(clocks, default=0):.0f}"
              f" MHz over {len(clocks)} samples", file=sys.stderr)
        rows.append(r)
    dev = cp.cuda.Device()
    res = {"schema": "gemmscope.clockprobe", "schema_version": 1,
           "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "gpu": cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode(), "rows": rows}
    _write(out, json.dumps(res) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
