"""The default report: ``python analyze.py`` (or ``analyze.py report [--out DIR] [DATA...]``) writes
``<out>/report.md`` with its figures in ``<out>/figures/``.

It follows the seed's chain in order - arithmetic intensity, occupancy (16x16 against 32x32 blocks), then
each rung of the ladder and the limit it moves - and ends with the model against the measurements and a
glossary of every limit it names. Every number about the model is read from the model's
:class:`~model.roofline.Prediction` objects (time, binding limit, each limit's time and formula,
occupancy, intensity), never re-derived here: when the model changes, the text, the tables and the
occupancy plot change with it and still say why. Every table and figure names the command that prints it.

Without measured data section 4 says so and the report still has the other sections, the occupancy plot
and a predictions-only roofline.
"""
from __future__ import annotations

from pathlib import Path

from .data import NoDataError, load

REPORT_NAME = "report.md"
FIG_DIR = "figures"
SEED_GPU = "rtx4060"
MEASURED_GPU = "h200"
SEED_SIZE = (4096, 4096, 4096)
SECTIONS = ("1. Arithmetic intensity, derived", "2. Occupancy: 16x16 against 32x32 blocks",
            "3. The ladder: each rung and the limit it moves", "4. Model versus measured", "5. The limits, defined")

# The two block sizes of the seed's occupancy argument, as configs of the naive and the smem-tiling rung.
BLOCK_PAIRS = (("naive", "01:BX=16,BY=16,COALESCED=1", "01:BX=32,BY=32,COALESCED=1"),
               ("smem tiling", "02:BM=16,BN=16,BK=16", "02:BM=32,BN=32,BK=32"))

LIMIT_DEFINITIONS = {
    # the timing model's limits (model/timing.py)
    "issue": "instruction issue: every warp instruction of the main loop (SASS, from the compiler facts) goes "
             "through one of the SM's 4 warp schedulers, one per cycle, at an efficiency that falls when few "
             "warps are resident",
    "shared": "shared-memory bandwidth: the shared-memory wavefronts (loads, stores, bank conflicts counted by "
              "the access simulator) at the SM's measured or architectural wavefronts per cycle",
    "l1": "the L1 tag stage: one 128-byte line of global loads per SM cycle; a warp that touches many lines "
          "per request (uncoalesced, or rows of A re-read by every warp) is limited by it",
    "latency": "exposed latency: time the resident blocks spend waiting for their tile loads from L2/DRAM "
               "(or spill reloads) that the other resident blocks cannot hide; the fewer resident blocks, "
               "the more of it is exposed",
    "l2": "L2 bandwidth: the bytes of every tile load (A read once per block column, B once per block row) "
          "over the L2's bandwidth",
    "dram": "DRAM bandwidth: the bytes that miss in L2 (A, B, C once plus re-reads that L2 cannot hold) over "
            "the DRAM bandwidth",
    # the first roofline model (model/roofline.py)
    "fp32": "FP32 compute: the FLOPs on the SM's FP32 lanes at the boost clock (the FP32 peak)",
    # occupancy limiters (model/occupancy.py)
    "threads": "occupancy limited by thread (warp) slots: the SM holds at most so many threads",
    "blocks": "occupancy limited by the resident-block limit per SM",
    "registers": "occupancy limited by registers: threads x registers per thread fill the register file",
    "shared_memory": "occupancy limited by shared memory per SM",
}


def _img(path: Path, root: Path, alt: str) -> str:
    return f"![{alt}]({path.relative_to(root).as_posix()})"


def _name(gpu) -> str:
    return gpu.name.split(" (")[0]


def _cmd(text: str) -> str:
    return f"*Command:* `{text}`"


def _ms(t: float) -> str:
    from model.units import fmt_time
    return fmt_time(t)


# --------------------------------------------------------------------------------------------------
# The seed's 16x16 against 32x32, read from the model's predictions
# --------------------------------------------------------------------------------------------------


def block_predictions(gpu, size=SEED_SIZE) -> list[tuple[str, object, object]]:
    """``(rung name, Prediction 16x16, Prediction 32x32)`` for the naive and smem-tiling rungs on ``gpu``
    (timing model), skipping pairs the GPU cannot launch."""
    from model.errors import ConfigError
    from model.registry import KernelConfig
    from model.timing import predict
    out = []
    for name, k16, k32 in BLOCK_PAIRS:
        try:
            out.append((name, predict(gpu, KernelConfig.parse(k16), *size), predict(gpu, KernelConfig.parse(k32),
                                                                                   *size)))
        except ConfigError:
            continue
    return out


