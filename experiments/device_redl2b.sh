#!/bin/bash
# One device call (2026-12-01, thirteenth session): reductions around the L2's size, 1 MiB apart
# (experiments.red_beyond_l2), and the whole [timing] table again with its new field (experiments.microbench).
set -u
python3 -m experiments.red_beyond_l2 --out "$OUT/red_beyond_l2-2026-12-01b.json" 2>&1 | tee "$OUT/red.log"
python3 -m experiments.microbench --out "$OUT/microbench-2026-12-01b.json" --toml "$OUT/timing-2026-12-01b.toml" 2>&1 | tee "$OUT/microbench.log"
