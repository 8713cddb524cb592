"""Register-bank conflicts of the FFMAs in a kernel's SASS (issues 8/9; the timing model charges them through
``loop_bank_conflicts`` in the compiler facts).

    python -m tools.bank_conflicts KEY [KEY ...] [--arch sm_90] [--rule pairs|three]
    python -m tools.bank_conflicts --against PREDICTIONS RESULTS [--min-size 2048]
    python -m tools.bank_conflicts KEY --source NCU_SOURCE.csv[.gz]     # dispatch stalls by bank, and the base
                                                                        # dispatch stall per conflict-free FFMA

Volta and later read FFMA operands from a register file of two banks (register index mod 2) with an operand
reuse cache: an operand slot marked ``.reuse`` on one instruction is served from the cache for the same slot
of the next (Jia et al. 2018, "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking", register
banks; the maxas SGEMM notes). Two readings of what a conflict costs, both counted by :func:`ffma_conflicts`
over the distinct source registers the reuse cache does not serve:

* ``pairs`` (what the compiler facts stored for every GPU until the fourth session of 2026-11-30, and still do
  for sm_80/86/89): a bank holding k of them costs k - 1 extra reads;
* ``three``: the banks are 64 bits wide and serve two operands a cycle, so only an FFMA with three of them in
  one bank pays (one extra read).

What the H200 says (2026-11-30, experiments/results/h200/bank.jsonl, logs/bank-2026-11-30/): rung 09 removes
nearly every same-bank pair (``pairs`` 0.10 per FFMA against 0.87-1.0 in rung 08 at the same geometry; ``three``
0 against 0.06-0.07). It issues 1.6 % more instructions per cycle than rung 08 (Nsight Compute at 4096^3:
dispatch stalls 0.17 against 0.24 per instruction) but executes 7 % more instructions and runs 4-5 % slower.
Under ``pairs`` each removed conflict bought 0.02 cycles, far less than the model charges; under ``three`` about
a quarter of a cycle, what the model's delay gives. But a model recalibrated with ``three`` loses what ``pairs``
explained on rungs 04-08 (leave-one-rung-out 9.7 % against 8.4 %; the rung 07/08 sweeps 12-18 % optimistic
against 8-10 %): ``pairs`` stands in for a cost of these loops that is real but is not the bank conflicts
themselves. Rung 10 removed one candidate, the fixed-latency chains of rung 08's copy code (branch-free, the
copies interleaved with the FFMAs): at the same pairs count (0.95 per FFMA) it runs 5-15 % faster than rung 08
and reaches 95-97 % of cuBLAS. Since the fourth session the model charges the SASS control codes' fixed stalls,
added to the iteration (model/timing.py), and the conflicts of rule ``quad`` (below: Nsight Compute's
per-instruction sampling found four banks on the H200, where rung 09 was laid out for two); the evidence is in
the README and ``experiments/results/h200/logs/source-2026-11-30/``.

Needs requirements-facts.txt (NVRTC, nvdisasm), like tools.compiler_facts.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable, Mapping, Sequence

_REG = re.compile(r"^-?\|?(R\d+)\|?(\.reuse)?")


RULES = ("pairs", "three", "quad")
BANK_RULE = {"sm_90": "quad"}
"""The rule the compiler facts store per architecture (others: ``pairs``, the reading this tool began with).
sm_90: ``quad``, from Nsight Compute's per-instruction stall sampling on the H200 (2026-11-30, fourth session,
``experiments/results/h200/logs/source-2026-11-30/``): over three kernels (rung 07 at two thread tiles, rung 10),
the FFMAs whose three non-reused source registers share one of four banks (register index mod 4) stall 1.6-2.3
cycles at dispatch per execution against 0.2-0.4 for every other FFMA; three in one bank mod 2 but not mod 4,
or two in one bank mod 4, cost nothing measurable. So the H200's register file has four banks and a bank serves
two operands of an instruction a cycle."""
# What the timing model charges per conflict under each rule: model.facts.BANK_CONFLICT_CYCLES.


def uncached_sources(instrs: Iterable):
    """For each FFMA of ``instrs`` (``tools.compiler_facts.Instr`` in program order): (the instruction, the set of
    its distinct source registers the operand reuse cache does not serve). Slot s is served when the previous
    instruction marked the same register ``.reuse`` in slot s (:func:`uncached_slots`, by slot)."""
    for ins, slots in uncached_slots(instrs):
        yield ins, set(slots.values())


SLOT_CLASSES = ("three", "ab", "ac")
"""Classes of an FFMA's uncached source registers (``d = a * b + c``; index mod 4 = bank, sm_90), in order of
precedence: ``three`` (three in one bank), ``ab`` (a and b in one bank), ``ac`` (a and c in one bank). b and c in
one bank is no class: Nsight Compute's per-instruction sampling on the H200 finds it costs nothing (0.20 dispatch
samples per FFMA against 0.22 with every source in its own bank; ab 0.98, ac 0.36, three 1.38; 1.2e11 FFMA
executions of 67 kernels, ``experiments/results/h200/logs/source*`` and ``kscan-2026-12-01``)."""


def uncached_slots(instrs: Iterable):
    """For each FFMA of ``instrs`` (program order): (the instruction, {slot: register index} of its source slots
    0-2 (a, b, c) that the operand reuse cache does not serve). Slot s is served when the previous instruction
    marked the same register ``.reuse`` in slot s."""
    prev: dict[int, str] = {}
    for ins in instrs:
        now: dict[int, str] = {}
        ffma = ins.op.split(".")[0] == "FFMA"
        slots: dict[int, int] = {}
        for slot, a in enumerate([a.strip() for a in ins.operands.split(",")][1:4]):
            m = _REG.match(a)
            if not m:
                continue
            if m.group(2):
                now[slot] = m.group(1)
            if ffma and prev.get(slot) != m.group(1):
                slots[slot] = int(m.group(1)[1:])
        if ffma:
            yield ins, slots
        prev = now


def slot_class(slots: Mapping[int, int]) -> str | None:
    """The :data:`SLOT_CLASSES` class of one FFMA's uncached source slots (``{slot: register}``), or None."""
    if max(Counter(r % 4 for r in set(slots.values())).values(), default=0) >= 3:
        return "three"
    a, b, c = slots.get(0), slots.get(1), slots.get(2)
    if a is not None and b is not None and a != b and a % 4 == b % 4:
        return "ab"
    if a is not None and c is not None and a != c and a % 4 == c % 4:
        return "ac"
    return None


