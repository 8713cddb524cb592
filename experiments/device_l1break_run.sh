#!/usr/bin/env bash
# The one device call of experiments/device_l1break.sh (sixteenth session): rung 12's split-K 16 at 6144 x {14, 16, 64}
# x 4096, rung 11's classic config (no split-K) at 6144 x {14, 16} x 4096 and at 4096 x {4095, 4096} x 4096 (the element
# path without clamped columns); then SourceCounters of rung 12 at N = 14 and 64 (experiments/device_source.sh).
set -u
V12="12:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=3,SPREAD=8"
V11="11:BM=128,BN=128,BK=16,WM=64,WN=64,WNITER=2,TM=8,TN=4,SWZ=1,SPLITK=1,STAGES=3,SPREAD=16"
bash experiments/device_l1break.sh "$V12:6144:14:4096" "$V12:6144:16:4096" "$V12:6144:64:4096" \
  "$V11:6144:14:4096" "$V11:6144:16:4096" "$V11:4096:4095:4096" "$V11:4096:4096:4096" 2>&1 | tail -14
bash experiments/device_source.sh "$V12:6144:14:4096" "$V12:6144:64:4096" 2>&1 | tail -4
