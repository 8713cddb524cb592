#!/usr/bin/env bash
# One device call (eighteenth session, 2026-12-02; a microbenchmark): experiments/batch_latency.py -> $OUT/batch_latency.json
set -u
OUT=${OUT:-$PWD/device-out}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv
python3 -m experiments.batch_latency --out "$OUT/batch_latency.json" > "$OUT/batch_latency.log" 2>&1; gzip -9 "$OUT/batch_latency.json"
echo "exit $?"; cat "$OUT/batch_latency.log"
