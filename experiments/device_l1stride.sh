#!/usr/bin/env bash
# One device call (seventeenth session, 2026-12-02; diagnostic): experiments/l1_stride.py -> $OUT/l1_stride.json
set -u
OUT=${OUT:-$PWD/device-out}
python3 -m experiments.l1_stride --out "$OUT/l1_stride.json" > "$OUT/l1_stride.log" 2>&1
echo "exit $?"; tail -n 3 "$OUT/l1_stride.log"
