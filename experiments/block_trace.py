"""Block trace: which SM ran each block of a real GEMM launch, and when it started and ended - how the GPU deals the
blocks left after the last full wave, and how long a block runs alone in the last, partly filled round.

    python -m experiments.block_trace --out FILE.json [--launches 5] [--case KEY M N K ...]

For each case (a config key and a size; default :data:`CASES`) the kernel's own source is compiled a second time with
a probe added (:func:`instrument`): thread (0, 0, 0) of every block reads ``%smid`` and ``%globaltimer`` (ns) when the
block starts and again when it leaves (a destructor, so every ``return`` is covered), and writes them to a device
array. Nothing else in the kernel changes. Per case, on fresh random inputs:

* the plain kernel is measured as every sweep measures it (``gpu.launcher.run_config``: output poisoned, checked
  against float64, median of CUDA-event timings with the L2 flushed before each);
* the probed kernel's output is checked the same way and it is timed the same way (so a probe that changed the
  kernel's speed would show);
* ``launches`` probed launches, the L2 flushed before each, are traced and every block's (SM, start, end) kept.

Per traced launch: blocks per SM (histogram, the busiest SM's count against ``ceil(blocks / SMs)``), and the blocks
that start after the first wave (start later than the first block's end): to how many SMs they went and how many
each got. JSON, schema ``gemmscope.block_trace``, version 1. Needs a GPU and CuPy; exits 1 if a kernel fails its
check.

Why (nineteenth session): the timing model gives the busiest SM ``ceil(blocks / SMs)`` blocks, ``n // b`` full rounds
of ``b`` and a partial one. The blind sets' worst rows (rung 12's split-K at 864, 384 and 336 blocks, ``b = 2``: 25-41 %
optimistic) all have an odd ``ceil(blocks / SMs)``: the leftover blocks may go to the slots that free first, two to an
SM, so that the busiest SM runs a full last round. Other rows (rung 06 at 2048^3, 512 blocks, ``b = 3``) fit the even
deal. The trace says which, per launch.
"""
from __future__ import annotations

import argparse
import json
import re
import sys

CASES: tuple[tuple[str, int, int, int], ...] = (
    ("12:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=3,SPREAD=8", 6848, 4, 3328),
    ("12:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=3,SPREAD=8", 3072, 22, 2240),
    ("12:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=3,SPREAD=8", 2112, 3, 1088),
    ("12:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=8,STAGES=3,SPREAD=8", 6144, 16, 1024),
    ("12:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=3,SPREAD=8", 6144, 64, 1024),
    ("11:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=3,SPREAD=1", 2432, 2432, 2432),
    ("10:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=3", 3072, 3072, 3072),
    ("10:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=1,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=4", 768, 512, 14336),
    ("08:BM=64,BN=128,BK=8,WM=32,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=3", 2048, 2048, 2048),
    ("06:BM=64,BN=128,BK=8,TM=16,TN=4", 2048, 2048, 2048),
    ("06:BM=64,BN=128,BK=8,TM=4,TN=16", 2048, 2048, 2048),
    ("06:BM=64,BN=64,BK=8,TM=8,TN=8", 2048, 2048, 2048),
    ("06:BM=64,BN=32,BK=16,TM=4,TN=8", 2048, 2048, 2048),
    ("05:BM=128,BN=128,BK=8,TM=8,TN=8", 3072, 3072, 96),
    ("02:BM=32,BN=32,BK=32", 56, 4608, 4608),
    ("02:BM=16,BN=16,BK=16", 63, 5760, 2112),
    ("01:BX=32,BY=32,COALESCED=0", 5440, 35, 3840),
    ("01:BX=16,BY=16,COALESCED=1", 1085, 1113, 1597),
)
"""(config key, M, N, K): launches of more than one wave whose last wave is partly filled, from the shipped rows
where the even deal and a deal to the slots that free first predict different times (both directions)."""

