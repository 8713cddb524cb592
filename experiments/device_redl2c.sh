#!/bin/bash
# One device call (2026-12-01, thirteenth session): reductions around the L2's size in address order and in the
# split-K epilogue's tile order (experiments.red_beyond_l2).
set -u
python3 -m experiments.red_beyond_l2 --out "$OUT/red_beyond_l2-2026-12-01c.json" 2>&1 | tee "$OUT/red.log"
