#!/bin/bash
# One device call (2026-12-01, fifteenth session; diagnostic, no predictions scored): Nsight Compute's per-instruction
# stall sampling, one sample every 32 cycles, of the naive kernel where every edge set finds it off - skinny M (1 and
# 32 rows: 25-40 % optimistic), K = 24 (28-39 % pessimistic) - beside the square control and the uncoalesced kernel
# with one column; what each wait costs and how many there are per k step.
set -u
NCU_EXTRA="--warp-sampling-interval 0" bash experiments/device_source.sh \
  "01:BX=32,BY=32,COALESCED=1:1:4096:4096" "01:BX=32,BY=32,COALESCED=1:32:4096:4096" \
  "01:BX=32,BY=32,COALESCED=1:4096:4096:4096" "01:BX=32,BY=32,COALESCED=0:4096:1:4096" \
  "01:BX=16,BY=16,COALESCED=1:3968:5888:24" "01:BX=16,BY=16,COALESCED=1:1:4096:4096" 2>&1 | tail -20
