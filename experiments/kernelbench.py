"""What the clock64 microbenchmarks share (``experiments.icache``, ``experiments.overlap``): one block per SM, thread
0 of each block stamping ``clock64`` around the loop, the second launch timed after a warm-up; the JSON result's
header; and their command line (``--out`` a new file, ``--iters``), which refuses bad input in one line before any
work, as ``experiments.microbench`` does."""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from typing import Callable

from .microbench import UsageError, _check_new_file, _write, require_gpu


def block_cycles(kernel, sms: int, threads: int, iters: int, shared_mem: int = 0) -> list[int]:
    """``clock64`` cycles of every block of the second of two launches of ``kernel(out, cycles, a, b, iters)`` on
    ``sms`` blocks of ``threads`` threads (the first warms the caches up)."""
    import cupy as cp
    out = cp.zeros(sms * threads, dtype=cp.float32)
    cyc = cp.zeros(sms, dtype=cp.int64)
    args = (out, cyc, cp.float32(0.999), cp.float32(0.001), cp.int32(iters))
    for _ in range(2):
        kernel((sms,), (threads,), args, shared_mem=shared_mem)
        cp.cuda.runtime.deviceSynchronize()
    return [int(c) for c in cyc.get()]


def device_sms() -> int:
    """The current device's SM count."""
    import cupy as cp
    return int(cp.cuda.Device().attributes["MultiProcessorCount"])


def result(schema: str, rows: list[dict]) -> dict:
    """The JSON object of one run: schema, version 1, date, device name, SM count, rows."""
    import cupy as cp
    dev = cp.cuda.Device()
    return {"schema": schema, "schema_version": 1,
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "gpu": cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode(), "sms": device_sms(), "rows": rows}


def main(name: str, doc: str, run: Callable[[int], dict], default_iters: int, argv: list[str] | None) -> int:
    """The command line of microbenchmark ``name``: ``run(iters)`` returns its result; ``--out`` writes it (JSON)."""
    ap = argparse.ArgumentParser(prog=f"python -m experiments.{name}", description=doc.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="JSON file to write (a new file; default: print only)")
    ap.add_argument("--iters", type=int, default=default_iters,
                    help=f"loop iterations per launch (default {default_iters})")
    args = ap.parse_args(argv)
    try:
        if args.iters < 1:
            raise UsageError("--iters must be at least 1")
        out = _check_new_file(args.out, "--out")
        require_gpu()
    except UsageError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    _write(out, json.dumps(run(args.iters)) + "\n")
    return 0
