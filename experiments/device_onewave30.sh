#!/usr/bin/env bash
# One device call (sixteenth session, 2026-12-02; development): the onewave30 sweep with the L2 flushed before every
# timed launch (the protocol: $OUT/onewave30.jsonl) and then warm ($OUT/warm/onewave30.jsonl, --l2-policy warm).
set -u
OUT=${OUT:-$PWD/device-out}
SKIP_TESTS=1 OUT=$OUT bash experiments/device_run.sh onewave30 > "$OUT/sweeps.log" 2>&1
mkdir -p "$OUT/warm"
SKIP_TESTS=1 OUT=$OUT/warm SWEEP_ARGS="--l2-policy warm" bash experiments/device_run.sh onewave30 > "$OUT/warm/sweeps.log" 2>&1
tail -n 6 "$OUT/sweeps.log" "$OUT/warm/sweeps.log"
