#!/usr/bin/env bash
# Diagnostic (sixteenth session, 2026-12-02): where the L1TEX pipe's time goes when rungs 11/12 copy B four bytes at a
# time (N % 4 != 0: the element-path loop) at a skinny N, against their 16-byte copies. Nsight Compute's breakdown of
# l1tex__throughput (every sub-unit's share of its peak) and of sm__throughput, one profiled launch each (the second,
# after warm-up), clocks left alone.
#   OUT=/path experiments/device_l1break.sh KEY:M:N:K ...   -> $OUT/brk_<i>.csv, $OUT/brk_index.txt
# The same loop as experiments/device_source.sh, in its "breakdown" mode.
NCU_MODE=breakdown exec bash "$(dirname "$0")/device_source.sh" "$@"