def why_blocks_differ(p16, p32) -> str:
    """One or two sentences, from the two predictions only, on why one block size is predicted faster."""
    o16, o32 = p16.occupancy, p32.occupancy
    fast, slow = (p16, p32) if p16.time_s <= p32.time_s else (p32, p16)
    side = lambda p: "16x16" if p is p16 else "32x32"  # noqa: E731
    more_threads = p16 if (o16.active_threads if o16 else 0) >= (o32.active_threads if o32 else 0) else p32
    bf, bs = fast.binding, slow.binding
    same = bf.name == bs.name
    ratio = slow.time_s / fast.time_s
    head = (f"{side(fast)} is predicted {ratio:.2f}x faster ({_ms(fast.time_s)} against {_ms(slow.time_s)}). ")
    if abs(ratio - 1) < 0.02:
        head = f"Both are predicted about equal ({_ms(p16.time_s)} and {_ms(p32.time_s)}). "
    a16 = o16.active_threads if o16 else 0
    a32 = o32.active_threads if o32 else 0
    if a16 == a32:
        occ = (f"Both blocks keep {a16} threads active per SM ({o16.blocks_per_sm} and {o32.blocks_per_sm} blocks), "
               "so occupancy cannot decide")
    elif fast is more_threads:
        occ = "More active threads is the better choice here, as the seed's argument says"
    else:
        occ = (f"Occupancy alone would pick {side(more_threads)} ({more_threads.occupancy.active_threads} active "
               f"threads per SM against {fast.occupancy.active_threads}), but occupancy is not what binds")
    if same:
        lim = (f"both are bound by `{bf.name}`, which takes {_ms(bf.time_s)} for {side(fast)} and "
               f"{_ms(bs.time_s)} for {side(slow)} ({side(fast)}: {bf.formula}; {side(slow)}: {bs.formula})")
    else:
        lim = (f"{side(fast)} is bound by `{bf.name}` ({_ms(bf.time_s)}: {bf.formula}), {side(slow)} by "
               f"`{bs.name}` ({_ms(bs.time_s)}: {bs.formula})")
    return head + occ + ": " + lim + "."


def block_size_notes(gpus, rows=None, size=SEED_SIZE) -> dict:
    """GPU key -> short text for the occupancy plot: the model's times of the two naive blocks (and the
    measured ones, where ``rows`` has them), read from the Prediction objects."""
    notes = {}
    meas = _measured_blocks(rows, size) if rows else {}
    for gpu in gpus:
        preds = block_predictions(gpu, size)
        lines = [f"timing model at {size[0]}^3 ({gpu.key}):"]
        for name, p16, p32 in preds:
            lines.append(f"  {name:11s} 16x16 {_ms(p16.time_s):>8s} ({p16.bound}), "
                         f"32x32 {_ms(p32.time_s):>8s} ({p32.bound})")
            m = meas.get((gpu.key, name))
            if m:
                lines.append(f"  {'measured':11s} 16x16 {_ms(m[0]):>8s},        32x32 {_ms(m[1]):>8s}")
        if not any((gpu.key, name) in meas for name, _, _ in preds):
            lines.append("  (predicted only" + (": no measurements of this GPU in the data)" if rows else ")"))
        notes[gpu.key] = "\n".join(lines)
    return notes


def _measured_blocks(rows, size) -> dict:
    """(gpu key, rung name) -> (median s 16x16, median s 32x32) of ok rows at ``size``."""
    from .data import latest
    by = {}
    for r in latest(rows or []):
        if r.ok and r.size == tuple(size):
            by[(r.device.key, r.key)] = r.median_s
    out = {}
    for name, k16, k32 in BLOCK_PAIRS:
        from model.registry import KernelConfig
        a, b = KernelConfig.parse(k16).key, KernelConfig.parse(k32).key
        for gkey in {g for g, _ in by}:
            if (gkey, a) in by and (gkey, b) in by:
                out[(gkey, name)] = (by[(gkey, a)], by[(gkey, b)])
    return out


# --------------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------------


def _intro() -> str:
    return "\n".join([
        "# gemmscope report",
        "",
        "How fast should a tiled FP32 SGEMM kernel be on a GPU, why, and how far is the real one? Written by "
        "`python analyze.py` (the same as `python analyze.py report --out reports`). Units: SI, decimal prefixes "
        "(1 GFLOP/s = 1e9 FLOP/s, 1 ms = 1e-3 s); errors are shown in %.",
        "",
        "**The seed** is the study note this project grew from (`shared/seed/`, in Chinese: *CUDA GEMM "
        "optimisation notes*). It derives the arithmetic intensity of naive and tiled SGEMM, counts the thread "
        "slots of an RTX 4060 SM to argue that 16x16 blocks beat 32x32 ones, and climbs a ladder of kernels - "
        "naive, shared-memory tiling, 1D and 2D register tiling - reading Nsight Compute at each step. This "
        "report follows that chain in order and checks each step against the model (`model/`) and, where we "
        "have it, against kernels measured on an NVIDIA H200. The seed's GPU, the RTX 4060, is predicted only: "
        "no RTX 4060 measurements are shipped.",
        "",
        "Contents: " + " | ".join(SECTIONS),
        "",
        "How to read the limit names (`issue`, `l1`, `shared`, `latency`, `dram`, ...): section 5 defines each.",
        "",
    ])


