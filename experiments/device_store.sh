#!/bin/bash
# One device call (2026-12-01, fifteenth session): experiments.store_patterns (what a warp-level global store costs the
# SM, 16-byte against 4-byte lanes, by lines and sectors) and the development sweep misaligned22 (predictions committed
# first), after edge_val21's rows at 123x397x65.
set -u
python3 -m experiments.store_patterns --out "$OUT/store_patterns-2026-12-01.json" 2>&1 | tee "$OUT/store_patterns.log"
SKIP_TESTS=1 bash experiments/device_run.sh misaligned22 2>&1 | tail -16
