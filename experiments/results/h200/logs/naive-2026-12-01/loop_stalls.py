"""Per profile (ncu SourceCounters CSV, a sample every 32 cycles): the main loop's instructions (the backward branch
with the most executions and the code from its target), their executions, and the stall samples by reason, in the
loop and in the whole kernel. Usage: python3 loop_stalls.py src_<i>.csv.gz ..."""
import csv, gzip, io, re, sys, collections

REASONS = ("long_sb", "lg", "no_inst", "math", "wait", "not_selected", "selected", "short_sb", "mio", "dispatch",
           "branch_resolving", "drain", "barrier")

for path in sys.argv[1:]:
    txt = gzip.open(path, "rt").read().splitlines()
    start = next(i for i, l in enumerate(txt) if l.startswith('"Address"'))
    rows = list(csv.DictReader(io.StringIO("\n".join(txt[start:]))))
    base = int(rows[0]["Address"], 16)
    for r in rows:
        r["off"] = int(r["Address"], 16) - base
        r["ex"] = int(r["Instructions Executed"] or 0)
    # the main loop: the backward branch (target below it) executed most often; the loop is target..branch
    bras = []
    for r in rows:
        m = re.search(r"BRA 0x([0-9a-f]+)", r["Source"])
        if m and int(m.group(1), 16) - base < r["off"]:
            bras.append((r, int(m.group(1), 16) - base))
    loop_bra, lo = max(bras, key=lambda t: t[0]["ex"])
    iters = loop_bra["ex"]
    loop = [r for r in rows if lo <= r["off"] <= loop_bra["off"]]
    def agg(rs):
        c = collections.Counter()
        for r in rs:
            c["all"] += int(r["Warp Stall Sampling (All Samples)"] or 0)
            for k in REASONS:
                c[k] += int(r.get(f"stall_{k}") or 0)
        return c
    a_all, a_loop = agg(rows), agg(loop)
    nloop = len(loop)
    print(f"{path.split('/')[-1]}: loop {nloop} instructions at +{lo:#x}..+{loop_bra['off']:#x}, executed {iters} "
          f"times (warp-level); samples: kernel {a_all['all']}, loop {a_loop['all']} "
          f"({a_loop['all'] / iters:.3f} a loop iteration = {32 * a_loop['all'] / iters:.0f} sampled cycles)")
    print("   loop stalls: " + ", ".join(f"{k} {100 * a_loop[k] / max(a_loop['all'], 1):.0f}%" for k in REASONS
                                        if a_loop[k]))
    outside = {k: a_all[k] - a_loop[k] for k in ("all",) + REASONS}
    print("   outside the loop: " + f"{outside['all']} samples: " + ", ".join(
        f"{k} {100 * outside[k] / max(outside['all'], 1):.0f}%" for k in REASONS if outside[k]))
    # the instructions with the most long_sb samples in the loop
    top = sorted(loop, key=lambda r: -int(r.get("stall_long_sb") or 0))[:6]
    print("   long_sb at: " + "; ".join(f"+{r['off'] - lo:#x} {r['Source'].strip()[:28]} {r.get('stall_long_sb')}"
                                       for r in top))