def _intensity_section(seed_gpu, ladder_preds) -> str:
    from .cache import derivation
    from .plots import naive_seed_intensity
    K = SEED_SIZE[2]
    xi = naive_seed_intensity(K)
    dram = seed_gpu.dram_bandwidth_bytes_per_s
    lines = [f"## {SECTIONS[0]}", "",
             "FLOP per element accessed at each tiling level, counted and simplified symbolically.", "",
             _cmd("python analyze.py derive --markdown"), "", derivation()["markdown"], "",
             "**What it means for the seed's GPU.** In bytes (4 per FP32 element) the naive kernel does "
             f"2K FLOPs per 4(2K + 1) bytes: {xi:.3f} FLOP/B at K = {K}. If every one of those bytes came "
             f"from DRAM, the {_name(seed_gpu)} ({dram / 1e9:.0f} GB/s) could run it at no more than "
             f"{xi * dram / 1e9:,.0f} GFLOP/s - the *plain roofline* of the naive kernel."]
    naive = [p for p in ladder_preds if p.config.rung == 1 and p.config.p.get("COALESCED", 1) == 1]
    if naive:
        p = max(naive, key=lambda q: q.flop_per_s)
        idram = p.intensity_flop_per_byte.get("dram")
        lines += ["", f"The timing model predicts {p.config.label} at {p.flop_per_s / 1e9:,.0f} GFLOP/s, "
                      f"{p.flop_per_s / (xi * dram):.0f}x that plain roofline. Not a contradiction: the "
                      "plain roofline assumes no reuse, but the rows of A and columns of B that neighbouring "
                      "threads and blocks re-read are served by L1 and L2, so DRAM sees only "
                      + (f"about {p.flops / idram / 1e9:.3g} GB, an intensity of {idram:.1f} FLOP/B at DRAM. "
                         if idram else "a fraction of them. ")
                      + f"What limits it instead is `{p.bound}` ({p.binding.formula}). The roofline plot in "
                      "section 4 marks the 0.25 FLOP/B line beside the measured naive kernels. "
                      + _cmd(f"python analyze.py predict --gpu {seed_gpu.key} --config {p.config.key}")
                      + " prints every limit of this prediction; "
                      + _cmd(f"python analyze.py explain --gpu {seed_gpu.key} --config {p.config.key}")
                      + " its per-level bytes."]
    lines += ["", "Shared-memory tiling raises the intensity seen by global memory to `2/(1/BM + 1/BN)` "
                  "elements; register tiling raises the intensity seen by shared memory to `2/(1/TM + 1/TN)`. "
                  "Which of these limits binds for each rung is section 3.", ""]
    return "\n".join(lines)


