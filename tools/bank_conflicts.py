"""Register-bank conflicts of the FFMAs in a kernel's SASS (issues 8/9; the timing model charges them through
``loop_bank_conflicts`` in the compiler facts).

    python -m tools.bank_conflicts KEY [KEY ...] [--arch sm_90] [--rule pairs|three]
    python -m tools.bank_conflicts --against PREDICTIONS RESULTS [--min-size 2048]

Volta and later read FFMA operands from a register file of two banks (register index mod 2) with an operand
reuse cache: an operand slot marked ``.reuse`` on one instruction is served from the cache for the same slot
of the next (Jia et al. 2018, "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking", register
banks; the maxas SGEMM notes). Two readings of what a conflict costs, both counted by :func:`ffma_conflicts`
over the distinct source registers the reuse cache does not serve:

* ``pairs`` (what the compiler facts store and the model charges, calibrated and scored blind since
  2026-11-30): a bank holding k of them costs k - 1 extra reads;
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
and reaches 95-97 % of cuBLAS. The model keeps ``pairs`` until that cost has its own mechanism (the SASS
control codes' fixed stalls are the next candidate); the evidence is in the README.

Needs requirements-facts.txt (NVRTC, nvdisasm), like tools.compiler_facts.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable, Sequence

_REG = re.compile(r"^-?\|?(R\d+)\|?(\.reuse)?")


RULES = ("pairs", "three")


def ffma_conflicts(instrs: Iterable, rule: str = "pairs") -> tuple[int, int]:
    """(FFMAs, extra register-bank reads) over ``instrs`` (``tools.compiler_facts.Instr`` in program order):
    for each FFMA, the distinct source registers that the reuse cache does not serve (slot s is served when
    the previous instruction marked the same register ``.reuse`` in slot s), grouped by bank (index mod 2).
    ``rule="three"``: one extra read when three of them sit in one bank (a 64-bit bank serves two);
    ``rule="pairs"``: a bank holding k of them costs k - 1 extra reads."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r} ({', '.join(RULES)})")
    prev: dict[int, str] = {}
    n = extra = 0
    for ins in instrs:
        now: dict[int, str] = {}
        if ins.op.split(".")[0] == "FFMA":
            args = [a.strip() for a in ins.operands.split(",")]
            regs = set()
            for slot, a in enumerate(args[1:4]):
                m = _REG.match(a)
                if not m:
                    continue
                r = m.group(1)
                if m.group(2):
                    now[slot] = r
                if prev.get(slot) != r:
                    regs.add(int(r[1:]))
            banks = Counter(r % 2 for r in regs)
            if rule == "pairs":
                extra += sum(max(0, k - 1) for k in banks.values())
            else:
                extra += int(any(k >= 3 for k in banks.values()))
            n += 1
        else:
            for slot, a in enumerate([a.strip() for a in ins.operands.split(",")][1:4]):
                m = _REG.match(a)
                if m and m.group(2):
                    now[slot] = m.group(1)
        prev = now
    return n, extra


def conflicts_per_ffma(key: str, arch: str = "sm_90", rule: str = "pairs") -> float:
    """Extra register-bank reads per FFMA of config ``key``, compiled as CuPy compiles it (NVRTC)."""
    from model.registry import KernelConfig
    from tools import compiler_facts as cf
    cubin = cf.compile_cubin(KernelConfig.parse(key), arch)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        funcs = cf.disassemble(str(path))
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


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.bank_conflicts", description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="*", help="config keys")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--rule", choices=RULES, default="pairs",
                    help="pairs: k-1 extra reads per bank holding k uncached operands (the facts' rule, default); "
                         "three: one when an FFMA has three in one bank")
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
    for p in a.against or ():
        if not Path(p).is_file():
            print(f"error: {p}: no such file", file=sys.stderr)
            return 2
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
