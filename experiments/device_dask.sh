#!/usr/bin/env bash
# One call on a machine with several GPUs: one sweep run three ways, then a comparison.
#
#   OUT=/path experiments/device_dask.sh [SWEEP]        (default sweep: multi, 312 rows)
#
# 1. one GPU:      python -m experiments.sweep SWEEP                      (CUDA_VISIBLE_DEVICES=0)
# 2. all GPUs:     python -m experiments.sweep SWEEP --gpus all           (dask_cuda.LocalCUDACluster)
# 3. a scheduler:  dask scheduler + one dask-cuda-worker process per GPU, then
#                  python -m experiments.sweep SWEEP --scheduler tcp://127.0.0.1:8786
# Each run writes its own file ($OUT/one_gpu.jsonl, all_gpus.jsonl, scheduler.jsonl) and log, and each
# starts with an empty CuPy kernel cache of its own (every run compiles cold: the wall times compare).
# The comparison ($OUT/compare.txt) checks the same set of (config, size) rows in all three, every row
# verified, none twice, and which devices measured them; it gives the wall times and the ratio of each
# several-GPU run to the one-GPU run (target <= 0.6 on two GPUs).
# Wheels: Dask is not on the GPU machine; the call carries .whl (see README, "Many GPUs and hosts").
# Exit status: 0 when all three runs finished and the comparison passed; 1 otherwise.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
set -u
cd "$(dirname "$0")/.." || exit 1
export PYTHONPATH=$PWD:/tmp/site
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1   # never NVLink multicast
export PYTHONUNBUFFERED=1 CUPY_TF32=0
export DASK_DISTRIBUTED__WORKER__DAEMON=False        # workers may start compile processes
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
SWEEP=${1:-multi}
PORT=${DASK_PORT:-8786}
fail=0

echo "== versions"
nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,clocks.sm --format=csv
NGPU=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
$PY - <<'EOF'
import platform, dask, distributed
print(f"python {platform.python_version()}, dask {dask.__version__}, distributed {distributed.__version__}")
try:
    import dask_cuda
    print(f"dask_cuda {dask_cuda.__version__}")
except Exception as exc:  # the sweep falls back to plain Dask workers, one per GPU
    print(f"dask_cuda does not import: {type(exc).__name__}: {exc}")
EOF
echo "$NGPU GPUs"

run() {  # name, time limit (s), then the command (or the function sched); start/end times to /tmp/<name>.time
  local name=$1 limit=$2; shift 2
  echo "== $name: $*"
  local t0; t0=$(date +%s.%N)
  if [ "$1" = sched ]; then LIMIT=$limit "$@" >"$OUT/$name.log" 2>&1
  else CUPY_CACHE_DIR=/tmp/cupy-cache-$name timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  fi
  local rc=$?
  local t1; t1=$(date +%s.%N)
  echo "$t0 $t1" >"/tmp/$name.time"
  grep -E "precompiled|starting|sweep |time limit|error|Error|FAILED|lost|note|worker " "$OUT/$name.log" | head -20
  echo "$name: exit $rc, $(awk "BEGIN {printf \"%.1f\", $t1 - $t0}") s"
  [ $rc -ne 0 ] && fail=1
}

# time limits: the whole script stays under 10 minutes even when a run hangs
run one_gpu 270 env CUDA_VISIBLE_DEVICES=0 $PY -m experiments.sweep "$SWEEP" --out "$OUT/one_gpu.jsonl"
run all_gpus 150 $PY -m experiments.sweep "$SWEEP" --gpus all --out "$OUT/all_gpus.jsonl"

# 3. by hand: a scheduler and one dask-cuda-worker per GPU (plain `dask worker`s pinned by
#    CUDA_VISIBLE_DEVICES where dask_cuda does not import), then the sweep attaches to the scheduler
sched() {
  $PY -m distributed.cli.dask_scheduler --port "$PORT" --no-dashboard >>"$OUT/cluster.log" 2>&1 &
  SCHED_PID=$!
  if $PY -c 'import dask_cuda' 2>/dev/null; then
    CUPY_CACHE_DIR=/tmp/cupy-cache-scheduler $PY -c 'import sys; from dask_cuda.cli import worker; sys.exit(worker())' \
      "tcp://127.0.0.1:$PORT" --nthreads 1 --no-dashboard >>"$OUT/cluster.log" 2>&1 &
    WORKER_PIDS=$!
  else
    WORKER_PIDS=""
    for i in $(seq 0 $((NGPU - 1))); do
      CUDA_VISIBLE_DEVICES=$i CUPY_CACHE_DIR=/tmp/cupy-cache-scheduler $PY -m distributed.cli.dask_worker \
        "tcp://127.0.0.1:$PORT" --nthreads 1 --name "gpu$i" --no-dashboard >>"$OUT/cluster.log" 2>&1 &
      WORKER_PIDS="$WORKER_PIDS $!"
    done
  fi
  timeout "$LIMIT" $PY -m experiments.sweep "$SWEEP" --scheduler "tcp://127.0.0.1:$PORT" --min-workers "$NGPU" \
    --out "$OUT/scheduler.jsonl"
}
run scheduler 150 sched
# shellcheck disable=SC2086
kill $WORKER_PIDS 2>/dev/null; sleep 2; kill "$SCHED_PID" 2>/dev/null