def _occupancy_section(seed_gpu, h200, rows, figs: dict, root: Path) -> str:
    from .cache import thread_limit_text
    lines = [f"## {SECTIONS[1]}", "",
             "The seed counts the thread slots of one RTX 4060 SM (SM x warp schedulers x 1 x warps per "
             "scheduler x threads per warp) and concludes that a 16x16 block (256 threads) fills it six times "
             "over while a 32x32 block (1024 threads) fits once and leaves 512 slots idle:", "",
             _cmd(f"python analyze.py derive --gpu {seed_gpu.key}") + " (last lines); "
             + _cmd(f"python analyze.py occupancy --gpu {seed_gpu.key} --threads 256"), "",
             "```text", thread_limit_text(seed_gpu), "```", ""]
    seed_pairs = block_predictions(seed_gpu)
    verdict = ", ".join(f"{name}: {'16x16' if p16.time_s <= p32.time_s else '32x32'} faster"
                        for name, p16, p32 in seed_pairs)
    agrees = all(p16.time_s <= p32.time_s for _, p16, p32 in seed_pairs)
    lines += ["That is right about occupancy. Whether it makes 16x16 *faster* depends on what limits the kernel. "
              f"The model's verdict for the RTX 4060 ({verdict}) "
              + ("agrees with the seed" if agrees else "does not follow the seed's conclusion everywhere")
              + "; the table gives the numbers (predicted for the RTX 4060, which we cannot measure; predicted "
              "and measured for the H200) and the list below says why:", "",
              _cmd(f"python analyze.py predict --gpu {seed_gpu.key} --config naive:BX=16,BY=16 "
                   "--config naive:BX=32,BY=32"), "",
              "| GPU | kernel | block | blocks/SM | active threads | occupancy limiter | predicted | bound "
              "| measured |", "|---|---|---|---:|---:|---|---:|---|---:|"]
    meas = _measured_blocks(rows, SEED_SIZE) if rows else {}
    whys = []
    for gpu in (seed_gpu, h200):
        for name, p16, p32 in block_predictions(gpu):
            m = meas.get((gpu.key, name))
            for side, p, mt in (("16x16", p16, m[0] if m else None), ("32x32", p32, m[1] if m else None)):
                o = p.occupancy
                lines.append(f"| {_name(gpu)} | {name} | {side} | {o.blocks_per_sm} | {o.active_threads} | "
                             f"{o.limiter} | {_ms(p.time_s)} | `{p.bound}` | {_ms(mt) if mt else '-'} |")
            text = why_blocks_differ(p16, p32)
            if m:
                fast = "16x16" if m[0] <= m[1] else "32x32"
                text += (f" Measured on the H200: {fast} is faster ({_ms(min(m))} against {_ms(max(m))}), "
                         + ("as predicted." if (m[0] <= m[1]) == (p16.time_s <= p32.time_s) else
                            "unlike the prediction."))
            whys.append(f"- **{_name(gpu)}, {name}**: {text}")
    lines += ["", f"At M = N = K = {SEED_SIZE[0]}; predicted by the timing model (`model/timing.py`); measured: "
                  "the median of the shipped H200 runs at that size (`experiments/results/h200/`).", "",
              "Why, limit by limit (read from the model's predictions):", ""] + whys
    h_pairs = block_predictions(h200)
    if h_pairs and seed_pairs:
        _, h16, h32 = h_pairs[0]
        _, s16, s32 = seed_pairs[0]
        lines += ["", f"Why the RTX 4060 and the H200 differ: an H200 SM holds {h200.max_threads_per_sm} threads and "
                      f"{h200.max_blocks_per_sm} blocks against the RTX 4060's {seed_gpu.max_threads_per_sm} and "
                      f"{seed_gpu.max_blocks_per_sm}, so a 32x32 block fits {h32.occupancy.blocks_per_sm} time(s) "
                      f"there ({h32.occupancy.active_threads} threads active, against {s32.occupancy.active_threads} "
                      f"on the RTX 4060) and the occupancy gap between the blocks is "
                      f"{h16.occupancy.active_threads - h32.occupancy.active_threads} threads instead of "
                      f"{s16.occupancy.active_threads - s32.occupancy.active_threads}. The H200's rates (L1, L2, "
                      "shared memory, latencies) are measured; the RTX 4060's are the architecture's nominal ones "
                      "(the notes of `python analyze.py predict --gpu rtx4060 --config naive`). Registers and "
                      "shared memory can lower both counts (`python analyze.py occupancy --threads T --regs R "
                      "--smem S`).", ""]
    if "occupancy" in figs:
        lines += [_img(figs["occupancy"], root, "occupancy against block size, RTX 4060 and H200"), "",
                  "*Blocks and active threads per SM against threads per block, coloured by the limit that binds; "
                  "under each GPU the model's times for the two naive blocks (and the H200's measured ones). "
                  "Command: `python analyze.py plot occupancy`.*", ""]
    lines += _residency_lines()
    return "\n".join(lines)


