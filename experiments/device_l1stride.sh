#!/usr/bin/env bash
# One device call (seventeenth session, 2026-12-02; diagnostic): experiments/l1_stride.py -> $OUT/l1_stride.json; with PAIRS=1 experiments/l1_pairs.py -> $OUT/l1_pairs.json
set -u
OUT=${OUT:-$PWD/device-out}
[ "${PAIRS:-0}" = 1 ] || python3 -m experiments.l1_stride --out "$OUT/l1_stride.json" > "$OUT/l1_stride.log" 2>&1
[ "${PAIRS:-0}" = 1 ] || { echo "exit $?"; tail -n 3 "$OUT/l1_stride.log"; }
if [ "${PAIRS:-0}" = 1 ]; then
  python3 -m experiments.l1_pairs --out "$OUT/l1_pairs.json" > "$OUT/l1_pairs.log" 2>&1
  echo "pairs exit $?"; tail -n 2 "$OUT/l1_pairs.log"
fi
