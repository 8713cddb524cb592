#!/usr/bin/env bash
# Model-guided tuning on the GPU, scored against a full sweep (issue 10). One call:
#
#   OUT=/path experiments/device_tune.sh
#
# 1. python -m experiments.tune at three sizes no sweep has measured (3584^3 square, 256x8192x4096 skinny,
#    8192x8192x128 small K), budget 8, over the configs of experiments/sweeps/tune_full.toml (rung 06)
#    -> $OUT/tune.jsonl (each row with the model's prediction), $OUT/tune.log;
# 2. the full sweep of that space at the same sizes (981 rows, about 1-2 minutes) -> $OUT/tune_full.jsonl;
# 3. the score: per size, the tune's winner against the full sweep's best -> $OUT/score.txt, score.json;
# 4. if kernel_tuner is importable: the model as a Kernel Tuner strategy, live through its CuPy backend
#    at 3584^3 (budget 8) -> $OUT/kt_live.json (optional; its failure does not fail the script).
# The tune runs before the full sweep, so it never sees the sweep's rows. Both resume from files in $OUT.
# Exit status: 0 when every step ran and every size's winner is within 3 % of the full sweep's best.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
export CUPY_TF32=0
fail=0
t0=$SECONDS
for size in "3584 3584 3584" "256 8192 4096" "8192 8192 128"; do
  echo "== tune $size ($((SECONDS - t0)) s)"
  # shellcheck disable=SC2086
  $PY -m experiments.tune --size $size --rungs 6 --sweep tune_full --budget 8 --out "$OUT/tune.jsonl" 2>&1 \
    | tee -a "$OUT/tune.log"
  [ "${PIPESTATUS[0]}" -ne 0 ] && { echo "tune $size FAILED"; fail=1; }
done
echo "== full sweep tune_full ($((SECONDS - t0)) s)"
$PY -m experiments.sweep tune_full --out "$OUT/tune_full.jsonl" 2>&1 | tee -a "$OUT/tune_full.log" \
  | awk '/^\[/ { n++; if (n % 100 == 0) print; next } { print }'
[ "${PIPESTATUS[0]}" -ne 0 ] && { echo "full sweep FAILED"; fail=1; }
echo "== score ($((SECONDS - t0)) s)"
$PY -m experiments.score_tune "$OUT/tune.jsonl" "$OUT/tune_full.jsonl" | tee "$OUT/score.txt"
[ "${PIPESTATUS[0]}" -ne 0 ] && fail=1
$PY -m experiments.score_tune "$OUT/tune.jsonl" "$OUT/tune_full.jsonl" --json >"$OUT/score.json" 2>/dev/null
if $PY -c "import kernel_tuner" 2>/dev/null; then
  echo "== Kernel Tuner live, model strategy ($((SECONDS - t0)) s)"
  timeout 300 $PY -m experiments.kerneltuner live --size 3584 3584 3584 --rung 6 --budget 8 \
    --cache "$OUT/kt_live.json" >"$OUT/kt_live.log" 2>&1
  echo "kerneltuner live: exit $? (log: kt_live.log)"; tail -n 3 "$OUT/kt_live.log"
else
  echo "== Kernel Tuner not installed: live strategy run skipped"
fi
echo "== done in $((SECONDS - t0)) s, exit $fail"
exit $fail
