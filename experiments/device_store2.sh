#!/bin/bash
# One device call (2026-12-01, fifteenth session): experiments.store_patterns again, on all SMs and on four (the first
# run, store_patterns-2026-12-01.json, ran on all SMs only, where the L2 paces the stores).
set -u
python3 -m experiments.store_patterns --out "$OUT/store_patterns-2026-12-01b.json" 2>&1 | tee "$OUT/store_patterns.log"
