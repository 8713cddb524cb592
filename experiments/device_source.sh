#!/usr/bin/env bash
# Diagnostic: Nsight Compute's per-instruction stall sampling (SourceCounters, WarpStateStats; --page source,
# SASS, CSV) of configs at given sizes, one profiled launch each (the second, after warm-up), clocks left alone.
#   OUT=/path experiments/device_source.sh KEY:M:N:K ...      -> $OUT/src_<i>.csv.gz, $OUT/src_index.txt
# Read with: python3 -m tools.bank_conflicts --source CSV KEY  (dispatch stalls by register bank).
# NCU_MODE=sections (experiments/device_sections.sh): the scheduler / warp-state / throughput sections instead;
# NCU_MODE=breakdown (experiments/device_l1break.sh): the breakdown of the L1TEX and SM throughputs.
# NCU_EXTRA: more ncu options for the source profile (e.g. "--sampling-interval 0": a sample every 32 cycles).
set -u
export CUPY_TF32=0
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
i=0
for spec in "$@"; do
  IFS=: read -r rung rest <<< "$spec"
  key="$rung:${rest%%:*}"; size=${rest#*:}; M=${size%%:*}; size=${size#*:}; N=${size%%:*}; K=${size#*:}
  i=$((i+1))
  if [ "${NCU_MODE:-source}" = breakdown ]; then    # experiments/device_l1break.sh
    echo "brk_$i.csv  $key  $M $N $K" | tee -a "$OUT/brk_index.txt"
    timeout 200 "$NCU" --clock-control none \
        --metrics breakdown:l1tex__throughput.avg.pct_of_peak_sustained_active,breakdown:sm__throughput.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,smsp__inst_executed.sum,sm__cycles_active.avg \
        --csv -k "regex:sgemm_$rung" --launch-skip 1 --launch-count 1 \
        python3 -m experiments.ncu_target "$key" "$M" "$N" "$K" > "$OUT/brk_$i.csv" 2> "$OUT/brk_$i.err"
    echo "exit $?" | tee -a "$OUT/brk_index.txt"
    continue
  fi
  if [ "${NCU_MODE:-source}" = sections ]; then     # experiments/device_sections.sh
    echo "sec_$i.csv  $key  $M $N $K" | tee -a "$OUT/sec_index.txt"
    timeout 200 "$NCU" --clock-control none --section SchedulerStats --section WarpStateStats --section LaunchStats \
        --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section MemoryWorkloadAnalysis \
        --metrics smsp__inst_issued.sum,smsp__inst_executed.sum,sm__cycles_elapsed.max,sm__cycles_active.avg,smsp__issue_active.avg.per_cycle_active,gpu__time_duration.sum,smsp__warps_eligible.avg.per_cycle_active,smsp__warps_active.avg.per_cycle_active \
        --page details --csv -k "regex:sgemm_$rung" --launch-skip 1 --launch-count 1 \
        python3 -m experiments.ncu_target "$key" "$M" "$N" "$K" > "$OUT/sec_$i.csv" 2> "$OUT/sec_$i.err"
    echo "exit $?" | tee -a "$OUT/sec_index.txt"
    continue
  fi
  echo "src_$i.csv.gz  $key  $M $N $K" | tee -a "$OUT/src_index.txt"
  timeout 200 "$NCU" --clock-control none ${NCU_EXTRA:-} --section SourceCounters --section WarpStateStats --page source \
      --print-source sass --csv -k "regex:sgemm_$rung" --launch-skip 1 --launch-count 1 \
      python3 -m experiments.ncu_target "$key" "$M" "$N" "$K" 2>&1 | gzip > "$OUT/src_$i.csv.gz"
  echo "exit ${PIPESTATUS[0]}" | tee -a "$OUT/src_index.txt"
done
