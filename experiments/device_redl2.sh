#!/bin/bash
# One device call (2026-12-01, thirteenth session): reductions beyond the L2 (experiments.red_beyond_l2) and
# Nsight Compute's DRAM / L2 counters for rung 12's split-K 16 config at the edge shapes the model missed.
set -u
python3 -m experiments.red_beyond_l2 --out "$OUT/red_beyond_l2-2026-12-01.json" 2>&1 | tee "$OUT/red.log"
CFG='12:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=3,SPREAD=8'
for s in "5376 4352 28" "3840 5632 48" "4864 3840 36" "3072 5888 232" "2816 5120 168" "3072 4096 40" "2816 3328 84" "4352 1792 88"; do
  python3 -m experiments.ncu_run --out "$OUT/ncu_splitk-2026-12-01.jsonl" --mnk $s --configs "$CFG" \
      --extra-metrics lts__t_sectors_op_red.sum lts__t_sectors_op_red_lookup_hit.sum \
      lts__t_sectors_op_red_lookup_miss.sum lts__t_sectors_lookup_miss.sum lts__t_sectors_srcunit_tex_op_red.sum \
      2>&1 | tee -a "$OUT/ncu.log"
done
