"""Per region of the SASS (by address, 16 KB bins and the region map of the interior path): instructions executed and
stall samples (all, no_inst) from an ncu SourceCounters CSV."""
import csv, gzip, io, sys, collections
path = sys.argv[1]
txt = gzip.open(path, 'rt').read().splitlines()
start = next(i for i, l in enumerate(txt) if l.startswith('"Address"'))
rd = csv.DictReader(io.StringIO("\n".join(txt[start:])))
rows = list(rd)
base = int(rows[0]['Address'], 16)
# region boundaries (KB) of the classic config: P1 0-2.4 | element 2.4-82.8 | P2 82.8-86.6 | L 86.6-121.9 | D 121.9-157.4 | E 157.4-194.4
bounds = [(0, 2.4, 'P1'), (2.4, 82.8, 'elem'), (82.8, 86.6, 'P2'), (86.6, 121.9, 'L'), (121.9, 157.4, 'D'), (157.4, 200, 'E')]
agg = collections.defaultdict(lambda: [0, 0, 0, 0])
for r in rows:
    off = (int(r['Address'], 16) - base) / 1024
    reg = next(n for a, b, n in bounds if a <= off < b)
    ex = int(r['Instructions Executed'] or 0)
    agg[reg][0] += ex
    agg[reg][1] += 1 if ex > 0 else 0
    agg[reg][2] += int(r['Warp Stall Sampling (All Samples)'] or 0)
    agg[reg][3] += int(r['stall_no_inst'] or 0)
tot = sum(v[2] for v in agg.values())
print(path.split('/')[-1], "samples", tot)
for a, b, n in bounds:
    v = agg[n]
    print("  %-5s %5.1f-%5.1f KB  executed %9d (PCs run %5d = %5.1f KB)  samples %6d  no_inst %6d (%.0f%%)" % (n, a, b, v[0], v[1], v[1] * 16 / 1024, v[2], v[3], 100 * v[3] / max(tot, 1)))
