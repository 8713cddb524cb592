#!/usr/bin/env bash
# One call on the H200 (second session of 2026-11-30) that measures what had its predictions committed first:
#   1. sweeps warptile2 (rungs 07/08, second grid) and edge_val2 (edge shapes, validation 2)
#   2. ncu counters of every rung's classic configs at 3072^3, then 4096^3 while time is left (their L2 and
#      DRAM bytes predicted first: experiments/predictions/ncu_traffic.jsonl)
# SWEEPS and NCU_SIZES (environment) replace the lists.
# Everything under /tmp/final2, packed into $OUT/final2.tar.gz (the call returns at most 8 files).
# Usage: OUT=/path bash experiments/device_final2.sh
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$PWD/device-out}
F=/tmp/final2
mkdir -p "$OUT" "$F"
export CUPY_TF32=0 PYTHONUNBUFFERED=1
t0=$SECONDS
pack() { tar -C /tmp -czf "$OUT/final2.tar.gz" final2; }
trap pack EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$F/smi.txt" 2>&1
for s in ${SWEEPS-warptile2 edge_val2}; do
  echo "== $s ($((SECONDS - t0)) s)"
  timeout 280 python3 -m experiments.sweep "$s" --out "$F/$s.jsonl" --time-limit 240 >"$F/$s.log" 2>&1
  echo "$s exit $?"; grep -E "rows written|time limit|error" "$F/$s.log" | tail -n 3
done
for n in ${NCU_SIZES-3072 4096}; do
  left=$((560 - (SECONDS - t0)))
  [ $left -gt 60 ] || break
  echo "== ncu, classic configs at ${n}^3 ($((SECONDS - t0)) s, $left s left)"
  timeout $((left - 10)) python3 -m experiments.ncu_run --size "$n" --out "$F/ncu_$n.jsonl" >"$F/ncu_$n.log" 2>&1
  echo "ncu exit $?"; tail -n 3 "$F/ncu_$n.log"
done
echo "== summary ($((SECONDS - t0)) s)"
ls "$F"/*.jsonl >/dev/null 2>&1 && python3 -m experiments.sweep --summary $(ls "$F"/*.jsonl | grep -v ncu_) 2>&1 | tail -n 40
