#!/bin/bash
# One device call (2026-12-01, fourteenth session): what Nsight Compute counts of instruction fetch (the metrics of
# the GPC's and SM's instruction caches, and the L2 sectors they read) for rung 11's classic config and its 128x128x32
# tile at one round of one and of two blocks an SM, K = 32 (drain loop only) and 256.
set -u
ncu --query-metrics --chip gh100 > "$OUT/query.txt" 2>&1
ncu --query-metrics-mode suffix --metrics lts__t_sectors --chip gh100 > "$OUT/query_lts.txt" 2>&1
grep -i -E "^(sm|smsp|gpc|lts|tpc)__[a-z0-9_]*(icc|gcc|imc|ifetch|inst_fetch|instruction_cache)" "$OUT/query.txt" | awk '{print $1}' > "$OUT/fetch_metrics.txt"
grep -o -E "lts__t_(sectors|requests)_srcunit_[a-z0-9]+" "$OUT/query_lts.txt" | sort -u >> "$OUT/fetch_metrics.txt"
cat "$OUT/fetch_metrics.txt"
C11='11:BM=128,BN=128,BK=16,WM=64,WN=64,WNITER=2,TM=8,TN=4,SWZ=1,SPLITK=1,STAGES=3,SPREAD=16'
B32='11:BM=128,BN=128,BK=32,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=2,SPREAD=1'
R10='10:BM=128,BN=256,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=3'
for s in "1536 1408 32" "1536 1408 256" "1536 2816 32" "1536 2816 256" "256 256 256"; do
  python3 -m experiments.ncu_run --out "$OUT/ncu_fetch-2026-12-01.jsonl" --mnk $s --configs "$C11" "$B32" "$R10" \
      --extra-metrics $(sed -e '/\./!s/$/.sum/' "$OUT/fetch_metrics.txt" | sort -u) \
      smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio \
      smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio sm__cycles_active.avg \
      smsp__warps_launched.sum 2>&1 | tee -a "$OUT/ncu.log"
done