def _residency_lines() -> list[str]:
    """The seed's case measured: the H200 run at forced residency (experiments/residency.py), scored on the
    predictions committed before it ran. Empty when either file is missing."""
    root = Path(__file__).resolve().parent.parent
    pred = root / "experiments" / "predictions" / "residency.jsonl"
    meas = root / "experiments" / "results" / MEASURED_GPU / "residency.jsonl"
    if not (pred.is_file() and meas.is_file()):
        return []
    from experiments.residency import score
    try:
        rows, summary = score(pred, meas)
    except (OSError, ValueError, KeyError):
        return []
    if not rows:
        return []
    out = ["### The seed's case, measured: the H200 at forced residency", "",
           "The H200 never runs a 32x32 block alone on an SM, so the seed's case was made on it: the same kernels "
           "launched with unused dynamic shared memory so that only b blocks fit per SM "
           "(`../shared/reference/forced-residency.md`). b = 1 block of 1024 threads is the RTX 4060's 32x32 "
           "case (32 warps), b = 6 blocks of 256 its 16x16 case (48 warps); the rates stay the H200's. The "
           "model's predictions were committed before the run (`experiments/predictions/residency.jsonl`).", "",
           _cmd("python -m experiments.residency --score experiments/predictions/residency.jsonl "
                "experiments/results/h200/residency.jsonl"), "",
           "The last two columns are the current model's predictions (made now, after the measurement: not a "
           "blind score).", "",
           "| kernel | blocks/SM b | predicted GFLOP/s (committed) | measured GFLOP/s | error | current model "
           "GFLOP/s | error |", "|---|---:|---:|---:|---:|---:|---:|"]
    now = _residency_now(rows)
    for r in rows:
        c = now.get((r["label"], r["b"]))
        cur = (f"{c / 1e9:,.0f} | {100 * (c / r['meas_flop_per_s'] - 1):+.1f} %" if c else "- | -")
        out.append(f"| {r['label']} | {r['b']} | {r['pred_flop_per_s'] / 1e9:,.0f} | {r['meas_flop_per_s'] / 1e9:,.0f} "
                   f"| {100 * r['error']:+.1f} % | {cur} |")
    get = {(r["label"], r["b"]): r for r in rows}
    a, b = get.get(("01 naive 32x32", 1)), get.get(("01 naive 16x16", 6))
    out += ["", f"{summary['rows']} rows, MAPE {100 * summary['mape']:.1f} % (max {100 * summary['max']:.1f} %) "
                "on the committed predictions"]
    cur_err = [abs(now[(r["label"], r["b"])] / r["meas_flop_per_s"] - 1) for r in rows
               if now.get((r["label"], r["b"]))]
    if cur_err:
        out[-1] += (f"; the current model: MAPE {100 * sum(cur_err) / len(cur_err):.1f} % "
                    f"(max {100 * max(cur_err):.1f} %, not blind).")
    else:
        out[-1] += "."
    if a and b:
        faster_m = "32x32" if a["meas_flop_per_s"] > b["meas_flop_per_s"] else "16x16"
        faster_p = "32x32" if a["pred_flop_per_s"] > b["pred_flop_per_s"] else "16x16"
        out += ["", f"At the RTX 4060's residency the naive 32x32 block (b = 1, 32 warps) measured "
                    f"{a['meas_flop_per_s'] / 1e9:,.0f} GFLOP/s and 16x16 (b = 6, 48 warps) "
                    f"{b['meas_flop_per_s'] / 1e9:,.0f}: {faster_m} is faster on the H200's memory system; the model "
                    f"predicted {a['pred_flop_per_s'] / 1e9:,.0f} and {b['pred_flop_per_s'] / 1e9:,.0f} ({faster_p} "
                    "faster)" + (", the right direction." if faster_m == faster_p else
                                 ", the wrong direction (the model then over-charged the latency a block of 32 warps "
                                 "leaves exposed).")]
        ca, cb = now.get(("01 naive 32x32", 1)), now.get(("01 naive 16x16", 6))
        if ca and cb:
            faster_c = "32x32" if ca > cb else "16x16"
            out[-1] += (f" The current model predicts {ca / 1e9:,.0f} and {cb / 1e9:,.0f} ({faster_c} faster by "
                        f"{100 * (max(ca, cb) / min(ca, cb) - 1):.1f} %, measured {faster_m} by "
                        f"{100 * (max(a['meas_flop_per_s'], b['meas_flop_per_s']) / min(a['meas_flop_per_s'], b['meas_flop_per_s']) - 1):.1f} %): "
                        + (f"the right direction. The model binds 32x32 at b = 1 by "
                           f"`{now.get(('bound', '01 naive 32x32', 1))}` and 16x16 at b = 6 by "
                           f"`{now.get(('bound', '01 naive 16x16', 6))}`: a loop without a barrier waits only for its "
                           "own few lines (the unloaded latency), so 32 warps already cover it and the 512 idle "
                           "thread slots of the seed's argument cost nothing here."
                           if faster_c == faster_m else "still the wrong direction."))
    return out + [""]


def _residency_now(rows) -> dict:
    """The current timing model's GFLOP/s for each forced-residency row, keyed (label, b)."""
    from experiments.residency import SIZE, ladder
    from model.spec import load_gpu
    from model.timing import predict
    spec = load_gpu(MEASURED_GPU)
    out = {}
    for cfg, b, _ in ladder(spec):
        try:
            q = predict(spec, cfg, *SIZE, max_blocks_per_sm=b)
            out[(cfg.label, b)] = q.flop_per_s
            out[("bound", cfg.label, b)] = q.bound
        except Exception:  # noqa: BLE001 - a row the model refuses shows as "-"
            continue
    return out