K12 = "12:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=3,SPREAD=8"
K10S = "10:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=1,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=4"
K11 = "11:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=3,SPREAD=1"
K10 = "10:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=3"
K08 = "08:BM=64,BN=128,BK=8,WM=32,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=3"
ORDER_CASES: tuple[tuple[str, int, int, int], ...] = (
    (K12, 3072, 128, 1024), (K12, 3072, 22, 4096), (K12, 4736, 64, 2048), (K12, 6848, 4, 1024),
    (K10S, 768, 512, 4096), (K10S, 1024, 384, 8192),
    (K11, 3072, 2048, 1024), (K11, 2432, 2432, 1024),
    (K10, 2432, 2432, 2432), (K10, 3072, 2048, 2048),
    (K08, 1536, 2816, 2048), (K08, 2048, 2048, 1024),
    ("06:BM=64,BN=128,BK=8,TM=16,TN=4", 2048, 2048, 1024), ("06:BM=64,BN=32,BK=16,TM=4,TN=8", 2048, 2048, 1024),
)
"""(``--set order``) Configs of CASES whose deal came out random (12, 11, 06 16x4) or even (10, 08, 06 64x32x16) at
other sizes: is the order a property of the kernel or of the launch?"""

TRACE_MAX = 65536
"""Blocks a launch may have: the probe's device array holds this many (SM, start, end) records."""

PROBE = r"""
#define GS_TRACE_MAX """ + str(TRACE_MAX) + r"""
extern "C" { __device__ unsigned long long gs_trace[3 * GS_TRACE_MAX]; }
struct GsBlockProbe {
    unsigned long long t0;
    unsigned int sm;
    bool on;
    __device__ GsBlockProbe() {
        on = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
        if (on) {
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
            asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        }
    }
    __device__ ~GsBlockProbe() {
        if (on) {
            unsigned long long t1;
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
            const unsigned long long b = blockIdx.x + (unsigned long long)gridDim.x *
                                         (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
            if (b < GS_TRACE_MAX) { gs_trace[3 * b] = sm; gs_trace[3 * b + 1] = t0; gs_trace[3 * b + 2] = t1; }
        }
    }
};
"""


class ProbeError(ValueError):
    """The kernel source has no ``__global__`` function whose body the probe can open."""


def instrument(src: str) -> str:
    """``src`` with :data:`PROBE` after its ``#include`` lines and ``GsBlockProbe gs_probe_;`` as the first statement
    of every ``__global__`` function (found by the first ``{`` after ``__global__``)."""
    out, pos, n = [], 0, 0
    for m in re.finditer(r"__global__", src):
        if m.start() < pos:
            continue
        brace = src.find("{", m.end())
        if brace < 0:
            break
        out.append(src[pos:brace + 1])
        out.append(" GsBlockProbe gs_probe_;")
        pos = brace + 1
        n += 1
    if n == 0:
        raise ProbeError("no __global__ function in the source")
    out.append(src[pos:])
    body = "".join(out)
    incl = list(re.finditer(r"^#include[^\n]*\n", body, flags=re.M))
    at = incl[-1].end() if incl else 0
    return body[:at] + PROBE + body[at:]


