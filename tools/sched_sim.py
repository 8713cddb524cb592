"""One warp scheduler simulated cycle by cycle over a kernel's steady K loop: a research tool, not (yet) used by
the timing model.

    python -m tools.sched_sim KEY [KEY ...] [--arch sm_90] [--gpu h200] [--pipe 4]

Why: rung 11's SPREAD = 1 issues a tile's copies in one cluster and measures up to 16 % slower than SPREAD = BK,
where the model (one warp's latency-bound trace, shared-memory wavefronts averaged over the loop) predicts it
faster. Nsight Compute puts the cost at the FFMAs behind the cluster, waiting on the shared loads queued behind the
copies (``experiments/results/h200/logs/burst-2026-12-01/``). A single warp's trace with a shared pipe does not see
that queue (correlation 0.34-0.38 with the measured SPREAD ratios); this simulation of all the warps of one
scheduler does better (0.44, mean absolute error 0.042 over 24 pairs), and is the candidate mechanism.

What it simulates, from the SASS of the steady path (``tools.compiler_facts``): ``n`` warps (the SM's resident warps
/ 4) run the same instructions in order; the scheduler issues one instruction a cycle, oldest warp first; a warp
waits for its control code's stall count (``Instr.stall``), for its source registers (results of loads and ALU
instructions, as :func:`tools.compiler_facts.warp_trace`), for registers a queued copy still has to read, for
``DEPBAR`` (cp.async groups) and at ``BAR`` for the other warps of its block on this scheduler. Every shared-memory
path instruction (``LDS``, ``STS``, ``LDGSTS``, ``LDG``, local memory) occupies the SM's memory pipe for
``pipe`` cycles of this scheduler's share per 128-byte wavefront (conflict-free: 4 for 128-bit accesses, 1 for
32-bit; the other three schedulers issue the same mix), and its result (or a copy's source read) waits for the pipe.
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from tools import compiler_facts as cf

PIPE_OPS = frozenset({"LDS", "STS", "LDGSTS", "LDG", "LDL", "STL"})


def wavefronts(ins: cf.Instr) -> int:
    """128-byte wavefronts of one memory-pipe instruction of a warp, if conflict-free (0 for other instructions and
    for ptxas's never-executed ``@!PT`` padding)."""
    base = ins.op.split(".")[0]
    if base not in PIPE_OPS or ins.family == "NOP":
        return 0
    parts = ins.op.split(".")
    return 4 if "128" in parts else 2 if "64" in parts else 1


def simulate(instrs: Sequence[cf.Instr], n_warps: int, blocks: int = 1, pipe: float = 4.0,
             global_latency: float = 600.0, shared_latency: float = 30.0, iters: int = 6,
             scale: dict[str, float] | None = None) -> float:
    """Cycles per iteration, in steady state (iterations 3 to ``iters``), of ``n_warps`` warps on one scheduler
    running ``instrs`` (one loop iteration) ``iters`` times; ``blocks``: how many blocks the warps belong to
    (warp w to block w % blocks; a barrier waits for the warps of one block); ``scale``: the wavefronts of each
    memory instruction (by its base opcode, e.g. ``LDS``) times this factor (the simulated accesses' wavefronts
    over the conflict-free count; default 1)."""
    if n_warps < 1 or blocks < 1 or iters < 3:
        raise ValueError("n_warps and blocks must be >= 1, iters >= 3")
    blocks = min(blocks, n_warps)
    ops = cf._prepared(tuple(instrs))
    if not ops:
        raise ValueError("no instructions")
    lat = {"global": global_latency, "shared": shared_latency, "local": shared_latency,
           "const": cf.CONST_LATENCY_CYCLES, "alu": cf.ALU_LATENCY_CYCLES}
    pc = [0] * n_warps
    it = [0] * n_warps
    nxt = [0.0] * n_warps
    ready: list[dict[int, float]] = [{} for _ in range(n_warps)]
    held: list[dict[int, float]] = [{} for _ in range(n_warps)]
    groups: list[list[float]] = [[] for _ in range(n_warps)]
    open_group: list[list[float]] = [[] for _ in range(n_warps)]
    at_bar: dict[tuple[int, int], set[int]] = {}
    members = [sum(1 for v in range(n_warps) if v % blocks == b) for b in range(blocks)]
    pipe_free = 0.0
    ends: dict[int, float] = {}
    t = 0.0
    limit = 50.0 * iters * len(ops) * n_warps + 1e5
    while min(it) < iters:
        for w in sorted(range(n_warps), key=lambda v: (it[v], pc[v])):     # oldest first
            if it[w] >= iters or nxt[w] > t:
                continue
            ins, (dest, srcs), cls, base = ops[pc[w]]
            if any(ready[w].get(r, 0.0) > t for r in srcs) or any(held[w].get(r, 0.0) > t for r in dest):
                continue
            if base == "DEPBAR" and cf.depbar_ready(ins, groups[w], open_group[w]) > t:
                continue
            if base == "BAR":
                key = (w % blocks, it[w])
                at_bar.setdefault(key, set()).add(w)
                if len(at_bar[key]) < members[w % blocks]:
                    continue
            wf = wavefronts(ins) * (scale.get(base, 1.0) if scale else 1.0)
            served = t
            if wf:
                pipe_free = max(pipe_free, t) + wf * pipe
                served = pipe_free
            if base == "LDGSTS":
                open_group[w].append(served + global_latency)
                for r in srcs:
                    held[w][r] = served
            elif base == "LDGDEPBAR":
                groups[w].append(max(open_group[w]) if open_group[w] else t)
                open_group[w] = []
            for r in dest:
                ready[w][r] = served + lat[cls]
            nxt[w] = t + ins.stall
            pc[w] += 1
            if pc[w] == len(ops):
                pc[w] = 0
                it[w] += 1
                ends[it[w]] = max(ends.get(it[w], 0.0), t + 1)
            break                                   # one issue per cycle
        t += 1.0
        if t > limit:
            raise RuntimeError("the simulation does not progress (a barrier no warp can pass?)")
    return (ends[iters] - ends[2]) / (iters - 2)


PIPE_CYCLES = 4.0
"""Cycles of one scheduler's share of the SM's shared-memory pipe per 128-byte wavefront: the pipe serves one
wavefront a cycle (128 B a cycle per SM: ``[sm].shared_bytes_per_clk`` of every shipped spec) and four schedulers
issue the same mix."""


def pipe_scale(instrs: Sequence[cf.Instr], lds_wavefronts: float, sts_wavefronts: float) -> dict[str, float]:
    """Per-opcode factors that turn :func:`wavefronts` (conflict-free, no broadcast) of one SASS iteration into the
    simulated accesses' wavefronts of the same iteration (``lds_wavefronts`` for the shared loads, ``sts_wavefronts``
    for the shared stores and copies ``STS``/``LDGSTS``, one warp): a warp-tiled LDS.128 whose lanes share rows
    reads two wavefronts, not four."""
    lds = sum(wavefronts(i) for i in instrs if i.op.split(".")[0] == "LDS")
    sts = sum(wavefronts(i) for i in instrs if i.op.split(".")[0] in ("STS", "LDGSTS"))
    out = {"LDS": lds_wavefronts / lds if lds else 1.0, "STS": sts_wavefronts / sts if sts else 1.0}
    out["LDGSTS"] = out["STS"]
    return out


QUEUE_LATENCIES = (0.0, 600.0)
"""Global-load latencies (cycles) the ``loop_queue`` fact is simulated at: 0 isolates the order of the memory
instructions at the pipe from the latency the timing model hides by warps (what the model reads); 600 is the
loaded latency of a tile load, kept for comparison."""


def queue_excess(instrs: Sequence[cf.Instr], n_warps: int, blocks: int, scale: dict[str, float] | None = None,
                 pipe: float = PIPE_CYCLES, global_latency: float = 0.0) -> dict[str, float]:
    """One iteration of a scheduler's ``n_warps`` warps: simulated with the shared pipe (``simulated``), and its two
    fluid bounds, the same warps with a free pipe (``issue_bound``: issue, control-code stalls, latencies) and the
    pipe's busy cycles (``pipe_bound``: every warp's wavefronts x ``pipe``). What ``simulated`` exceeds the bounds is
    what the *order* of the memory instructions costs (the timing model combines the bounds as it combines its
    pipes): a loop that spreads its copies among the FFMAs keeps the pipe's queue short; one that issues them in a
    cluster makes the shared loads behind it wait while the FFMAs that need them stall
    (``experiments/results/h200/logs/burst-2026-12-01/``)."""
    u = simulate(instrs, n_warps, blocks, 0.0, global_latency=global_latency)
    q = simulate(instrs, n_warps, blocks, pipe, global_latency=global_latency, scale=scale)
    busy = pipe * n_warps * sum(wavefronts(i) * ((scale or {}).get(i.op.split(".")[0], 1.0)) for i in instrs)
    return {"simulated": q, "issue_bound": u, "pipe_bound": busy}


def loop_queue(cfg, arch: str, gpu) -> dict:
    """The ``loop_queue`` compiler fact of one config (:func:`queue_excess` at the GPU's occupancy, the shipped
    registers): compiles the config now. Cycles per SASS loop iteration of one scheduler's warps, with ``blocks``
    resident blocks per SM, at each of :data:`QUEUE_LATENCIES`."""
    from model.counts import steady_counts
    from model.facts import facts_for
    from model.occupancy import occupancy
    from model.registry import geometry
    f = facts_for(cfg, arch)
    if f is None or not f.loop_ffma:
        raise cf.FactsError(f"{cfg.key}: no shipped facts with a main loop for {arch}")
    g, b = geometry(cfg), steady_counts(cfg)
    warps_block = max(b.warps, 1)
    per_sass = f.loop_ffma / (b.ffma_warp / warps_block)
    occ = occupancy(gpu, g.threads, f.registers, g.smem_bytes)
    n = max(1, occ.blocks_per_sm * (g.threads // 32) // 4)
    instrs = steady_loop(cfg.key, arch)
    sc = pipe_scale(instrs, b.lds_wavefronts / warps_block * per_sass, b.sts_wavefronts / warps_block * per_sass)
    runs = [queue_excess(instrs, n, occ.blocks_per_sm, sc, global_latency=lat) for lat in QUEUE_LATENCIES]
    out = {k: [r[k] for r in runs] for k in ("simulated", "issue_bound")}
    return {**out, "pipe_bound": runs[0]["pipe_bound"], "global_latencies": list(QUEUE_LATENCIES),
            "blocks": occ.blocks_per_sm, "warps_per_scheduler": n, "path_instructions": len(instrs),
            "pipe_cycles_per_wavefront": PIPE_CYCLES, "gpu": gpu.key}


def steady_loop(key: str, arch: str = "sm_90") -> list[cf.Instr]:
    """The steady path of a config's main loop, compiled now (NVRTC) for ``arch``."""
    (instrs, labels), = cf.config_sass(cf._from_key(key), arch).values()
    body = cf.strip_padding(instrs, labels)
    found = cf._main_loop(body, labels)
    if found is None:
        raise cf.FactsError(f"{key}: no main loop in the SASS")
    blocks, h, loop = found
    steady = cf.steady_path(body, blocks, h, loop)
    return [i for b in steady for i in body[blocks[b].start:blocks[b].end]]


def _queue_row(args) -> dict:
    key, arch, gpu_key = args
    from model.registry import KernelConfig
    from model.spec import load_gpu
    try:
        cfg = KernelConfig.parse(key)
        return {"key": key, "arch": arch, "loop_queue": loop_queue(cfg, arch, load_gpu(gpu_key))}
    except Exception as exc:  # noqa: BLE001 - one config's failure is a row, not the batch's end
        return {"key": key, "arch": arch, "error": f"{type(exc).__name__}: {exc}"}


def queue_batch(keys: Sequence[str], out, arch: str, gpu_key: str, jobs: int = 1) -> int:
    """:func:`loop_queue` for many configs into a JSON Lines file (appended: keys already in it are skipped, so an
    interrupted batch resumes); ``jobs`` processes. Returns the rows written."""
    import json
    from concurrent.futures import ProcessPoolExecutor
    from contextlib import ExitStack
    from pathlib import Path
    out = Path(out)
    done = set()
    if out.exists():
        done = {json.loads(line)["key"] for line in out.read_text().splitlines() if line.strip()}
    todo = [(k, arch, gpu_key) for k in keys if k not in done]
    n = 0
    with ExitStack() as stack, open(out, "a") as f:
        rows = (map(_queue_row, todo) if jobs <= 1
                else stack.enter_context(ProcessPoolExecutor(jobs)).map(_queue_row, todo))
        for r in rows:
            f.write(json.dumps(r) + "\n")
            f.flush()
            n += 1
    return n


def merge_queue(paths: Sequence, arch: str = "sm_90") -> int:
    """Merge :func:`queue_batch` files into the shipped compiler facts of ``arch`` (each config's ``loop_queue``);
    rows with an error are skipped. Returns the configs merged."""
    import json
    from pathlib import Path
    from model.facts import FACTS_DIR
    path = Path(FACTS_DIR) / f"{arch}.json"
    table = cf.read_cache(path).get(arch, {})
    add = {}
    for p in paths:
        for line in Path(p).read_text().splitlines():
            r = json.loads(line)
            if r.get("arch", arch) != arch or "error" in r or r["key"] not in table:
                continue
            if r["loop_queue"].get("path_instructions") != table[r["key"]].get("loop_path_instructions"):
                continue        # compiled to another steady path than the shipped facts': not this config's SASS
            add[r["key"]] = {**table[r["key"]], "loop_queue": r["loop_queue"]}
    if add:
        cf.write_facts(path, {arch: add}, merge=True)
    return len(add)


def main(argv: Sequence[str] | None = None) -> int:
    from analysis.cli import Parser
    from model.errors import ConfigError
    from model.facts import registers_for
    from model.occupancy import occupancy
    from model.registry import KernelConfig, geometry, validate
    from model.spec import SpecError, load_gpu
    ap = Parser(prog="python -m tools.sched_sim", description=__doc__.split("\n\n")[0])
    ap.add_argument("configs", nargs="*", help="config keys, e.g. 11:BM=128,BN=128,...")
    ap.add_argument("--queue-facts", metavar="OUT.jsonl",
                    help="write the loop_queue fact of every shipped config of --rungs (resumes OUT)")
    ap.add_argument("--rungs", default="", help="with --queue-facts: comma-separated rung numbers [all]")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="processes for --queue-facts [1]")
    ap.add_argument("--merge", nargs="+", metavar="FILE.jsonl", help="merge --queue-facts files into the shipped facts")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--gpu", default="h200", help="GPU spec for the occupancy [h200]")
    ap.add_argument("--pipe", type=float, default=4.0, help="pipe cycles per wavefront of one scheduler's share [4]")
    a = ap.parse_args(argv)
    try:
        gpu = load_gpu(a.gpu)
        cfgs = [KernelConfig.parse(k) for k in a.configs]
        for c in cfgs:
            validate(c, gpu)
    except (SpecError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if a.pipe <= 0:
        print("error: --pipe must be > 0", file=sys.stderr)
        return 2
    if a.merge:
        print(f"merged the loop_queue of {merge_queue(a.merge, a.arch)} configs into the {a.arch} facts")
        return 0
    if a.queue_facts:
        from model.facts import load_facts
        rungs = {r.strip().zfill(2) for r in a.rungs.split(",") if r.strip()}
        keys = [k for k in (a.configs or list(load_facts(a.arch))) if not rungs or k.split(":")[0] in rungs]
        n = queue_batch(keys, a.queue_facts, a.arch, gpu.key, a.jobs)
        print(f"{n} configs simulated into {a.queue_facts}")
        return 0
    if not cfgs:
        print("error: give config keys, --queue-facts or --merge", file=sys.stderr)
        return 2
    for c in cfgs:
        instrs = steady_loop(c.key, a.arch)
        g = geometry(c)
        regs = registers_for(c, a.arch) or cf.facts(c, a.arch)["registers"]   # shipped facts, else compiled
        occ = occupancy(gpu, g.threads, regs, g.smem_bytes)
        warps = max(1, occ.blocks_per_sm * (g.threads // 32) // 4)
        cyc = simulate(instrs, warps, occ.blocks_per_sm, a.pipe)
        print(f"{c.label}: {len(instrs)} instructions per iteration, {warps} warps per scheduler, "
              f"{cyc:.0f} cycles per iteration")
    return 0


if __name__ == "__main__":
    sys.exit(main())
