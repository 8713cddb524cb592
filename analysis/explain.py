"""``analyze.py explain --config NAME[:KEY=VAL,...] [--size M N K] [--gpu KEY] [--json]``: one config at one
size, level by level - the seed's "how to read ncu", automated for every rung.

For one config and problem size it prints

* the **per-level counts** of one launch from the warp-level access simulator
  (:func:`model.simulate.simulate` with ``plan="sass"``, i.e. the shared-load widths of the compiled
  code): global load / store requests, 32-byte sectors and 128-byte lines, shared-memory instructions,
  wavefronts and bank conflicts, FFMAs, barriers; the **executed instructions** estimated from the
  compiler facts (:mod:`model.facts`: SASS instructions of one steady-state loop iteration x iterations x
  warps, plus each warp's prologue and epilogue); the **bytes at L2 and DRAM** the timing model counts;
* the **timing model's limits** (:func:`model.timing.predict`: issue, shared, l1, latency, l2, dram), each
  with its formula, the one that binds and *why*, in sentences generated from the numbers;
* **occupancy** (blocks per SM, the limiter, registers per thread and where that figure came from) and
  **waves**;
* where ``experiments/results/<gpu>/ncu.jsonl`` has a row for this config and size, **predicted and
  measured counters side by side** with their ratio, and the measured time of the measurement rows
  (``*.jsonl`` of the same folder) for the same config and size;
* a short **how to read this** paragraph naming the ncu metric behind each line.

``--json`` prints the same content as one dict (:func:`explain`). Everything here reads the model; nothing
in ``model/`` is changed or re-implemented except the few per-round figures of the "why" sentences, which are
obtained by evaluating the timing model itself on a one-round problem (see :func:`_per_round`).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np

__all__ = ["explain", "format_text", "main", "find_ncu_row", "find_measurement", "HOW_TO_READ"]

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "experiments" / "results"


# --------------------------------------------------------------------------------------------------
# Data look-ups
# --------------------------------------------------------------------------------------------------


def find_ncu_row(results_dir: Path, cfg, M: int, N: int, K: int) -> dict | None:
    """The latest ``gemmscope.ncu`` row with status ok for ``cfg`` at M x N x K in ``results_dir/ncu.jsonl``."""
    from .data import load_ncu
    best = None
    for d in load_ncu(Path(results_dir) / "ncu.jsonl"):
        if d.get("config_key") == cfg.key and (d.get("M"), d.get("N"), d.get("K")) == (M, N, K):
            if best is None or str(d.get("date", "")) >= str(best.get("date", "")):
                best = d
    return best


def find_measurement(results_dir: Path, cfg, M: int, N: int, K: int):
    """The latest measurement row (:class:`analysis.data.Measurement`) of ``cfg`` at M x N x K with status
    ok in the ``*.jsonl`` files of ``results_dir`` (None when there is none)."""
    from .data import latest, load
    if not Path(results_dir).is_dir():
        return None
    rows = [r for r in latest(load([results_dir])) if r.key == cfg.key and r.size == (M, N, K) and r.ok]
    return rows[-1] if rows else None


# --------------------------------------------------------------------------------------------------
# Model pieces
# --------------------------------------------------------------------------------------------------


def _evaluate_one(gpu, cfg, M: int, N: int, K: int, prm, registers=None) -> dict:
    """model.timing.evaluate for one (config, size): the raw dict (scalars)."""
    from model.timing import _arrays_for, evaluate
    arrs, _ = _arrays_for(gpu, [cfg], None if registers is None else [registers])
    out = evaluate(gpu, *arrs, np.array([M]), np.array([N]), np.array([K]), prm=prm)
    return {k: (np.asarray(v)[..., 0] if np.ndim(v) >= 1 else v) for k, v in out.items()}


def _per_round(gpu, cfg, b: int, prm, registers=None) -> dict:
    """Cycles of ONE round (every one of ``b`` resident blocks doing one K tile) and of its parts, read off
    the timing model itself: evaluate a problem of exactly ``SMs x b`` blocks and one K tile (one k step for
    the naive kernel), so that every SM runs one full round of ``b`` blocks."""
    from model.registry import geometry
    from model.timing import rates
    g = geometry(cfg)
    sms = rates(gpu).sms
    from model.timing import profile
    kt = profile(cfg, gpu.arch, registers).k_tile
    M, N = g.BM * sms * b, g.BN
    # one iteration = the difference between two and one K tiles (the prologue and epilogue cancel). With
    # split-K the S slices make S blocks of each output tile, so that problem runs S full rounds: K holds S
    # slices of one (two) K tiles each and the difference is divided by S.
    s = max(1, g.split_k)
    r2 = _evaluate_one(gpu, cfg, M, N, 2 * kt * s, prm, registers)
    r1 = _evaluate_one(gpu, cfg, M, N, kt * s, prm, registers)
    r = {"sm_cycles": (float(r2["sm_cycles"]) - float(r1["sm_cycles"])) / s}
    clock = rates(gpu).clock_hz
    lim = (np.asarray(r2["limits"], dtype=float) - np.asarray(r1["limits"], dtype=float)) * clock / s
    return {"blocks": int(b), "issue": float(lim[0]), "shared": float(lim[1]), "l1": float(lim[2]),
            "latency": float(lim[3]), "round": float(r["sm_cycles"])}


def _slice_iterations(cfg, K: int, k_tile: int) -> int:
    """Main-loop iterations of one block: over its split-K slice (the first, the longest), all of K without."""
    from model.registry import k_slices
    k0, k1 = k_slices(cfg, K)[0]
    return -(-(k1 - k0) // k_tile)


def _resident(ev, gpu) -> int:
    """Resident blocks in the rounds that make up most of the busiest SM's time: the blocks per SM when
    it runs at least one full round, else the fewer blocks of its only (partial) round."""
    from model.timing import rates
    b = max(int(ev["blocks_per_sm"]), 1)
    per_sm = -(-int(ev["blocks"]) // rates(gpu).sms)
    return b if per_sm >= b else per_sm


def _instruction_estimate(sim, facts) -> dict:
    """Executed warp instructions (what ``smsp__inst_executed.sum`` counts) from the compiler facts: the SASS
    instructions of one steady-state loop iteration x loop iterations x warps, plus every warp's prologue
    and epilogue; the simulator's rough mix when there are no facts."""
    warps = sim.blocks * sim.warps_per_block
    if facts is not None and facts.loop_found and facts.loop_ffma and facts.loop_path_instructions:
        iters_total = sim.ffma_warp / facts.loop_ffma          # loop iterations summed over warps
        per_warp_iters = iters_total / max(warps, 1)
        loop = facts.loop_path_instructions * iters_total
        pro = facts.prologue_instructions or 0
        epi = facts.epilogue_instructions or 0
        total = loop + warps * (pro + epi)
        formula = (f"{facts.loop_path_instructions:,} per loop iteration x {per_warp_iters:,.6g} iterations x "
                   f"{warps:,} warps + {warps:,} warps x ({pro:,} prologue + {epi:,} epilogue)")
        if facts.loop_tiles and facts.loop_tiles > 1:
            formula += f"; one loop iteration covers {facts.loop_tiles} {'k steps' if sim.config_key.startswith('01:') else 'K tiles'}"
        if not (facts.prologue_instructions or facts.epilogue_instructions):
            formula += " (no prologue/epilogue counts in the facts)"
        return {"value": float(total), "loop": float(loop), "prologue_epilogue": float(warps * (pro + epi)),
                "formula": formula, "source": f"compiler facts (NVRTC {facts.nvrtc_version}, {facts.arch})"}
    total = (sim.ffma_warp + sim.lds_instructions + sim.sts_instructions + sim.ldg_instructions
             + sim.stg_instructions + sim.bar_warp + sim.int_warp_est)
    return {"value": float(total), "loop": float(total), "prologue_epilogue": 0.0,
            "formula": "FFMA + LDS + STS + LDG + STG + BAR + estimated integer/control instructions (simulator)",
            "source": "simulator estimate (no compiler facts for this config)"}