def summarise(rec: list[tuple[int, int, int]], sms: int) -> dict:
    """Per launch: blocks per SM (histogram; busiest against ceil(blocks / SMs)); the blocks started after the first
    block ended (the refill) - how many, over how many SMs, the most one SM got; block durations (ns) of the blocks
    in the first wave and in the refill."""
    per: dict[int, int] = {}
    for sm, _, _ in rec:
        per[sm] = per.get(sm, 0) + 1
    t_first_end = min(r[2] for r in rec)
    t0 = min(r[1] for r in rec)
    late = [r for r in rec if r[1] >= t_first_end]
    late_per: dict[int, int] = {}
    for sm, _, _ in late:
        late_per[sm] = late_per.get(sm, 0) + 1
    hist: dict[int, int] = {}
    for c in per.values():
        hist[c] = hist.get(c, 0) + 1
    first = sorted(r[2] - r[1] for r in rec if r[1] < t_first_end)
    refill = sorted(r[2] - r[1] for r in late)
    med = (lambda v: v[len(v) // 2] if v else None)
    return {"blocks": len(rec), "sms_used": len(per), "busiest_sm_blocks": max(per.values()),
            "even_blocks": -(-len(rec) // sms), "blocks_per_sm_histogram": {str(k): v for k, v in sorted(hist.items())},
            "span_ns": max(r[2] for r in rec) - t0, "first_wave_blocks": len(rec) - len(late),
            "refill_blocks": len(late), "refill_sms": len(late_per),
            "refill_most_on_one_sm": max(late_per.values()) if late_per else 0,
            "first_wave_block_ns_median": med(first), "refill_block_ns_median": med(refill),
            "last_block_start_ns": max(r[1] for r in rec) - t0}


def refill_share(result: dict) -> dict:
    """From a stored result: per traced launch whose even deal and random-order deal
    (``model.timing.busiest_sm_rounds``) give the busiest SM different counts, which one the measured busiest SM
    (the median over its traced launches) is nearer to; ``share`` = random / (random + even). Ties count half each."""
    import numpy as np
    from model.timing import busiest_sm_rounds
    sms = int(result["sms"])
    rows, rnd, even = [], 0.0, 0.0
    for row in result["rows"]:
        traces = row["traces"]
        last = traces[-1]["summary"]
        blocks, b = last["blocks"], round(last["first_wave_blocks"] / sms)   # b: the first wave's blocks per SM
        counts = []
        for q in (False, True):
            f, m = busiest_sm_rounds(np.array([blocks]), sms, b, random_order=q)
            counts.append(int(f[0]) * b + int(m[0]))
        seen = float(np.median([t["summary"]["busiest_sm_blocks"] for t in traces]))
        verdict = "same"
        if counts[0] != counts[1]:
            de, dr = abs(seen - counts[0]), abs(seen - counts[1])
            verdict = "random" if dr < de else "even" if de < dr else "tie"
            rnd += 1.0 if dr < de else 0.5 if dr == de else 0.0
            even += 1.0 if de < dr else 0.5 if dr == de else 0.0
        rows.append({"label": row["label"], "M": row["M"], "N": row["N"], "K": row["K"], "blocks": blocks,
                     "resident": b, "busiest_seen": seen, "busiest_even": counts[0], "busiest_random": counts[1],
                     "nearer": verdict})
    return {"rows": rows, "random": rnd, "even": even, "share": rnd / (rnd + even) if rnd + even else None}


def launch_stats(rec: list, sms: int) -> dict:
    """Of one traced launch (``[sm, start, end]`` per block): the first wave's blocks per SM, the median spread of the
    end times of one SM's first-wave blocks and the standard deviation of the SMs' mean end times (ns), and how many
    of the first ``L`` blocks to start after the first wave went to the SMs of the first ``L`` slots to free."""
    import numpy as np
    from collections import Counter
    a = np.asarray(rec, dtype=np.int64)
    sm, t0, t1 = a[:, 0], a[:, 1], a[:, 2]
    first = t0 < t1.min()
    spread, ends = [], []
    for s in np.unique(sm[first]):
        e = np.sort(t1[first & (sm == s)])
        ends.append(e.mean())
        if len(e) > 1:
            spread.append(e[-1] - e[0])
    late = int((~first).sum())
    L = min(late, int(first.sum()))
    got = Counter(sm[~first][np.argsort(t0[~first])[:L]].tolist())
    freed = Counter(sm[first][np.argsort(t1[first])[:L]].tolist())
    return {"resident": round(int(first.sum()) / sms), "one_sm_end_spread_ns": float(np.median(spread)) if spread else 0.0,
            "sm_end_sd_ns": float(np.std(ends)), "refill_checked": L,
            "refill_on_first_freed": int(sum(min(got[k], freed[k]) for k in got))}


def report(result: dict) -> str:
    """The Markdown table of a stored result: per case, the busiest SM of every traced launch against the even and the
    random-order deal (``model.timing.busiest_sm_rounds``), where the blocks after the first wave went, and how far
    apart one SM's blocks and the SMs end (the last traced launch); then the verdict count of :func:`refill_share`."""
    sms = int(result["sms"])
    share = refill_share(result)
    L = ["| config | size | blocks | resident | busiest SM per launch | even deal | random order | after the first "
         "wave: blocks -> SMs (most on one) | on the first-freed slots | one SM's blocks end within | SMs' ends, sd |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row, v in zip(result["rows"], share["rows"]):
        t = row["traces"][-1]
        st, sm = launch_stats(t["raw"], sms), t["summary"]
        busiest = ", ".join(str(x["summary"]["busiest_sm_blocks"]) for x in row["traces"])
        L.append(f"| {row['label']} | {row['M']}x{row['N']}x{row['K']} | {v['blocks']} | {v['resident']} | {busiest} | "
                 f"{v['busiest_even']} | {v['busiest_random']} | {sm['refill_blocks']} -> {sm['refill_sms']} "
                 f"({sm['refill_most_on_one_sm']}) | {st['refill_on_first_freed']} of {st['refill_checked']} | "
                 f"{st['one_sm_end_spread_ns'] / 1e3:.1f} us | {st['sm_end_sd_ns'] / 1e3:.1f} us |")
    L += ["", f"Where the two deals differ: nearer the random order {share['random']:g}, nearer the even deal "
              f"{share['even']:g} (share {share['share']:.3f})."]
    return "\n".join(L)


def run_case(key: str, M: int, N: int, K: int, launches: int, seed: int, log=print) -> dict:
    import cupy as cp
    import numpy as np
    from gpu.device import device_spec
    from gpu.launcher import NVRTC_OPTIONS, check_output, kernel_source, make_problem, run_config
    from gpu.timing import flusher, time_launches
    from model.registry import KernelConfig, geometry, grid
    cfg = KernelConfig.parse(key)
    spec = device_spec()
    prob = make_problem(M, N, K, seed)
    plain = run_config(cfg, prob, spec=spec, reps=20)
    row = {"config_key": cfg.key, "label": cfg.label, "M": M, "N": N, "K": K, "seed": seed,
           "plain_status": plain.status, "plain_median_s": plain.median_s if plain.status == "ok" else None,
           "plain_times_s": list(plain.times_s or []), "num_regs": (plain.attributes or {}).get("num_regs")}
    g = geometry(cfg)
    gx, gy, gz = grid(cfg, M, N)
    blocks = gx * gy * gz
    if blocks > TRACE_MAX:
        raise ValueError(f"{cfg.label} at {M}x{N}x{K}: {blocks} blocks, more than the probe's {TRACE_MAX}")
    mod = cp.RawModule(code=instrument(kernel_source(cfg)), options=NVRTC_OPTIONS,
                       name_expressions=[cfg.name_expression])
    ker = mod.get_function(cfg.name_expression)
    if g.dynamic_smem_bytes > spec.shared_bytes_per_block:
        ker.max_dynamic_shared_size_bytes = g.dynamic_smem_bytes
    trace = cp.ndarray((3 * TRACE_MAX,), dtype=cp.uint64, memptr=mod.get_global("gs_trace"))
    args = (prob.A, prob.B, prob.C, np.int32(M), np.int32(N), np.int32(K))

    def launch():
        if g.split_k > 1:
            prob.C.fill(0)
        else:
            prob.C.fill(np.nan)
        ker((gx, gy, gz), g.block, args, shared_mem=g.dynamic_smem_bytes)

    launch()
    cp.cuda.runtime.deviceSynchronize()
    _, why = check_output(prob)
    row["probed_num_regs"] = int(ker.num_regs)
    row["probed_check"] = "ok" if why is None else why
    flush = flusher(spec.l2_bytes).flush
    times = time_launches(launch, 20, flush)
    row["probed_times_s"] = times
    row["probed_median_s"] = float(np.median(times))
    traces = []
    for _ in range(launches):
        trace.fill(0)
        flush()
        launch()
        cp.cuda.runtime.deviceSynchronize()
        raw = trace[:3 * blocks].get().reshape(-1, 3)
        rec = [(int(a), int(b), int(c)) for a, b, c in raw]
        traces.append({"summary": summarise(rec, spec.sm_count), "raw": [list(r) for r in rec]})
    row["grid"], row["block"], row["traces"] = [gx, gy, gz], list(g.block), traces
    s = traces[-1]["summary"]
    log(f"  {cfg.label:48s} {M}x{N}x{K}: {blocks} blocks; plain {1e6 * (row['plain_median_s'] or 0):.1f} us, probed "
        f"{1e6 * row['probed_median_s']:.1f} us ({row['probed_check']}); busiest SM "
        f"{[t['summary']['busiest_sm_blocks'] for t in traces]} (even {s['even_blocks']}); refill "
        f"{s['refill_blocks']} blocks on {s['refill_sms']} SMs, most on one {[t['summary']['refill_most_on_one_sm'] for t in traces]}; "
        f"block {s['first_wave_block_ns_median']} ns first wave, {s['refill_block_ns_median']} ns refill")
    prob.free()
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.block_trace", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="JSON file to write (a new file)")
    ap.add_argument("--report", metavar="FILE", help="print the table of a stored result (.json or .json.gz; no GPU)")
    ap.add_argument("--launches", type=int, default=5, help="traced launches per case (default 5)")
    ap.add_argument("--seed", type=int, default=1900, help="seed of the first case's inputs (default 1900)")
    ap.add_argument("--case", nargs=4, action="append", metavar=("KEY", "M", "N", "K"),
                    help="a config key and a size (repeatable; default: the built-in CASES)")
    ap.add_argument("--set", choices=("main", "order"), default="main",
                    help="built-in cases: main (CASES, default) or order (ORDER_CASES)")
    a = ap.parse_args(argv)
    if a.report:
        import gzip
        from pathlib import Path
        path = Path(a.report)
        try:
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt") as f:
                res = json.load(f)
            if res.get("schema") != "gemmscope.block_trace":
                raise ValueError(f"schema {res.get('schema')!r}, not gemmscope.block_trace")
        except (OSError, ValueError) as exc:
            print(f"block_trace: --report {a.report}: {exc}", file=sys.stderr)
            return 2
        print(report(res))
        return 0
    from .microbench import UsageError, _check_new_file, require_gpu
    try:
        if not a.out:
            raise UsageError("--out is required (or --report FILE)")
        if a.launches < 1:
            raise UsageError("--launches must be at least 1")
        cases = CASES if a.set == "main" else ORDER_CASES
        if a.case:
            from model.registry import KernelConfig
            cases = []
            for key, m, n, k in a.case:
                KernelConfig.parse(key)
                if not (m.isdigit() and n.isdigit() and k.isdigit()) or min(int(m), int(n), int(k)) < 1:
                    raise UsageError(f"--case {key} {m} {n} {k}: M, N, K must be positive integers")
                cases.append((key, int(m), int(n), int(k)))
        out = _check_new_file(a.out, "--out")
        require_gpu()
    except (UsageError, ValueError) as exc:
        print(f"block_trace: {exc}", file=sys.stderr)
        return 2
    from .kernelbench import result
    rows, bad = [], 0
    for i, (key, m, n, k) in enumerate(cases):
        r = run_case(key, m, n, k, a.launches, a.seed + i)
        bad += r["plain_status"] != "ok" or r["probed_check"] != "ok"
        rows.append(r)
    with open(out, "w") as f:
        f.write(json.dumps(result("gemmscope.block_trace", rows)) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
