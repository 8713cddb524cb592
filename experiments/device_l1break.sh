#!/usr/bin/env bash
# Diagnostic (sixteenth session, 2026-12-02): where the L1TEX pipe's time goes when rungs 11/12 copy B four bytes at a
# time (N % 4 != 0: the element-path loop) at a skinny N, against their 16-byte copies. Nsight Compute's breakdown of
# l1tex__throughput (every sub-unit's share of its peak) and of sm__throughput, one profiled launch each (the second,
# after warm-up), clocks left alone; then the per-instruction stall sampling (SourceCounters) of two of them.
#   OUT=/path experiments/device_l1break.sh KEY:M:N:K ...   -> $OUT/brk_<i>.csv, $OUT/brk_index.txt
set -u
export CUPY_TF32=0
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
i=0
for spec in "$@"; do
  IFS=: read -r rung rest <<< "$spec"
  key="$rung:${rest%%:*}"; size=${rest#*:}; M=${size%%:*}; size=${size#*:}; N=${size%%:*}; K=${size#*:}
  i=$((i+1))
  echo "brk_$i.csv  $key  $M $N $K" | tee -a "$OUT/brk_index.txt"
  timeout 200 "$NCU" --clock-control none \
      --metrics breakdown:l1tex__throughput.avg.pct_of_peak_sustained_active,breakdown:sm__throughput.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,smsp__inst_executed.sum,sm__cycles_active.avg \
      --csv -k "regex:sgemm_$rung" --launch-skip 1 --launch-count 1 \
      python3 -m experiments.ncu_target "$key" "$M" "$N" "$K" > "$OUT/brk_$i.csv" 2> "$OUT/brk_$i.err"
  echo "exit $?" | tee -a "$OUT/brk_index.txt"
done