def _register_source(cfg, gpu, prof, facts, measured, ncu_row) -> dict:
    from model.registry import geometry, min_registers
    if facts is not None:
        src = (f"compiler facts: NVRTC {facts.nvrtc_version} for {facts.arch} "
               f"(model/data/compiler_facts/{facts.arch}.json)")
    else:
        src = (f"estimate TM*TN + TM + TN + 8 = {min_registers(geometry(cfg))} (no compiler facts for "
               f"{cfg.key} on {gpu.arch})")
    out = {"registers": prof.registers, "source": src,
           "spills": bool(facts.spills) if facts is not None else None,
           "local_bytes": prof.local_bytes,
           "measured_num_regs": None if measured is None else measured.num_regs,
           "ncu_registers": None}
    if ncu_row is not None:
        v = (ncu_row.get("metrics") or {}).get("launch__registers_per_thread")
        out["ncu_registers"] = None if v is None else int(v)
    return out


# --------------------------------------------------------------------------------------------------
# The explanation as a dict
# --------------------------------------------------------------------------------------------------

def _fmt_cycles(x: float) -> str:
    return f"{x:,.0f}"


def _why(cfg, gpu, pred, ev, prof, rnd, occ, prm, rt, sim) -> list[str]:
    """Plain sentences generated from the numbers: what binds and why (with how one round of the resident
    blocks splits into the SM pipes' work and exposed latency), then how the blocks spread over the SMs.

    ``rnd`` are the model's own per-round cycles (:func:`_per_round`): ``issue``, ``shared``, ``l1`` (the
    resident warps' work), ``latency`` (the round's time beyond it: exposed latency) and ``round``. The bound
    named is the limit that sets the predicted time: the SM time (then its largest part), L2 or DRAM."""
    from model.registry import geometry
    from model.timing import _interp_trace, l2_reuse_bytes
    from model.units import fmt_bytes, fmt_rate, fmt_time
    g = geometry(cfg)
    step = "k step" if prof.k_tile == 1 else "K tile"
    b_fit = int(ev["blocks_per_sm"])
    b = _resident(ev, gpu)            # blocks of the round that dominates (fewer when they do not fill an SM)
    W = prof.warps
    bw = f"{b} block{'s' if b != 1 else ''} of {W} warp{'s' if W != 1 else ''} per SM"
    lim_name = {"threads": "thread", "blocks": "resident-block", "registers": "register",
                "shared_memory": "shared-memory"}.get(occ.limiter, occ.limiter)
    who = f"{bw} ({prof.registers} registers/thread; the {lim_name} limit)"
    if b < b_fit:
        who = (f"{bw}, all there is to run although {b_fit} fit ({prof.registers} registers/thread; the "
               f"{lim_name} limit)")
    p = prm.p
    exposed = rnd["latency"]
    service = rnd["round"] - exposed
    lg = float(ev["latency_cycles"])
    t1 = float(_interp_trace(np.array([prof.trace]), np.array([lg]), rt.shared_latency_cycles)[0])
    chain = prof.latency_chain
    why_lg = (f"loaded: {prm.latency_scale:.2f} x the {rt.l2_latency_cycles:.0f}-cycle L2 latency, a barrier waits "
              f"for all the block's tile loads" if prof.barriers > 0 else
              f"the {rt.l2_latency_cycles:.0f}-cycle L2 latency, or DRAM's {rt.dram_latency_cycles:.0f} when one of "
              f"the warp's waited sectors misses L2" + (
                  f"; the slowest of the loads it waits for together (latencies spread by {rt.l2_spread_cycles:.0f} "
                  f"and {rt.dram_spread_cycles:.0f} cycles, its lines in one {rt.dram_page_bytes}-byte DRAM page "
                  f"one draw) plus {rt.batch_wait_per_load_cycles:.2f} cycles for each further load, "
                  f"experiments/batch_latency.py" if (rt.l2_spread_cycles or rt.dram_spread_cycles) else ""))
    load_txt = (f"one warp alone needs {_fmt_cycles(t1)} cycles per {step} for {prof.instructions_per_warp:,.0f} "
                f"instructions at a {_fmt_cycles(lg)}-cycle global latency ({why_lg}; {chain:.2f} latencies in "
                f"series per {step}, from the {'SASS loop trace' if prof.source == 'sass' else 'estimate'})")
    issued = b * prof.warps * prof.instructions_per_warp / rt.schedulers   # the instructions' issue cycles
    pipes = (f"issue {_fmt_cycles(issued)}, shared {_fmt_cycles(rnd['shared'])} and L1 "
             f"{_fmt_cycles(rnd['l1'])} cycles, overlapping partly with p = {p:.2f}"
             + (f"; instruction fetch {_fmt_cycles(prof.fetch_cycles)}, a floor" if prof.fetch_cycles > 0 else ""))
    head = f"one round (every resident block one {step}) takes {_fmt_cycles(rnd['round'])} cycles"
    sync = prof.barriers > 0
    hiders = (f"{b} block{'s' if b != 1 else ''} (a barrier per {step} keeps each block's warps in step)" if sync
              else f"{b * W} warps (no barrier: each warp runs on its own)")
    if exposed <= 0.005 * rnd["round"]:
        split = f"{head}, all of it SM pipe work ({pipes}): {load_txt}, and {hiders} hide it"
    else:
        split = (f"{head}: {_fmt_cycles(service)} cycles of SM pipe work ({pipes}) plus {_fmt_cycles(exposed)} "
                 f"cycles of exposed latency: {load_txt}, and {hiders} cannot hide it all (mean value analysis)")
    fetch_txt = ""
    if prof.fetch_cycles > 0:
        from model.facts import INSTRUCTION_FETCH
        l0, rate = INSTRUCTION_FETCH[gpu.arch]
        fetch_txt = (f" (the loop's code exceeds the {l0 / 1024:.0f} KB L0 instruction cache, so each scheduler "
                     f"fetches it again every {step} at {rate:g} B a cycle: {_fmt_cycles(prof.fetch_cycles)} cycles, "
                     f"a floor under the round)")
    bound = pred.bound
    sm_t = fmt_time(float(ev["t_sm"]))
    s: list[str] = []
    if bound == "latency":
        s.append(f"Bound by latency: {who}; {split}.")
    elif bound == "issue":
        held = (f", {prof.held_issue_cycles:,.4g} of them cycles its FFMAs' a-c register-bank conflicts hold the "
                f"scheduler" if prof.held_issue_cycles > 0 else "")
        s.append(f"Bound by instruction issue: {who}, each warp issuing {prof.instructions_per_warp:,.4g} "
                 f"instructions per {step} (from the {'SASS' if prof.source == 'sass' else 'simulator estimate'}{held}) "
                 f"on {rt.schedulers} schedulers: {_fmt_cycles(issued)} issue cycles{fetch_txt}; {split}.")
    elif bound == "shared":
        bi = sim.per_block_iteration
        conf = bi.lds_bank_conflicts + bi.sts_bank_conflicts
        if rt.lsu_cycles > 1 and prof.shared_instructions * rt.lsu_cycles > prof.shared_wavefronts / rt.shared_wavefronts_per_cycle:
            s.append(f"Bound by the load/store pipe for shared memory ({gpu.ld_st_units_per_sm} LD/ST units per SM: "
                     f"{rt.lsu_cycles:g} cycles per warp memory instruction): {who}, each block issuing "
                     f"{prof.shared_instructions:,.0f} shared loads and stores per {step} ({prof.shared_wavefronts:,.0f} "
                     f"wavefronts, {conf:,} of them bank conflicts): {_fmt_cycles(rnd['shared'])} cycles; {split}.")
        else:
            s.append(f"Bound by shared-memory bandwidth: {who}, each block moving {prof.shared_wavefronts:,.0f} "
                     f"wavefronts per {step} ({conf:,} of them bank conflicts) at {rt.shared_wavefronts_per_cycle:.3f} "
                     f"wavefronts per cycle: {_fmt_cycles(rnd['shared'])} shared cycles; {split}.")
    elif bound == "l1":
        req = max(sim.per_block_iteration.gld_requests, 1)
        per_req = prof.l1_lines / req
        if rt.lsu_cycles > 1 and prof.global_load_instructions * rt.lsu_cycles > prof.l1_lines:
            s.append(f"Bound by the load/store pipe ({gpu.ld_st_units_per_sm} LD/ST units per SM: "
                     f"{rt.lsu_cycles:g} cycles per warp memory instruction): {who}, each block issuing "
                     f"{prof.global_load_instructions:,.0f} global loads per {step}, touching {prof.l1_lines:,.0f} "
                     f"lines ({per_req:.3g} per request): {_fmt_cycles(rnd['l1'])} cycles; {split}.")
        else:
            s.append(f"Bound by the L1 tag stage (one 128-byte line per cycle): {who}, each block touching "
                     f"{prof.l1_lines:,.0f} lines per {step} ({per_req:.3g} per warp load request): "
                     f"{_fmt_cycles(rnd['l1'])} L1 cycles; {split}.")
    elif bound == "l2":
        gm, gn = -(-pred.M // g.BM), -(-pred.N // g.BN)
        s.append(f"Bound by L2 bandwidth: {fmt_bytes(float(ev['l2_bytes']))} (A read ceil(N/BN) = {gn} times, "
                 f"B read ceil(M/BM) = {gm} times, C's store sectors; partial-sector stores cost a read-modify-write) "
                 f"at {fmt_rate(rt.l2_bytes_per_s, 'B')} take {fmt_time(float(ev['t_l2']))}, longer than the SMs' "
                 f"{sm_t} and DRAM's {fmt_time(float(ev['t_dram']))}.")
    elif bound == "dram" and float(ev["c_reduced_from_dram_bytes"]) > 0:
        red = float(ev["c_reduced_from_dram_bytes"])
        s.append(f"Bound by DRAM: the split-K slices reduce into a C of {fmt_bytes(4.0 * pred.M * pred.N)} that does not "
                 f"fit the {fmt_bytes(float(gpu.l2_bytes))} L2, so each slice reads {100 * float(ev['c_miss_share']):.0f} % "
                 f"of C from DRAM and writes it back: {fmt_bytes(red)} reduced at the measured "
                 f"{fmt_rate(rt.dram_reduction_bytes_per_s, 'B')} for reductions beyond the L2, with "
                 f"{fmt_bytes(float(ev['dram_bytes']) - 2.0 * red)} of other traffic at {fmt_rate(rt.dram_bytes_per_s, 'B')}: "
                 f"{fmt_time(float(ev['t_dram']))}, longer than the SMs' {sm_t} and L2's {fmt_time(float(ev['t_l2']))}.")
    elif bound == "dram":
        s.append(f"Bound by DRAM bandwidth: {fmt_bytes(float(ev['dram_bytes']))} (A and B once, the panels the "
                 f"blocks of one wave re-read after the L2 lost them (it keeps {l2_reuse_bytes(gpu) / 2**20:.0f} MiB of "
                 f"what every SM reads), the C evicted before the kernel ended) "
                 f"at {fmt_rate(rt.dram_bytes_per_s, 'B')} take {fmt_time(float(ev['t_dram']))}, longer than the "
                 f"SMs' {sm_t} and L2's {fmt_time(float(ev['t_l2']))}.")
    else:   # a limit this explainer does not know yet (the model grew one): say what the numbers are
        s.append(f"Bound by {bound}: {who}; {split}.")
    # Waves
    sms = rt.sms
    blocks = int(ev["blocks"])
    per_sm = int(ev["busiest_sm_blocks"])
    full, rem = divmod(per_sm, max(b_fit, 1))
    nk = _slice_iterations(cfg, pred.K, prof.k_tile)
    waves = int(ev["waves"])
    last = blocks - (waves - 1) * sms * max(b_fit, 1)
    slots = sms * max(b_fit, 1)
    if waves == 1:
        wave_txt = f"1 wave ({blocks:,} of {slots:,} block slots filled)"
    elif last < slots:
        wave_txt = f"{waves} waves, the last one partial ({last:,} of {slots:,} block slots)"
    else:
        wave_txt = f"{waves} full waves"
    partial = f" + 1 partial round of {rem} block{'s' if rem != 1 else ''}" if rem else ""
    rounds_txt = (f"{full} full round{'s' if full != 1 else ''}{partial}" if full else
                  f"1 partial round of {rem} block{'s' if rem != 1 else ''}")
    each = " each" if full + (1 if rem else 0) > 1 else ""
    s.append(f"{blocks:,} block{'s' if blocks != 1 else ''} on {sms} SMs at {b_fit}/SM make{'s' if blocks == 1 else ''} {wave_txt}: the "
             f"busiest SM runs ceil({blocks:,}/{sms}) = {per_sm} block{'s' if per_sm != 1 else ''} as "
             f"{rounds_txt} of {nk:,} {step}{'s' if nk != 1 else ''}{each}: {fmt_time(float(ev['t_sm']))} of "
             f"SM time, plus {fmt_time(rt.launch_overhead_s)} launch overhead = {fmt_time(pred.time_s)}.")
    once = float(ev.get("once_cycles", 0.0))
    if once >= 0.1 * float(ev["sm_cycles"]):
        from model.facts import STORE_PATH
        c_line, c_sector = STORE_PATH.get(gpu.arch, (1.0, 0.0))
        elem = bool(ev.get("c_stores_element", False))
        s.append(f"Of the SM time, {fmt_time(once / rt.clock_hz)} is once-per-block work: each block's prologue "
                 f"and epilogue, whose C stores hold the SM's store path {float(ev['store_path_cycles']):,.0f} cycles "
                 f"a block ({c_line:g} a 128-byte line and {c_sector:g} a 32-byte sector of every store"
                 + ("; C's rows are not 16-byte aligned, so its 16-byte stores go four bytes at a time" if elem else "")
                 + ").")
    cold = float(ev.get("cold_fetch_cycles", 0.0))
    if cold > 0:
        from model.facts import CODE_CACHE
        cap, r_l2 = CODE_CACHE[gpu.arch]
        run = float(ev["code_run_bytes"])
        drain = run < prof.code_bytes[4]      # every K tile of a block runs in the drain loop: the steady loop never does
        loop = prof.code_bytes[5] if drain else prof.code_bytes[1]
        later = (f"and, as the {run / 1024:,.0f} KB of it a block runs exceed the cache too, every later "
                 f"round fetches again the {(prof.code_bytes[0] + prof.code_bytes[2]) / 1024:,.0f} KB its blocks run once "
                 f"(before and after the main loop) and their first pass over the {loop / 1024:,.0f} KB "
                 f"{'drain ' if drain else ''}loop"
                 if run > cap else
                 f"once: the {run / 1024:,.0f} KB of it a block runs stay cached for the later rounds"
                 + (f" (a block's {int(prof.code_bytes[6])} K tile(s) all run in the drain loop, never the "
                    f"{prof.code_bytes[1] / 1024:,.0f} KB steady loop)" if drain else ""))
        first = float(ev["code_first_round_bytes"])
        what = ("all of it: the code a block runs with its steady loop exceeds the cache too"
                if prof.code_bytes[4] > cap else
                f"the {run / 1024:,.0f} KB its blocks run (not the code they jump over), {first / max(run, 1.0):.0f} "
                f"time(s): once for each warp a scheduler holds while the blocks run the steady loop, where the warps "
                f"drift apart and fetch apart, once when they run only the drain loop")
        s.append(f"The kernel's code ({prof.code_bytes[3] / 1024:,.0f} KB of SASS) exceeds the {cap / 1024:.0f} KB "
                 f"instruction cache beyond the L0, so the first round of blocks streams in from L2, at {r_l2:g} B a "
                 f"cycle a scheduler, {first / 1024:,.0f} KB ({what}), {later}: {_fmt_cycles(cold)} cycles in all on "
                 f"the busiest SM, beyond the work that fetch feeds (in the SM time above).")
    return s


def explain(gpu, cfg, M: int, N: int, K: int, results_dir: Path | None = None) -> dict:
    """Everything ``analyze.py explain`` shows, as a dict (SI units; counts are per launch)."""
    from model.facts import facts_for
    from model.registry import geometry, validate_size
    from model.simulate import NCU_METRICS, simulate
    from model.timing import LIMITS, load_loro_params, load_params, predict, profile, rates
    from model.units import fmt_bytes

    M, N, K = validate_size(M, N, K)
    prm = load_params()
    pred = predict(gpu, cfg, M, N, K, prm=prm)          # validates the config (ConfigError for rung 00)
    rt = rates(gpu)
    ev = _evaluate_one(gpu, cfg, M, N, K, prm)
    prof = profile(cfg, gpu.arch)
    facts = facts_for(cfg, gpu.arch)
    sim = simulate(cfg, M, N, K, plan="sass")
    g = geometry(cfg)
    results_dir = Path(results_dir) if results_dir is not None else RESULTS / gpu.key
    ncu_row = find_ncu_row(results_dir, cfg, M, N, K)
    meas = find_measurement(results_dir, cfg, M, N, K)
    b = int(ev["blocks_per_sm"])
    rnd = _per_round(gpu, cfg, _resident(ev, gpu), prm)
    occ = pred.occupancy
    loro = load_loro_params().get(cfg.rung)
    t_cv = float(predict(gpu, cfg, M, N, K, prm=loro).time_s) if loro is not None else None
    instr = _instruction_estimate(sim, facts)
    bi = sim.per_block_iteration
    lines_ld = bi.gld_lines * sim.blocks * sim.k_iterations
    naive = prof.k_tile == 1
    gm, gn = -(-M // g.BM), -(-N // g.BN)

    counts = {
        "plan": None if sim.plan is None else sim.plan.origin,
        "blocks": sim.blocks, "warps_per_block": sim.warps_per_block, "k_iterations": sim.k_iterations,
        "global_load": {"requests": sim.gld_requests, "sectors": sim.gld_sectors, "lines": lines_ld,
                        "lines_note": "interior block x blocks x K tiles (exact when the tiles divide the size)"},
        "global_store": {"requests": sim.gst_requests, "sectors": sim.gst_sectors,
                         "lines_min": -(-sim.gst_sectors // 4),
                         "lines_note": "at least sectors / 4 (the simulator counts store sectors, not lines)"},
        "shared_load": {"instructions": sim.lds_instructions, "wavefronts": sim.lds_wavefronts,
                        "bank_conflicts": sim.lds_bank_conflicts},
        "shared_store": {"instructions": sim.sts_instructions, "wavefronts": sim.sts_wavefronts,
                         "bank_conflicts": sim.sts_bank_conflicts},
        "ffma": {"thread": sim.ffma_thread, "warp": sim.ffma_warp},
        "barriers_warp": sim.bar_warp,
        "executed_instructions": instr,
        "l2_bytes": float(ev["l2_bytes"]),
        "l2_bytes_formula": (f"4 B x (M K x ceil(N/BN) + K N x ceil(M/BM)) + 32 B x C's store sectors = A read {gn} "
                             f"times, B read {gm} times, C's {sim.gst_sectors:,} store sectors"),
        "dram_bytes": float(ev["dram_bytes"]),
        "dram_bytes_formula": ("A and B once + the panels a wave of blocks (in launch order) re-reads after the L2 "
                               "evicted them (reuse distance: the previous wave's panels and C, against the L2 over its "
                               "partitions) + the C evicted (written back) during the kernel; what the L2 still holds "
                               "dirty at the end is written back after it"
                               + (f"; split-K into a C beyond the L2: every slice reads and writes back "
                                  f"{100 * float(ev['c_miss_share']):.0f} % of C ({fmt_bytes(float(ev['c_reduced_from_dram_bytes']))} "
                                  f"each way)" if float(ev["c_reduced_from_dram_bytes"]) > 0 else "")),
    }
    per_block_iteration = {
        "warps": prof.warps, "instructions_per_warp": prof.instructions_per_warp,
        "instructions_source": prof.source, "shared_wavefronts": prof.shared_wavefronts,
        "l1_lines": prof.l1_lines, "latency_chain": prof.latency_chain, "loop_trace": "sass" if prof.source == "sass" else "estimate", "local_loads": prof.local_loads,
        "gld_requests": bi.gld_requests, "ffma_warp": bi.ffma_warp, "unit": "k step" if naive else "K tile",
    }
    limits = [{"name": r.name, "time_s": r.time_s, "formula": r.formula, "binds": r.name == pred.bound}
              for r in pred.roofs]
    per_sm = int(ev["busiest_sm_blocks"])
    waves = {"blocks": int(ev["blocks"]), "sms": rt.sms, "blocks_per_sm": b, "waves": int(ev["waves"]),
             "busiest_sm_blocks": per_sm, "full_rounds": per_sm // max(b, 1), "partial_round_blocks": per_sm % max(b, 1),
             "iterations_per_round": _slice_iterations(cfg, K, prof.k_tile),
             "busiest_sm_blocks_refill_random": int(ev["busiest_sm_blocks_refill_random"]),
             "time_refill_random_s": float(ev["time_refill_random_s"])}
    occupancy = {"blocks_per_sm": occ.blocks_per_sm, "limiter": occ.limiter, "limits": dict(occ.limits),
                 "threads_per_block": occ.threads_per_block, "warps_per_block": occ.warps_per_block,
                 "active_warps": occ.active_warps, "fraction": occ.fraction,
                 "smem_bytes_per_block": occ.smem_bytes_per_block,
                 "registers": _register_source(cfg, gpu, prof, facts, meas, ncu_row)}
    out: dict[str, Any] = {
        "gpu": {"key": gpu.key, "name": gpu.name, "arch": gpu.arch, "sms": rt.sms, "clock_hz": rt.clock_hz},
        "config": {"key": cfg.key, "label": cfg.label, **cfg.to_json()},
        "M": M, "N": N, "K": K, "flops": pred.flops,
        "prediction": {"time_s": pred.time_s, "flop_per_s": pred.flop_per_s, "bound": pred.bound,
                       "t_sm_s": float(ev["t_sm"]), "t_l2_s": float(ev["t_l2"]), "t_dram_s": float(ev["t_dram"]),
                       "launch_overhead_s": rt.launch_overhead_s,
                       "cross_validated_time_s": t_cv,
                       "parameters": prm.to_json(),
                       "cross_validated_parameters": None if loro is None else loro.to_json()},
        "why": _why(cfg, gpu, pred, ev, prof, rnd, occ, prm, rt, sim),
        "per_round_cycles": rnd,
        "limits": limits,
        "counts": counts,
        "per_block_iteration": per_block_iteration,
        "occupancy": occupancy,
        "waves": waves,
        "notes": list(pred.notes),
        "measured": None,
        "ncu": None,
        "how_to_read": HOW_TO_READ,
    }
    if meas is not None:
        out["measured"] = {"time_s": meas.median_s, "flop_per_s": meas.flop_per_s, "source": meas.source,
                           "sweep": meas.sweep, "num_regs": meas.num_regs,
                           "predicted_over_measured": pred.time_s / meas.median_s if meas.median_s else None}
    if ncu_row is not None:
        out["ncu"] = _ncu_side_by_side(ncu_row, sim, instr, ev, pred, occ, prof, results_dir, NCU_METRICS)
    out["limit_names"] = list(LIMITS)
    return out


def _ncu_side_by_side(row, sim, instr, ev, pred, occ, prof, results_dir, NCU) -> dict:
    m = row.get("metrics") or {}

    def get(name):
        v = m.get(name)
        return None if v is None else float(v)

    def line(quantity, metric, predicted, measured, note=""):
        ratio = None if measured in (None, 0) or predicted is None else predicted / measured
        return {"quantity": quantity, "metric": metric, "predicted": predicted, "measured": measured,
                "ratio": ratio, "note": note}

    dram_r, dram_w = get("dram__bytes_read.sum"), get("dram__bytes_write.sum")
    dram = None if dram_r is None or dram_w is None else dram_r + dram_w
    dur = get("gpu__time_duration.sum")
    occ_m = get("sm__warps_active.avg.pct_of_peak_sustained_active")
    rows = [
        line("global load requests", NCU["gld_requests"], sim.gld_requests, get(NCU["gld_requests"])),
        line("global load sectors", NCU["gld_sectors"], sim.gld_sectors, get(NCU["gld_sectors"])),
        line("global store requests", NCU["gst_requests"], sim.gst_requests, get(NCU["gst_requests"])),
        line("global store sectors", NCU["gst_sectors"], sim.gst_sectors, get(NCU["gst_sectors"])),
        line("shared load instructions", NCU["lds_instructions"], sim.lds_instructions, get(NCU["lds_instructions"])),
        line("shared store instructions", NCU["sts_instructions"], sim.sts_instructions, get(NCU["sts_instructions"])),
        line("shared load wavefronts", NCU["lds_wavefronts"], sim.lds_wavefronts, get(NCU["lds_wavefronts"])),
        line("shared load bank conflicts", NCU["lds_bank_conflicts"], sim.lds_bank_conflicts,
             get(NCU["lds_bank_conflicts"])),
        line("shared store wavefronts", NCU["sts_wavefronts"], sim.sts_wavefronts, get(NCU["sts_wavefronts"])),
        line("shared store bank conflicts", NCU["sts_bank_conflicts"], sim.sts_bank_conflicts,
             get(NCU["sts_bank_conflicts"])),
        line("FFMA (thread-level)", NCU["ffma_thread"], sim.ffma_thread, get(NCU["ffma_thread"])),
        line("executed instructions", "smsp__inst_executed.sum", instr["value"], get("smsp__inst_executed.sum"),
             "compiler-facts estimate"),
        line("L2 bytes", "lts__t_bytes.sum", float(ev["l2_bytes"]), get("lts__t_bytes.sum"),
             "model: tile loads + C; ncu: every L2 access"),
        line("DRAM bytes", "dram__bytes_read.sum + dram__bytes_write.sum", float(ev["dram_bytes"]), dram),
        line("duration (s)", "gpu__time_duration.sum", pred.time_s, None if dur is None else dur * 1e-9,
             "ns in the row, seconds here"),
        line("occupancy (warps / max)", "sm__warps_active.avg.pct_of_peak_sustained_active", occ.fraction,
             None if occ_m is None else occ_m / 100.0, "model: theoretical; ncu: achieved"),
        line("registers / thread", "launch__registers_per_thread", float(prof.registers),
             get("launch__registers_per_thread")),
    ]
    clk = get("sm__cycles_elapsed.avg.per_second")
    return {"source": str((Path(results_dir) / "ncu.jsonl").relative_to(ROOT)
                          if Path(results_dir).is_relative_to(ROOT) else Path(results_dir) / "ncu.jsonl"),
            "ncu_version": row.get("ncu_version"), "date": row.get("date"), "kernel_name": row.get("kernel_name"),
            "sm_clock_hz": clk, "rows": rows}


# --------------------------------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------------------------------

HOW_TO_READ = (
    "How to read this (the seed's \"how to read ncu\", per line): global load/store requests and sectors are "
    "ncu's l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st}.sum and l1tex__t_sectors_pipe_lsu_mem_global_op_"
    "{ld,st}.sum (sectors / requests = 4 for a fully coalesced 128-byte warp access, 32 when every thread hits "
    "its own sector); 128-B lines are the L1 tag-stage wavefronts the l1 limit counts (distinct lines per warp "
    "load, summed; not among the shipped ncu metrics). Shared instructions are "
    "smsp__sass_inst_executed_op_shared_{ld,st}.sum, wavefronts l1tex__data_pipe_lsu_wavefronts_mem_shared_op_"
    "{ld,st}.sum and bank conflicts l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum (ncu counts "
    "a few more wavefronts AND as many more conflicts in whole kernels: compare wavefronts - conflicts); FFMA is "
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum (thread-level, = M N K); executed instructions "
    "smsp__inst_executed.sum (warp-level); L2 bytes lts__t_bytes.sum; DRAM bytes dram__bytes_read.sum + "
    "dram__bytes_write.sum; the predicted time gpu__time_duration.sum; occupancy "
    "sm__warps_active.avg.pct_of_peak_sustained_active (achieved, against the model's theoretical); registers "
    "launch__registers_per_thread. Ratios are predicted / measured. The limits are times of the whole launch on "
    "the busiest SM: issue ~ smsp__inst_executed over the schedulers, shared ~ the shared wavefronts, l1 ~ the "
    "global-load lines, latency = the part of each round beyond the pipes' work: tile-load latency the resident "
    "blocks cannot hide (ncu: stall_long_scoreboard and stall_barrier in the warp-state statistics), l2 ~ "
    "lts__t_bytes, dram ~ dram__bytes; the bound named is the limit that sets the predicted time (the SM time, "
    "then its largest part, or L2, or DRAM). A measured counter far from "
    "its prediction points at the level the model gets wrong; the duration ratio says how much it matters.")


def _n(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and not x.is_integer():
        return f"{x:,.4g}" if abs(x) < 1000 else f"{x:,.0f}"
    return f"{int(x):,}"


def _wrap(text: str, indent: str = "  ", width: int = 110) -> list[str]:
    import textwrap
    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent)


def _hang(label: str, text: str, width: int = 110) -> list[str]:
    """``label`` in a 24-character column, ``text`` wrapped beside it."""
    import textwrap
    first = f"  {label:24s} "
    return textwrap.wrap(text, width=width, initial_indent=first, subsequent_indent=" " * len(first))


def _ratio(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def format_text(d: Mapping) -> str:
    from model.units import fmt_bytes, fmt_rate, fmt_time
    p = d["prediction"]
    L = [f"{d['config']['label']} ({d['config']['key']}) at M={d['M']} N={d['N']} K={d['K']} on {d['gpu']['name']} "
         f"[{d['gpu']['key']}]"]
    head = f"  predicted {fmt_time(p['time_s'])} ({fmt_rate(p['flop_per_s'])}), bound: {p['bound']}"
    if p["cross_validated_time_s"] is not None:
        head += f"; with rung {d['config']['rung']:02d} left out of the calibration: {fmt_time(p['cross_validated_time_s'])}"
    L.append(head)
    m = d["measured"]
    if m is not None:
        L.append(f"  measured  {fmt_time(m['time_s'])} ({fmt_rate(m['flop_per_s'])}), median of the "
                 f"{m['sweep'] or 'measurement'} row {Path(m['source']).name}: predicted / measured = "
                 f"{_ratio(m['predicted_over_measured'])}")
    else:
        L.append("  measured  - (no measurement row for this config and size)")
    L += ["", "Why"]
    for s in d["why"]:
        L += _wrap(s)
    # counts
    c = d["counts"]
    L += ["", f"Counts per launch (warp-level simulator, shared-load widths: {c['plan'] or '-'}; "
              f"{c['blocks']:,} block{'s' if c['blocks'] != 1 else ''} x {c['warps_per_block']} warps, "
              f"{c['k_iterations']:,} {d['per_block_iteration']['unit']}"
              f"{'s' if c['k_iterations'] != 1 else ''})"]
    gl, gs = c["global_load"], c["global_store"]
    L.append(f"  {'':24s} {'requests':>15s} {'sectors':>15s} {'128-B lines':>15s}  sectors/request")
    L.append(f"  {'global loads':24s} {_n(gl['requests']):>15s} {_n(gl['sectors']):>15s} {_n(gl['lines']):>15s}  "
             f"{gl['sectors'] / gl['requests'] if gl['requests'] else 0:.2f}")
    L.append(f"  {'global stores':24s} {_n(gs['requests']):>15s} {_n(gs['sectors']):>15s} "
             f"{'>= ' + _n(gs['lines_min']):>15s}  {gs['sectors'] / gs['requests'] if gs['requests'] else 0:.2f}")
    L.append(f"  {'':24s} {'instructions':>15s} {'wavefronts':>15s} {'bank conflicts':>15s}  wavefronts/instruction")
    for name, k in (("shared loads", "shared_load"), ("shared stores", "shared_store")):
        s = c[k]
        L.append(f"  {name:24s} {_n(s['instructions']):>15s} {_n(s['wavefronts']):>15s} "
                 f"{_n(s['bank_conflicts']):>15s}  {s['wavefronts'] / s['instructions'] if s['instructions'] else 0:.2f}")
    L.append(f"  {'FFMA':24s} {_n(c['ffma']['thread'])} thread-level = {_n(c['ffma']['warp'])} warp instructions")
    L.append(f"  {'barriers':24s} {_n(c['barriers_warp'])} warp-level BAR.SYNC")
    ins = c["executed_instructions"]
    L += _hang("executed instructions", f"{_n(ins['value'])} warp-level = {ins['formula']} [{ins['source']}]")
    L += _hang("L2 bytes", f"{fmt_bytes(c['l2_bytes'])} = {c['l2_bytes_formula']}")
    L += _hang("DRAM bytes", f"{fmt_bytes(c['dram_bytes'])} = {c['dram_bytes_formula']}")
    pb = d["per_block_iteration"]
    L += _hang(f"per block and {pb['unit']}",
               f"(the timing model's input, one interior block): {pb['warps']} warps x "
               f"{pb['instructions_per_warp']:,.4g} instructions [{pb['instructions_source']}], "
               f"{pb['shared_wavefronts']:,.0f} shared wavefronts, {pb['l1_lines']:,.0f} global-load lines "
               f"({pb['gld_requests']:,} requests), {pb['latency_chain']:.2f} global latencies in series per iteration "
               f"[{pb['loop_trace']}]"
               + (f", {pb['local_loads']:g} spill reloads per warp" if pb["local_loads"] else ""))
    # limits
    L += ["", "Limits (timing model, whole launch on the busiest SM; parameters: "
              f"{p['parameters']['calibrated_on']})"]
    rnd = d["per_round_cycles"]
    for r in sorted(d["limits"], key=lambda r: -r["time_s"]):
        mark = "  <- binds" if r["binds"] else ""
        L.append(f"  {r['name']:8s} {fmt_time(r['time_s']):>10s}{mark}")
        L += _wrap(r["formula"], indent="             ")
    L.append(f"  one round of {rnd['blocks']} resident block(s), cycles: issue {rnd['issue']:,.0f}, shared "
             f"{rnd['shared']:,.0f}, l1 {rnd['l1']:,.0f} -> pipes {rnd['round'] - rnd['latency']:,.0f} (p-norm), "
             f"+ exposed latency {rnd['latency']:,.0f} = {rnd['round']:,.0f}")
    L.append(f"  time = max(SM {fmt_time(p['t_sm_s'])}, L2 {fmt_time(p['t_l2_s'])}, DRAM {fmt_time(p['t_dram_s'])}) "
             f"+ launch {fmt_time(p['launch_overhead_s'])} = {fmt_time(p['time_s'])}")
    for n in d["notes"]:
        L += _wrap("note: " + n)
    # occupancy and waves
    o = d["occupancy"]
    reg = o["registers"]
    lims = ", ".join(f"{k} {'-' if v is None else v}" for k, v in o["limits"].items())
    L += ["", "Occupancy"]
    L += _wrap(f"{o['blocks_per_sm']} block(s)/SM of {o['threads_per_block']} threads ({o['warps_per_block']} warps), "
               f"limiter: {o['limiter']} (blocks/SM by limit: {lims}); {o['active_warps']} warps = "
               f"{100 * o['fraction']:.1f} % of the SM's warp slots")
    rl = f"  registers: {reg['registers']}/thread from {reg['source']}"
    if reg["local_bytes"]:
        rl += f"; {reg['local_bytes']:.0f} B of local memory (spills) per thread"
    if reg["measured_num_regs"] is not None:
        rl += f"; measured num_regs {reg['measured_num_regs']}"
    if reg["ncu_registers"] is not None:
        rl += f"; ncu {reg['ncu_registers']}"
    L += _wrap(rl.strip(), indent="  ")
    w = d["waves"]
    L += _wrap(f"waves: {w['blocks']:,} blocks / ({w['sms']} SMs x {w['blocks_per_sm']}) = {w['waves']} wave(s); "
               f"busiest SM: ceil({w['blocks']:,}/{w['sms']}) = {w['busiest_sm_blocks']} blocks = {w['full_rounds']} "
               f"full round(s)"
               + (f" + 1 partial round of {w['partial_round_blocks']} block(s)" if w["partial_round_blocks"] else "")
               + f", {w['iterations_per_round']:,} iterations each"
               + (f" (the later blocks in random order: {w['busiest_sm_blocks_refill_random']} blocks, "
                  f"{fmt_time(w['time_refill_random_s'])})"
                  if w["busiest_sm_blocks_refill_random"] != w["busiest_sm_blocks"] else ""))
    # ncu
    nc = d["ncu"]
    L.append("")
    if nc is None:
        L.append(f"ncu: no counters for this config and size in experiments/results/{d['gpu']['key']}/ncu.jsonl "
                 "(the shipped ncu rows are each rung's classic config at 2048^3)")
    else:
        clk = f", SM clock {nc['sm_clock_hz'] / 1e9:.3g} GHz" if nc.get("sm_clock_hz") else ""
        L.append(f"ncu ({nc['source']}, Nsight Compute {nc['ncu_version']}, {nc['date']}{clk}): predicted vs measured")
        L.append(f"  {'quantity':28s} {'predicted':>16s} {'measured':>16s} {'pred/meas':>9s}  metric")
        for r in nc["rows"]:
            if r["quantity"].startswith("duration"):
                pv = fmt_time(r["predicted"])
                mv = "-" if r["measured"] is None else fmt_time(r["measured"])
            elif r["quantity"].startswith("occupancy"):
                pv = f"{100 * r['predicted']:.1f} %"
                mv = "-" if r["measured"] is None else f"{100 * r['measured']:.1f} %"
            else:
                pv, mv = _n(r["predicted"]), _n(r["measured"])
            L.append(f"  {r['quantity']:28s} {pv:>16s} {mv:>16s} {_ratio(r['ratio']):>9s}  {r['metric']}")
    L.append("")
    L += _wrap(d["how_to_read"], indent="")
    return "\n".join(L)


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------


def main(args) -> int:
    from model.registry import KernelConfig
    from model.spec import load_gpu
    M, N, K = (int(v) for v in args.size)
    gpu = load_gpu(getattr(args, "gpu", None) or "h200")
    d = explain(gpu, KernelConfig.parse(args.config), M, N, K)
    if getattr(args, "json", False):
        print(json.dumps(d, indent=2, default=_json_default))
    else:
        print(format_text(d))
    return 0


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)
