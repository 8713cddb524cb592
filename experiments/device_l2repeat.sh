#!/usr/bin/env bash
# One device call (eighteenth session, 2026-12-02; diagnostic, issue 8's L2 bytes): the L2's own lookups
# (lts__t_bytes) of the same launch, profiled again and again - how far the counter the acceptance names moves between
# identical runs. Three classic configs at 2048^3 (the three above 15 %) and one that meets it, REPS runs each, the L2
# flushed before each (--cache-control all), clocks left alone. -> $OUT/l2repeat.csv (config, run, metric, value)
set -u
OUT=${OUT:-$PWD/device-out}
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
REPS=${REPS:-5}
METRICS=lts__t_bytes.sum,lts__t_sectors_srcunit_tex_op_read.sum,lrc__lrc2xbar_sectors_op_read.sum,l1tex__m_xbar2l1tex_read_sectors_mem_lg_op_ld.sum,gpu__time_duration.sum
echo "config,run,metric,value" > "$OUT/l2repeat.csv"
for key in "02:BM=32,BN=32,BK=32" "02:BM=16,BN=16,BK=16" "03:BM=64,BN=64,BK=8,TM=8" "05:BM=128,BN=128,BK=8,TM=8,TN=8"; do
  kern=$(python3 -c "from model.registry import KernelConfig; print(KernelConfig.parse('$key').info.kernel)")
  for r in $(seq 1 "$REPS"); do
    timeout 60 "$NCU" --clock-control none --cache-control all --csv --print-units base --metrics "$METRICS" \
      -k "regex:$kern" --launch-skip 1 --launch-count 1 python3 -m experiments.ncu_target "$key" 2048 2048 2048 \
      > "$OUT/raw.csv" 2> "$OUT/raw.err"
    python3 - "$key" "$r" "$OUT/raw.csv" >> "$OUT/l2repeat.csv" <<'PY'
import csv, sys
key, run, path = sys.argv[1:4]
lines = [l for l in open(path) if l.startswith('"')]
for row in csv.DictReader(lines):
    print(f'"{key}",{run},{row["Metric Name"]},{row["Metric Value"].replace(",", "")}')
PY
  done
  echo "$key done"
done
cat "$OUT/l2repeat.csv" | head -3; wc -l "$OUT/l2repeat.csv"
