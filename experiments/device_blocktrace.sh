#!/usr/bin/env bash
# One device call (nineteenth session, 2026-12-02): experiments/block_trace.py - which SM ran each block of real GEMM
# launches of more than one wave, and when - to $OUT/block_trace-2026-12-02.json.gz.
set -u
OUT=${OUT:-$PWD/device-out}
python3 -m experiments.block_trace --out "$OUT/block_trace-2026-12-02.json" 2>&1 | tee "$OUT/block_trace.log"
rc=${PIPESTATUS[0]}
gzip -9 "$OUT/block_trace-2026-12-02.json"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> "$OUT/block_trace.log"
exit $rc
