#!/bin/bash
# One device call (2026-12-01, fourteenth session): the fetch19 sweep (rung 11's classic config and rung 10's at 1, 2
# and 16 blocks, K = 32-512; predictions committed before) and Nsight Compute's instruction-cache counters on rung 11's
# classic config at four of its shapes.
set -u
SKIP_TESTS=1 bash experiments/device_run.sh fetch19 > "$OUT/run.log" 2>&1
tail -8 "$OUT/run.log"
C11='11:BM=128,BN=128,BK=16,WM=64,WN=64,WNITER=2,TM=8,TN=4,SWZ=1,SPLITK=1,STAGES=3,SPREAD=16'
for s in "128 128 96" "128 128 256" "70 164 96" "512 512 96"; do
  python3 -m experiments.ncu_run --out "$OUT/ncu_fetch19-2026-12-01.jsonl" --mnk $s --configs "$C11" \
      --extra-metrics sm__icc_requests.sum sm__icc_requests_lookup_miss.sum sm__icc_requests_lookup_miss_tag_miss.sum \
      lts__t_sectors_srcunit_gcc.sum lts__t_sectors_srcunit_gcc_lookup_miss.sum sm__cycles_active.avg \
      smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio \
      smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio 2>&1 | tee -a "$OUT/ncu.log"
done