def _ladder_section(gpu, preds) -> str:
    from model.registry import RUNGS, classic_configs, is_valid
    from model.roofline import plain_roofline
    from model.timing import rates
    M, N, K = SEED_SIZE
    peak = gpu.peak_fp32_flop_per_s
    lines = [f"## {SECTIONS[2]}", "",
             f"The seed's ladder on the {_name(gpu)} at M = N = K = {M} (FP32 peak {peak / 1e12:.2f} TFLOP/s, DRAM "
             f"{gpu.dram_bandwidth_bytes_per_s / 1e9:.0f} GB/s), predicted by the timing model. Registers and the "
             f"instruction mix come from the compiler facts for {gpu.arch} (NVRTC, as CuPy compiles on that GPU); "
             "no RTX 4060 measurements are shipped, so its rates and latencies are assumptions: "
             + "; ".join(rates(gpu).notes) + ".", "",
             _cmd(f"python analyze.py predict --gpu {gpu.key}") + "; one row in full: "
             + _cmd(f"python analyze.py predict --gpu {gpu.key} --config NAME") + "; its counts: "
             + _cmd(f"python analyze.py explain --gpu {gpu.key} --config NAME"), ""]
    first = {}
    for p in preds:
        first.setdefault(p.config.rung, p)
    lines += ["**Each rung and the limit it moves** (each rung's first classic config against the previous "
              "rung's):", ""]
    prev = None
    for r, p in sorted(first.items()):
        if prev is None:
            lines.append(f"- **{RUNGS[r].label}**: {_ms(p.time_s)}, bound by `{p.bound}` "
                         f"({p.binding.formula}). {RUNGS[r].description}")
        else:
            old = next((x for x in prev.roofs if x.name == prev.bound), None)
            now = next((x for x in p.roofs if x.name == prev.bound), None)
            moved = (f"`{prev.bound}` goes from {_ms(old.time_s)} to {_ms(now.time_s)}" if old and now else "")
            lines.append(f"- **{RUNGS[r].label}**: {_ms(prev.time_s)} -> {_ms(p.time_s)} "
                         f"({prev.time_s / p.time_s:.2f}x); {moved}; now bound by `{p.bound}` "
                         f"({p.binding.formula}).")
        prev = p
    lines += ["", "Every classic config:", "",
              "| config | time | GFLOP/s | % of peak | bound | blocks/SM | occupancy limiter | DRAM FLOP/B | "
              "plain roofline GFLOP/s |", "|---|---:|---:|---:|---|---:|---|---:|---:|"]
    for p in preds:
        o = p.occupancy
        idram = p.intensity_flop_per_byte.get("dram")
        lines.append(f"| {p.config.label} | {_ms(p.time_s)} | {p.flop_per_s / 1e9:,.0f} | "
                     f"{100 * p.flop_per_s / peak:.1f} | `{p.bound}` | {o.blocks_per_sm if o else '-'} | "
                     f"{o.limiter if o else '-'} | {idram:.1f} | "
                     f"{plain_roofline(gpu, p.config, M, N, K) / 1e9:,.0f} |" if idram else
                     f"| {p.config.label} | {_ms(p.time_s)} | {p.flop_per_s / 1e9:,.0f} | - | `{p.bound}` | - | - | - | - |")
    lines += ["", "*Plain roofline*: min(FP32 peak, DRAM bandwidth x the tile intensity of section 1), the seed's "
                  "model; *DRAM FLOP/B*: FLOPs over the DRAM bytes the timing model counts (with caches)."]
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
        parts.append(f"{len(runs)} runs")
    if dates:
        parts.append(f"dated {dates[0]}" + (f" to {dates[-1]}" if len(dates) > 1 else ""))
    if clocks:
        parts.append(f"SM clock during the runs {clocks[0] / 1e9:.2f}" +
                     (f"-{clocks[-1] / 1e9:.2f}" if len(clocks) > 1 else "") + " GHz")
    return "; ".join(parts) + "."