echo "== comparison"
$PY - "$OUT" "$SWEEP" "$NGPU" <<'EOF' | tee "$OUT/compare.txt"
import json, statistics, sys
from pathlib import Path
from experiments.sweep import check_row, load_sweep, read_results
from model.spec import load_gpu
out, name, ngpu = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
runs = ("one_gpu", "all_gpus", "scheduler")
res, ok = {}, True
for r in runs:
    rows = read_results(out / f"{r}.jsonl").rows if (out / f"{r}.jsonl").exists() else []
    t0, t1 = map(float, Path(f"/tmp/{r}.time").read_text().split())
    keys = [(x["config_key"], x["M"], x["N"], x["K"]) for x in rows]
    devs = {}
    for x in rows:
        d = f"{x['gpu'].get('device_index', '?')} {x['gpu'].get('uuid') or ''}".strip()
        devs[d] = devs.get(d, 0) + 1
    res[r] = {"rows": len(rows), "unique": len(set(keys)), "keys": set(keys), "wall_s": t1 - t0,
              "ok": sum(x["status"] == "ok" for x in rows), "verified": sum(x["verified"] is True for x in rows),
              "bad_rows": sum(1 for x in rows if check_row(x)), "devices": devs,
              "gflops": {k: x["flop_per_s"] / 1e9 for k, x in zip(keys, rows) if x["status"] == "ok"}}
key = next((x["gpu"]["key"] for r in runs for x in read_results(out / f"{r}.jsonl").rows[:1]), "h200")
want = {t.key for t in load_sweep(name).tasks(load_gpu(key))[0]}
print(f"sweep {name}: {len(want)} rows")
print(f"{'run':<10} {'rows':>5} {'unique':>6} {'ok':>5} {'verified':>8} {'bad':>4} {'wall s':>7} {'ratio':>6}  devices (index uuid: rows)")
base = res["one_gpu"]["wall_s"]
for r in runs:
    x = res[r]
    print(f"{r:<10} {x['rows']:>5} {x['unique']:>6} {x['ok']:>5} {x['verified']:>8} {x['bad_rows']:>4} "
          f"{x['wall_s']:7.1f} {x['wall_s'] / base:6.2f}  {x['devices']}")
    if x["keys"] != want or x["unique"] != x["rows"] or x["verified"] != x["rows"] or x["bad_rows"]:
        print(f"  {r}: FAILED: missing {len(want - x['keys'])}, extra {len(x['keys'] - want)}, "
              f"duplicated {x['rows'] - x['unique']}, not verified {x['rows'] - x['verified']}, bad {x['bad_rows']}")
        ok = False
for r in runs[1:]:
    common = set(res[r]["gflops"]) & set(res["one_gpu"]["gflops"])
    q = [res[r]["gflops"][k] / res["one_gpu"]["gflops"][k] for k in common]
    if q:
        print(f"{r} vs one_gpu: GFLOP/s ratio per row median {statistics.median(q):.3f} "
              f"(10th-90th percentile {statistics.quantiles(q, n=10)[0]:.3f}-{statistics.quantiles(q, n=10)[-1]:.3f})")
    ratio = res[r]["wall_s"] / base
    target = 0.6 if ngpu == 2 else 1.2 / ngpu
    print(f"{r}: {ratio:.2f} x the one-GPU wall time on {ngpu} GPUs (target <= {target:.2f}): "
          + ("PASS" if ratio <= target else "FAIL"))
    ok &= ratio <= target
print("comparison " + ("PASSED" if ok else "FAILED"))
sys.exit(0 if ok else 1)
EOF
[ "${PIPESTATUS[0]}" -ne 0 ] && fail=1
echo "exit $fail"
exit $fail
