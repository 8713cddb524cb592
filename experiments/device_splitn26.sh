#!/bin/bash
# One device call (2026-12-02, sixteenth session; development): the splitn26 sweep (split-K at a skinny N, predictions
# committed first) and Nsight Compute's sections of rung 12's classic config at 6144x14x4096 (31-47 % optimistic
# kind of row), at 6144x64x4096 (within 1 %) and of rung 11's classic config (no split-K) at 6144x14x4096.
set -u
OUT=${OUT:-$PWD/device-out}
SKIP_TESTS=1 OUT=$OUT bash experiments/device_run.sh splitn26 2>&1 | tail -20
V12="12:BM=128,BN=128,BK=8,WM=64,WN=64,WNITER=2,TM=4,TN=4,SWZ=1,SPLITK=16,STAGES=3,SPREAD=8"
V11="11:BM=128,BN=128,BK=16,WM=64,WN=64,WNITER=2,TM=8,TN=4,SWZ=1,SPLITK=1,STAGES=3,SPREAD=16"
OUT=$OUT bash experiments/device_sections.sh "$V12:6144:14:4096" "$V12:6144:64:4096" "$V11:6144:14:4096" 2>&1 | tail -8