def _measured_section(cmp, rows, figs: dict, root: Path, no_data: str | None, data_arg: str) -> str:
    from .compare import format_markdown, BASELINE_NAME
    from .data import ROOT
    if cmp is None:
        lines = [f"## {SECTIONS[3]}", "", f"**No measured data.** {no_data}", "",
                 "Once the sweep's JSON Lines are committed under `experiments/results/<gpu>/`, this section "
                 "compares them with the model (`python analyze.py compare` prints the same).", ""]
        if "roofline" in figs:
            lines += [_img(figs["roofline"], root, "roofline, predictions only"), "",
                      "*Roofline of the H200 with the model's predictions for the classic configs "
                      "(no measurements). Command: `python analyze.py plot roofline`.*", ""]
        return "\n".join(lines)
    lines = [f"## {SECTIONS[3]}: {cmp.gpu.name}", "", _provenance(rows, ROOT), "",
             f"Model: {cmp.predicted.model}. Baseline: {BASELINE_NAME}. Statistics are over rows with status ok and "
             "verified results, rungs 01-06; cuBLAS (00) is a measured reference.", "",
             _cmd(f"python analyze.py compare{data_arg}") + " (add `--rows` for every row, `--json` for the "
                  "numbers)", "", format_markdown(cmp), ""]
    captions = {
        "scatter": "Predicted against measured GFLOP/s; the grey band is +-10 %, crosses are the plain roofline, "
                   "grey hexagons count the rows where points crowd.",
        "errors": "Signed error by rung: the model (left box, rung colour) beside the plain roofline (right box, "
                  "grey); the dashed line marks where the axis turns logarithmic.",
        "roofline": "Roofline at the DRAM level: filled = measured, hollow = predicted, each rung's classic "
                    "configs at the model's DRAM-level intensity; the dotted line is the naive kernel's "
                    "no-reuse intensity of section 1.",
        "sizes": "GFLOP/s against square size (log-log), each rung's classic config: solid measured, dashed "
                 "predicted; cuBLAS in black.",
    }
    for k in ("scatter", "errors", "roofline", "sizes"):
        if k in figs:
            lines += [_img(figs[k], root, k), "", f"*{captions[k]} Command: `python analyze.py plot {k}{data_arg}`.*",
                      ""]
    return "\n".join(lines)


