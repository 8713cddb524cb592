#!/bin/bash
# One device call (2026-12-01, fifteenth session; diagnostic, no predictions scored): Nsight Compute's per-instruction
# stall sampling (one sample every 32 cycles) of rungs 06 and 08's classic configs at a four-block launch with K and N
# both off a multiple of 4 (123x397x65: edge_val21's worst rows, 41-55 % optimistic), with one of them off, and with
# both aligned - where the time of a launch whose A and B both take the element path goes.
set -u
specs=()
for key in "06:BM=128,BN=128,BK=8,TM=8,TN=8" "08:BM=128,BN=128,BK=16,WM=64,WN=32,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=1,STAGES=3"; do
  for size in 123:397:65 123:400:64 123:397:64 123:400:65; do specs+=("$key:$size"); done
done
NCU_EXTRA="--warp-sampling-interval 0" bash experiments/device_source.sh "${specs[@]}" 2>&1 | tail -20
