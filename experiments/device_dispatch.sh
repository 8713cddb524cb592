#!/usr/bin/env bash
# One device call (sixteenth session, 2026-12-02): experiments/dispatch.py - which SM each block of a one-wave launch
# runs on and when it starts - to $OUT/dispatch-2026-12-02.json.
set -u
OUT=${OUT:-$PWD/device-out}
python3 -m experiments.dispatch --out "$OUT/dispatch-2026-12-02.json" 2>&1 | tee "$OUT/dispatch.log"
