#!/bin/bash
# One device call (2026-12-01, fourteenth session): code fetch under the sweeps' timing protocol (relaunch, another
# kernel between, the L2 flush) against the number of SMs (experiments.icache_flush).
set -u
python3 -m experiments.icache_flush --out "$OUT/icache_flush-2026-12-01.json" 2>&1 | tee "$OUT/icache_flush.log"