def ffma_slot_classes(instrs: Iterable) -> dict[str, int]:
    """FFMAs of ``instrs`` (program order) by :func:`slot_class`: ``{class: count}`` for every class of
    :data:`SLOT_CLASSES` (the compiler facts' ``loop_slot_classes``, over the steady iteration)."""
    out = dict.fromkeys(SLOT_CLASSES, 0)
    for _, slots in uncached_slots(instrs):
        c = slot_class(slots)
        if c is not None:
            out[c] += 1
    return out


def ffma_conflicts(instrs: Iterable, rule: str = "pairs") -> tuple[int, int]:
    """(FFMAs, extra register-bank reads) over ``instrs``: each FFMA's :func:`uncached_sources`, grouped by bank
    (index mod 2). ``rule="three"``: one extra read when three of them sit in one bank (a 64-bit bank serves
    two); ``rule="pairs"``: a bank holding k of them costs k - 1 extra reads; ``rule="quad"``: four banks
    (index mod 4), one conflict when three of them sit in one bank."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r} ({', '.join(RULES)})")
    n = extra = 0
    for _, regs in uncached_sources(instrs):
        banks = Counter(r % (4 if rule == "quad" else 2) for r in regs)
        if rule == "pairs":
            extra += sum(max(0, k - 1) for k in banks.values())
        else:
            extra += int(any(k >= 3 for k in banks.values()))
        n += 1
    return n, extra


def conflicts_per_ffma(key: str, arch: str = "sm_90", rule: str = "pairs") -> float:
    """Extra register-bank reads per FFMA of config ``key``, compiled as CuPy compiles it (NVRTC)."""
    from model.registry import KernelConfig
    from tools import compiler_facts as cf
    funcs = cf.config_sass(KernelConfig.parse(key), arch)
    n = extra = 0
    for instrs, _ in funcs.values():
        a, b = ffma_conflicts(instrs, rule)
        n, extra = n + a, extra + b
    return extra / n if n else 0.0


def against(pred_path: Path, results_path: Path, min_size: int, arch: str,
            rule: str = "pairs") -> list[tuple[str, float, float]]:
    """(config, conflicts per FFMA, mean measured / committed-predicted FLOP/s) per config of a sweep."""
    pred = {}
    for line in Path(pred_path).read_text().splitlines():
        p = json.loads(line)
        if p.get("flop_per_s"):
            pred[(p["config"], p["M"], p["N"], p["K"])] = p["flop_per_s"]
    ratio = defaultdict(list)
    for line in Path(results_path).read_text().splitlines():
        r = json.loads(line)
        key = (r.get("config_key"), r.get("M"), r.get("N"), r.get("K"))
        if r.get("rung", 0) == 0 or r.get("status") != "ok" or min(r["M"], r["N"], r["K"]) < min_size:
            continue
        if (r.get("params") or {}).get("SPLITK", 1) > 1 or key not in pred:
            continue
        ratio[key[0]].append(r["flop_per_s"] / pred[key])
    return [(k, conflicts_per_ffma(k, arch, rule), sum(v) / len(v)) for k, v in sorted(ratio.items())]


def read_source_csv(csv_path: Path) -> list[dict]:
    """Rows of Nsight Compute's ``--page source --print-source sass --csv`` output (plain or gzipped): one dict
    per SASS instruction with its address offset in the function (``offset``), ``executed``, and every
    ``stall_*`` sample count (the ``(Not Issued)`` columns left out)."""
    import csv
    import gzip
    opener = gzip.open if str(csv_path).endswith(".gz") else open
    with opener(csv_path, "rt") as f:
        rows = list(csv.reader(f))
    k = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    head = rows[k]

    def num(x: str) -> float:
        x = x.replace(",", "").strip()
        return float(x) if x not in ("", "-") else 0.0
    data = [r for r in rows[k + 1:] if len(r) >= len(head)]
    base = int(data[0][0], 16)
    out = []
    for r in data:
        d = {"offset": int(r[0], 16) - base, "executed": num(r[head.index("Instructions Executed")])}
        for i, h in enumerate(head):
            if h.startswith("stall_") and "Not Issued" not in h:
                d[h] = num(r[i])
        out.append(d)
    return out


def _samples_per_issue(rows: Sequence[dict]) -> float:
    """``stall_selected`` samples per executed instruction: the unit that turns sample counts into cycles."""
    return sum(r.get("stall_selected", 0.0) for r in rows) / max(sum(r["executed"] for r in rows), 1.0)


def stall_summary(rows: Sequence[dict], conflicted: Mapping[int, bool]) -> dict:
    """Per issued instruction of one warp (samples / ``stall_selected``): ``cycles`` (all samples), ``dispatch``
    and ``not_selected``, and every stall reason, largest first (``reasons``: ``short_sb`` is the wait on shared
    loads of ``logs/burst-2026-12-01``); and ``base_dispatch_per_ffma``: the dispatch-stall samples per executed FFMA among the
    FFMAs that ``conflicted`` (offset -> three uncached sources in one bank) marks False, in the same unit (the
    base dispatch stall of ``logs/source3-2026-12-01``)."""
    tot: Counter = Counter()
    for r in rows:
        for h, v in r.items():
            if h.startswith("stall_"):
                tot[h] += v
    sel = tot["stall_selected"] or 1.0
    per_issue = _samples_per_issue(rows)
    d = e = 0.0
    for r in rows:
        if conflicted.get(r["offset"]) is False:
            d += r.get("stall_dispatch", 0.0)
            e += r["executed"]
    reasons = {h[len("stall_"):]: v / sel for h, v in tot.most_common() if h != "stall_selected"}
    return {"cycles": sum(tot.values()) / sel, "dispatch": tot["stall_dispatch"] / sel,
            "not_selected": tot["stall_not_selected"] / sel, "reasons": reasons,
            "base_dispatch_per_ffma": (d / e / per_issue) if e else float("nan")}


def source_table(csv_path: Path, key: str, arch: str = "sm_90") -> dict:
    """Dispatch-stall samples per executed FFMA (in units of the kernel's issued-instruction samples) by the
    most non-reused source registers that share one bank, mod 2 and mod 4: Nsight Compute's per-instruction
    sampling (``--page source --print-source sass --csv``, plain or gzipped) joined by address offset with our
    build of ``key``. Returns {"mod2": {k: (stall per FFMA, executions)}, "mod4": {...}, "slots": {class or "none":
    (...)} (:data:`SLOT_CLASSES`), "summary": :func:`stall_summary`}."""
    from model.registry import KernelConfig
    from tools import compiler_facts as cf
    ((instrs, _),) = cf.config_sass(KernelConfig.parse(key), arch).values()
    most = {ins.addr: tuple(max(Counter(r % b for r in regs).values(), default=0) for b in (2, 4))
            for ins, regs in uncached_sources(instrs)}
    rows = read_source_csv(csv_path)
    per_issue = _samples_per_issue(rows)
    acc = {"mod2": defaultdict(lambda: [0.0, 0.0]), "mod4": defaultdict(lambda: [0.0, 0.0])}
    for r in rows:
        m = most.get(r["offset"])
        if m is None:
            continue
        for name, v in zip(("mod2", "mod4"), m):
            acc[name][v][0] += r.get("stall_dispatch", 0.0)
            acc[name][v][1] += r["executed"]
    cls = {ins.addr: slot_class(slots) or "none" for ins, slots in uncached_slots(instrs)}
    acc["slots"] = defaultdict(lambda: [0.0, 0.0])
    for r in rows:
        c = cls.get(r["offset"])
        if c is not None:
            acc["slots"][c][0] += r.get("stall_dispatch", 0.0)
            acc["slots"][c][1] += r["executed"]
    out: dict = {name: {v: (a / b / per_issue, b) for v, (a, b) in sorted(t.items()) if b} for name, t in acc.items()}
    out["summary"] = stall_summary(rows, {off: m[1] >= 3 for off, m in most.items()})
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.bank_conflicts", description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="*", help="config keys")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--rule", choices=RULES, default="pairs",
                    help="pairs: k-1 extra reads per bank holding k uncached operands (the facts' rule, default); "
                         "three: one when an FFMA has three in one bank; quad: three in one of four banks (sm_90's)")
    ap.add_argument("--source", metavar="CSV", help="Nsight Compute --page source CSV of the (one) config given: "
                    "dispatch stalls per FFMA by the most operands sharing a bank (mod 2, mod 4)")
    ap.add_argument("--against", nargs=2, metavar=("PREDICTIONS", "RESULTS"),
                    help="correlate conflicts per FFMA with measured / committed-predicted FLOP/s of a sweep")
    ap.add_argument("--min-size", type=int, default=2048, help="with --against: rows with M, N, K >= this")
    a = ap.parse_args(argv)
    if not a.configs and not a.against:
        ap.error("give config keys or --against PREDICTIONS RESULTS")
    from model.errors import GemmscopeError
    from model.registry import KernelConfig
    try:
        for k in a.configs:
            KernelConfig.parse(k)
    except GemmscopeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.source and len(a.configs) != 1:
        print("error: --source takes exactly one config key (the profiled kernel's)", file=sys.stderr)
        return 2
    for p in (a.against or ()) + ((a.source,) if a.source else ()):
        if not Path(p).is_file():
            print(f"error: {p}: no such file", file=sys.stderr)
            return 2
    if a.source:
        table = source_table(Path(a.source), a.configs[0], a.arch)
        sm = table.pop("summary")
        slots = table.pop("slots")
        for name, t in table.items():
            print(f"{name}: " + "  ".join(f"{v} in one bank: {st:.2f} dispatch-stall cycles per FFMA ({n:.3g})"
                                          for v, (st, n) in t.items()))
        print("slot classes (SLOT_CLASSES): " + "  ".join(f"{c}: {st:.2f} per FFMA ({n:.3g})" for c, (st, n) in slots.items()))
        print(f"per issued instruction of one warp: {sm['cycles']:.2f} cycles, dispatch {sm['dispatch']:.2f}, "
              f"not_selected {sm['not_selected']:.2f}; base dispatch stall per FFMA without three uncached "
              f"sources in one of four banks: {sm['base_dispatch_per_ffma']:.2f}")
        print("stall reasons per issued instruction: "
              + ", ".join(f"{k} {v:.3f}" for k, v in list(sm["reasons"].items())[:8]))
        return 0
    for k in a.configs:
        print(f"{conflicts_per_ffma(k, a.arch, a.rule):.3f}  {k}")
    if a.against:
        import numpy as np
        rows = against(Path(a.against[0]), Path(a.against[1]), a.min_size, a.arch, a.rule)
        for k, c, r in rows:
            print(f"{c:.3f}  measured/predicted {r:.3f}  {k}")
        x, y = np.array([c for _, c, _ in rows]), np.array([r for _, _, r in rows])
        if len(rows) > 2:
            print(f"{len(rows)} configs: Pearson {np.corrcoef(x, y)[0, 1]:+.2f} between conflicts per FFMA and "
                  "measured / predicted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
