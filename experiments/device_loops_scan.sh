#!/bin/bash
# One device call (2026-12-01, fourteenth session): experiments.icache_loops over the bytes jumped over (0-112 KB) and
# the loops' size (24, 30, 35 KB), to find which code a launch finds still in the SM's instruction cache.
set -u
python3 - <<'PY' 2>&1 | tee "$OUT/icache_loops_scan.log"
import json, os
import experiments.icache_loops as m
m.CASES = tuple((nb, ns) for nb in (1536, 1920, 2240) for ns in (0, 1024, 2048, 3072, 4096, 5120, 6144, 7168))
m.PROTOCOLS = ("l2_flush",)
d = m.run(4)
for r in d["rows"]:
    r.pop("stamps")          # the medians only: 24 cases
open(os.environ["OUT"] + "/icache_loops_scan-2026-12-01.json", "w").write(json.dumps(d) + "\n")
PY
