#!/usr/bin/env bash
# One call on the GPU machine: versions, the GPU tests, the sweeps named as arguments, a summary table.
#
#   OUT=/path experiments/device_run.sh [SWEEP ...] [ncu | ncu:SIZE ...]     (default sweeps: ladder blocks regtile)
#
# SWEEP is a name under experiments/sweeps/; "ncu" runs experiments/ncu_run.py (counters of every classic
# config at 2048^3), "ncu:SIZE" at SIZE^3 (to $OUT/ncu_SIZE.jsonl). Results go to $OUT/<sweep>.jsonl, $OUT/ncu.jsonl, logs to $OUT/*.log (OUT defaults
# to ./device-out). If experiments/results/<gpu key>/<sweep>.jsonl exists in the checkout and $OUT has
# none, it is copied to $OUT first, so the sweep resumes where an earlier call stopped.
# Environment: SWEEP_ARGS (extra arguments for every sweep, e.g. "--reps 10 --time-limit 400"),
# SKIP_TESTS=1 (no pytest), GPU_TESTS (the pytest arguments, default "tests/gpu"; e.g. a new rung's file with
# -k), PYTHON (default python3). The register-bank / stall diagnosis of a few configs: experiments/device_stalls.sh.
# Exit status: 0 when the tests passed and every sweep and ncu run finished; 1 otherwise.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
export CUPY_TF32=0              # cuBLAS must be true FP32: the reference is never TF32
sweeps=("$@")
[ ${#sweeps[@]} -eq 0 ] && sweeps=(ladder blocks regtile)
fail=0
t0=$SECONDS

echo "== versions"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv
command -v ncu >/dev/null && ncu --version | tail -n 1
$PY - <<'EOF' || { echo "no usable GPU: stopping"; exit 1; }
import platform, numpy
from gpu import detect_device, device_spec
d = detect_device(); s = device_spec(d)
print(f"python {platform.python_version()}, numpy {numpy.__version__}, cupy {d.cupy_version}, "
      f"driver {d.driver_version}, runtime {d.runtime_version}, nvrtc {d.nvrtc_version}")
print(f"device {d.name} (CC {d.compute_capability}, {d.sm_count} SMs, {d.clock_hz/1e9:.2f} GHz, "
      f"L2 {d.l2_bytes/2**20:.0f} MiB) -> spec {s.key}: {s.name}")
EOF
KEY=$($PY -c 'from gpu import device_spec; print(device_spec().key)')

if [ "${SKIP_TESTS:-0}" != 1 ]; then
  echo "== GPU tests ($((SECONDS - t0)) s)"
  # shellcheck disable=SC2086
  $PY -m pytest ${GPU_TESTS:-tests/gpu} -q -rs -p no:cacheprovider >"$OUT/tests.log" 2>&1
  rc=$?
  tail -n 25 "$OUT/tests.log"
  [ $rc -ne 0 ] && { echo "GPU tests FAILED (exit $rc), see tests.log"; fail=1; }
fi

for s in "${sweeps[@]}"; do
  echo "== $s ($((SECONDS - t0)) s)"
  if [ "$s" = ncu ]; then
    $PY -m experiments.ncu_run --out "$OUT/ncu.jsonl" 2>&1 | tee -a "$OUT/ncu.log"
    [ "${PIPESTATUS[0]}" -ne 0 ] && { echo "ncu run FAILED"; fail=1; }
    continue
  fi
  if [ "${s%%:*}" = ncu ]; then
    n=${s#ncu:}
    $PY -m experiments.ncu_run --size "$n" --out "$OUT/ncu_$n.jsonl" 2>&1 | tee -a "$OUT/ncu_$n.log"
    [ "${PIPESTATUS[0]}" -ne 0 ] && { echo "ncu run at $n FAILED"; fail=1; }
    continue
  fi
  prev="experiments/results/$KEY/$s.jsonl"
  if [ -f "$prev" ] && [ ! -f "$OUT/$s.jsonl" ]; then
    cp "$prev" "$OUT/$s.jsonl" && echo "resuming from $prev ($(wc -l <"$prev") rows)"
  fi
  # progress goes to the log in full; the console shows every 50th line and the end
  # shellcheck disable=SC2086
  $PY -m experiments.sweep "$s" --out "$OUT/$s.jsonl" ${SWEEP_ARGS:-} 2>&1 | tee -a "$OUT/sweeps.log" \
    | awk 'NR % 50 == 1 || /error|FAILED|wrong_result|launch_error|compile_error|time limit|rows written|precompiled|sweep /'
  [ "${PIPESTATUS[0]}" -ne 0 ] && { echo "sweep $s FAILED"; fail=1; }
done

echo "== summary ($((SECONDS - t0)) s)"
files=()
for s in "${sweeps[@]}"; do [ "${s%%:*}" != ncu ] && [ -f "$OUT/$s.jsonl" ] && files+=("$OUT/$s.jsonl"); done
[ ${#files[@]} -gt 0 ] && $PY -m experiments.sweep --summary "${files[@]}"
echo "exit $fail after $((SECONDS - t0)) s"
exit $fail
