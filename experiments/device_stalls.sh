#!/usr/bin/env bash
# Diagnostic (issue 9): why do our best FP32 kernels reach ~87 % of cuBLAS on the H200? Nsight Compute's
# warp-state, scheduler, compute-workload, launch and occupancy sections for cuBLAS and our fastest configs
# at 4096^3 (one profiled launch each, clocks left alone). Text reports under $OUT/stalls/.
#   OUT=/path experiments/device_stalls.sh [CONFIG_KEY ...]   (default: cuBLAS and the rung 06-08 configs below;
#   the rung 09/10 diagnosis of 2026-11-30 ran it with their classic key and rung 08's same geometry)
set -u
export CUPY_TF32=0
F="$OUT/stalls"; mkdir -p "$F"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
SECTIONS="--metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio,smsp__inst_executed.sum,sm__cycles_elapsed.avg.per_second --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section LaunchStats --section Occupancy --section SpeedOfLight --section InstructionStats"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$F/smi.txt" 2>&1
"$NCU" --list-sections > "$F/sections.txt" 2>&1
i=0
keys=("$@")
[ ${#keys[@]} -eq 0 ] && keys=("00:" "08:BM=128,BN=256,BK=8,WM=64,WN=64,WNITER=4,TM=8,TN=4,SWZ=1,SPLITK=1,STAGES=4"
                                "06:BM=128,BN=256,BK=16,TM=16,TN=4"
                                "07:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=4,TM=8,TN=4,SWZ=1,SPLITK=1")
for key in "${keys[@]}"; do
  # cuBLAS may launch more than one kernel: profile its first two launches; a ladder kernel: its second (after warm-up)
  if [ "${key%%:*}" = 00 ]; then kre="regex:."; skip=0; cnt=2; else kre="regex:sgemm_${key%%:*}"; skip=1; cnt=1; fi
  i=$((i+1))
  echo "== $key" | tee -a "$F/index.txt"
  timeout 150 "$NCU" --clock-control none $SECTIONS -k "$kre" --launch-skip "$skip" --launch-count "$cnt" \
     python3 -m experiments.ncu_target "$key" 4096 4096 4096 > "$F/ncu_$i.txt" 2>&1
  echo "exit $?" | tee -a "$F/index.txt"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv >> "$F/smi.txt" 2>&1
tar czf "$OUT/stalls.tar.gz" -C "$OUT" stalls && rm -rf "$F"
