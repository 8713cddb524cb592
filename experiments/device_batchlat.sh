#!/usr/bin/env bash
# One device call (eighteenth session, 2026-12-02; a microbenchmark): experiments/batch_latency.py ->
# $OUT/batch_latency_<set>.json.gz (BATCH_SET=pitches: the DRAM spread by row pitch; default: the main cases)
set -u
OUT=${OUT:-$PWD/device-out}
S=${BATCH_SET:-main}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv
BATCH_SET=$S python3 -m experiments.batch_latency --out "$OUT/batch_latency_$S.json" > "$OUT/batch_latency_$S.log" 2>&1
echo "exit $?"; gzip -9 "$OUT/batch_latency_$S.json"; cat "$OUT/batch_latency_$S.log"
