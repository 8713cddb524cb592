#!/usr/bin/env bash
# One call on the H200 that measures everything whose predictions were committed first (2026-11-30):
#   1. GPU tests of rungs 07/08 (their kernels changed after the last GPU test run)
#   2. sweeps edge_val, warptile, splitk, ladder (resumes: only the new rungs' rows), each <= its time limit
#   3. experiments.residency (forced residency ladder at 2048^3)
#   4. experiments/device_tune.sh (tune at three new sizes, then the full sweep of that space, scored)
#   5. ncu counters of the new rungs' classic configs at 2048^3 (if time is left)
# Everything is written under /tmp/final and packed into $OUT/final.tar.gz (the call returns at most 8
# files); the console gets a summary. Usage: OUT=/path bash experiments/device_final.sh
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$PWD/device-out}
F=/tmp/final
mkdir -p "$OUT" "$F"
export CUPY_TF32=0 PYTHONUNBUFFERED=1
t0=$SECONDS
pack() { tar -C /tmp -czf "$OUT/final.tar.gz" final; }
trap pack EXIT
echo "== GPU tests, rungs 07/08"
timeout 150 python3 -m pytest tests/gpu/test_warptile_gpu.py -q -rs -n 8 -p no:cacheprovider >"$F/gpu_tests_warptile.log" 2>&1
echo "tests exit $? ($((SECONDS - t0)) s)"; tail -n 2 "$F/gpu_tests_warptile.log"
for s in edge_val warptile splitk ladder; do
  prev="experiments/results/h200/$s.jsonl"
  [ -f "$prev" ] && cp "$prev" "$F/$s.jsonl"
  echo "== $s ($((SECONDS - t0)) s)"
  timeout 200 python3 -m experiments.sweep "$s" --out "$F/$s.jsonl" --time-limit 150 >"$F/$s.log" 2>&1
  echo "$s exit $?"; grep -E "rows written|time limit|error" "$F/$s.log" | tail -n 3
done
echo "== residency ($((SECONDS - t0)) s)"
timeout 120 python3 -m experiments.residency --out "$F/residency.jsonl" >"$F/residency.log" 2>&1
echo "residency exit $?"; tail -n 3 "$F/residency.log"
echo "== tune ($((SECONDS - t0)) s)"
OUT=$F/tune timeout 200 bash experiments/device_tune.sh >"$F/tune.log" 2>&1
echo "tune exit $?"; tail -n 12 "$F/tune.log"
left=$((540 - (SECONDS - t0)))
if [ $left -gt 40 ]; then
  echo "== ncu, new rungs' classic configs ($((SECONDS - t0)) s, $left s left)"
  KEYS=$(python3 -c "from model.registry import classic_configs; print(' '.join(c.key for c in classic_configs() if c.rung >= 7))")
  # shellcheck disable=SC2086
  timeout $((left - 10)) python3 -m experiments.ncu_run --out "$F/ncu.jsonl" --configs $KEYS >"$F/ncu.log" 2>&1
  echo "ncu exit $?"; tail -n 3 "$F/ncu.log"
fi
echo "== summary ($((SECONDS - t0)) s)"
python3 -m experiments.sweep --summary "$F"/edge_val.jsonl "$F"/warptile.jsonl "$F"/splitk.jsonl "$F"/ladder.jsonl 2>&1 | tail -n 40
