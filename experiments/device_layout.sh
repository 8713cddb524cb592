#!/bin/bash
# One device call (2026-12-01, fifteenth session): experiments.icache_layout - which code a launch finds still in the
# SM's instruction cache, by the bytes jumped over before two loops (0-128 KB, 8 KB apart), the loops' size (24, 30,
# 35 KB), one loop against two, and code jumped over after the loops.
set -u
python3 -m experiments.icache_layout --out "$OUT/icache_layout-2026-12-01.json" 2>&1 | tee "$OUT/icache_layout.log"