def _glossary(preds, cmp) -> str:
    names: list[str] = []
    formulas: dict[str, str] = {}
    for p in preds:                      # the example: the first config where the limit binds
        formulas.setdefault(p.bound, f"{p.config.label}: {p.binding.formula}")
    for p in reversed(preds):            # else the most tiled config's
        for r in p.roofs:
            names.append(r.name)
            formulas.setdefault(r.name, f"{p.config.label}: {r.formula}")
        if p.occupancy is not None:
            names.append(p.occupancy.limiter)
    if cmp is not None:
        names += [str(b) for b in set(cmp.predicted.bound.tolist())]
    names += ["fp32", "threads", "blocks", "registers", "shared_memory"]
    lines = [f"## {SECTIONS[4]}", "",
             "Each limit is a time (or, for occupancy, a count of resident blocks); the prediction is set by the "
             "largest time, *the limit that binds*. `python analyze.py predict --config NAME` prints every limit "
             "of one config with its formula and numbers.", "",
             "| limit | what it is | an example from section 3: config, the limit's formula with its numbers |",
             "|---|---|---|"]
    order = [n for n in LIMIT_DEFINITIONS if n in names] + [n for n in dict.fromkeys(names) if n not in LIMIT_DEFINITIONS]
    for n in order:
        d = LIMIT_DEFINITIONS.get(n, "a limit this report does not describe yet; see its formula")
        lines.append(f"| `{n}` | {d} | {formulas.get(n, '-')} |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------
# Build
# --------------------------------------------------------------------------------------------------


def _progress(total: int):
    """A tqdm bar on stderr (shown only on a terminal)."""
    from .cli import stages
    return stages(total, "report")


def inputs_key(data_paths=None) -> str:
    """SHA-256 fingerprint of what the report's figures depend on: the data files read and every source
    and data file of the model, the analysis and the GPU specs (so a figure is redrawn when any changes)."""
    import hashlib
    from .data import DEFAULT_DATA, find_files
    root = Path(__file__).resolve().parent.parent
    try:
        files = find_files(data_paths or ([DEFAULT_DATA] if DEFAULT_DATA.is_dir() else []))
    except Exception:  # noqa: BLE001 - load() reports bad paths; no key means no reuse
        return ""
    files += sorted(p for d in ("analysis", "model", "gpus") for p in (root / d).rglob("*")
                    if p.is_file() and p.suffix in (".py", ".json", ".toml"))
    h = hashlib.sha256()
    for p in files:
        h.update(str(p).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:24]


def _tuning_section(fig_dir: Path, root: Path) -> str:
    """Model-guided tuning: the Kernel Tuner comparison (analysis.tuning, replayed on the CPU) and the
    tune runs on the H200 scored against full sweeps (experiments.score_tune). Empty without the data."""
    import hashlib
    from . import plots, tuning
    if not tuning.CACHE.is_file():
        return ""
    doc = tuning.load()
    lines = [tuning.markdown_section(doc).rstrip(), ""]
    png = fig_dir / "tuning.png"
    key = hashlib.sha256(tuning.CACHE.read_bytes() + Path(tuning.__file__).read_bytes()).hexdigest()[:24]
    if not plots.figure_is_current(png, key):
        tuning.save_plot(png, doc)
        plots.mark_figure(png, key)
    lines += [_img(png, root, "measurements needed to get within 3 % of the best, per strategy"), "",
              "*Median measured configs to reach within 3 % of each space's best, per search strategy (log "
              "scale). Command: `python -m analysis.tuning`.*", ""]
    score = Path(__file__).resolve().parent.parent / "experiments" / "results" / MEASURED_GPU / "logs" / \
        "2026-11-30-final" / "score.txt"
    if score.is_file():
        lines += ["On the H200, `python -m experiments.tune --budget 8` at three sizes no sweep had measured, "
                  "against the full sweep of the same space (327 configs of rung 06) measured after it "
                  "(`experiments/device_tune.sh`, 2026-11-30; `python -m experiments.score_tune "
                  "experiments/results/h200/tune.jsonl experiments/results/h200/tune_full.jsonl`):", "",
                  "```text", score.read_text(encoding="utf-8").rstrip(), "```", ""]
    return "\n".join(lines)


def build(out_dir, data_paths=None, progress: bool = False) -> dict:
    """Write the report; returns ``{"path", "figures", "comparison", "no_data"}`` (no printing)."""
    from model.registry import classic_configs, is_valid
    from model.spec import load_gpu
    from model.timing import predict
    from . import plots
    from .compare import compare, _no_data_message
    bar = _progress(9) if progress else None
    step = ((lambda s: (bar.set_description_str(f"report: {s}"), bar.update(1))) if bar is not None
            else (lambda s: None))
    out_dir = Path(out_dir)
    fig_dir = out_dir / FIG_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = load(data_paths or None)
    step("data loaded")
    cmp, no_data = None, None
    if rows:
        try:
            cmp = compare(rows)
        except NoDataError as e:
            no_data = str(e)
    else:
        no_data = _no_data_message(data_paths)
    step("model scored")
    seed_gpu = load_gpu(SEED_GPU)
    h200 = load_gpu(MEASURED_GPU)
    ladder = [predict(seed_gpu, c, *SEED_SIZE) for c in classic_configs() if c.rung != 0 and is_valid(c, seed_gpu)]
    step("predicted")
    notes = block_size_notes([seed_gpu, h200], rows)
    figs = plots.all_plots(cmp, fig_dir, gpu=None if cmp is not None else h200, notes=notes,
                           progress=lambda k: step(f"plot {k}"), key=inputs_key(data_paths) or None)
    data_arg = "".join(f" {p}" for p in (data_paths or []))
    parts = [_intro(), _intensity_section(seed_gpu, ladder),
             _occupancy_section(seed_gpu, h200, rows, figs, out_dir), _ladder_section(seed_gpu, ladder),
             _measured_section(cmp, rows, figs, out_dir, no_data, data_arg), _tuning_section(fig_dir, out_dir),
             _glossary(ladder, cmp)]
    path = out_dir / REPORT_NAME
    path.write_text("\n".join(parts).rstrip() + "\n", encoding="utf-8")
    step("written")
    if bar is not None:
        bar.close()
    return {"path": path, "figures": figs, "comparison": cmp, "no_data": no_data, "ladder": ladder,
            "seed_gpu": seed_gpu}


def main(args) -> int:
    """``analyze.py`` / ``analyze.py report [--out DIR] [DATA...]``: write the report, print a short summary."""
    res = build(getattr(args, "out", None) or "reports", list(getattr(args, "data", None) or []), progress=True)
    print("gemmscope report")
    for name, p16, p32 in block_predictions(res["seed_gpu"]):
        print(f"  RTX 4060, {name}: 16x16 block {p16.occupancy.blocks_per_sm} blocks/SM, {_ms(p16.time_s)} "
              f"({p16.bound}); 32x32 block {p32.occupancy.blocks_per_sm} block/SM, {_ms(p32.time_s)} ({p32.bound})")
    cmp = res["comparison"]
    if cmp is None:
        print(f"  measured: none. {res['no_data']}")
    else:
        j = cmp.to_json()
        rho = "-" if j["spearman"] is None else f"{j['spearman']:.2f}"
        print(f"  measured: {j['n']} rows on {cmp.gpu.key}: model MAPE {100 * j['mape']:.1f} %, Spearman {rho}, "
              f"{100 * j['within_10']:.0f} % within +-10 % (plain roofline MAPE {100 * j['baseline']['mape']:.0f} %)")
    print(f"  figures: {len(res['figures'])} PNG in {res['path'].parent / FIG_DIR}")
    print(f"wrote {res['path']}")
    return 0
