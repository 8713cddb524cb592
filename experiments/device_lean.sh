#!/usr/bin/env bash
# One call on the H200 (third session of 2026-11-30, issues 8 and 9) that measures what had its predictions
# committed first (experiments/predictions/lean.jsonl, ladder_10.jsonl, edge_val4.jsonl):
#   0. the GPU tests of rung 10 (awkward sizes, misaligned pointers, occupancy against the driver)
#   1. sweep lean: rung 10 (branch-free pipeline) and rung 08's fastest geometry, the issue-9 sizes
#   2. the ladder's rung 10 rows: the sweep resumes from the shipped ladder.jsonl, so only the new rows run
#      (cuBLAS timed again in this run at each of their sizes)
#   3. sweep edge_val4: edge shapes, validation set 4 (issue 8)
#   4. Nsight Compute warp-state and instruction sections of rung 10's classic config and rung 08's same
#      geometry at 4096^3, while time is left
# SWEEPS (environment) replaces the sweep list. Everything under /tmp/lean, packed into $OUT/lean.tar.gz.
# Usage: OUT=/path bash experiments/device_lean.sh
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$PWD/device-out}
F=/tmp/lean
mkdir -p "$OUT" "$F"
export CUPY_TF32=0 PYTHONUNBUFFERED=1
t0=$SECONDS
pack() { tar -C /tmp -czf "$OUT/lean.tar.gz" lean; }
trap pack EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$F/smi.txt" 2>&1
cp experiments/results/h200/ladder.jsonl "$F/ladder.jsonl"
echo "== GPU tests of rungs 07-09 ($((SECONDS - t0)) s)"
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_warptile_gpu.py -k "10 or rungs_08_to_10" >"$F/gpu_tests.log" 2>&1
echo "gpu tests exit $?"; tail -n 3 "$F/gpu_tests.log"
for s in ${SWEEPS-lean ladder edge_val4}; do
  echo "== $s ($((SECONDS - t0)) s)"
  timeout 300 python3 -m experiments.sweep "$s" --out "$F/$s.jsonl" --time-limit 260 >"$F/$s.log" 2>&1
  echo "$s exit $?"; grep -E "rows written|time limit|error" "$F/$s.log" | tail -n 3
done
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
SECTIONS="--metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio,smsp__inst_executed.sum,sm__cycles_elapsed.avg.per_second --section WarpStateStats --section SchedulerStats --section InstructionStats --section SpeedOfLight"
i=0
for spec in "10:BM=128,BN=256,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=3|regex:sgemm_10" \
            "08:BM=128,BN=256,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=3|regex:sgemm_08"; do
  [ $((SECONDS - t0)) -lt 480 ] || break
  IFS='|' read -r key kre <<<"$spec"
  i=$((i+1))
  echo "== ncu $key" | tee -a "$F/ncu_index.txt"
  timeout 90 "$NCU" --clock-control none $SECTIONS -k "$kre" --launch-skip 1 --launch-count 1 \
     python3 -m experiments.ncu_target "$key" 4096 4096 4096 > "$F/ncu_stalls_$i.txt" 2>&1
  echo "exit $?" | tee -a "$F/ncu_index.txt"
done
echo "== summary ($((SECONDS - t0)) s)"
python3 -m experiments.sweep --summary "$F/lean.jsonl" 2>&1 | tail -n 60
