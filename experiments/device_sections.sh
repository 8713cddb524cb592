#!/usr/bin/env bash
# Diagnostic: Nsight Compute's scheduler, warp-state, launch and throughput sections (--page details, CSV) of
# configs at given sizes, one profiled launch each (the second, after warm-up), clocks left alone.
#   OUT=/path experiments/device_sections.sh KEY:M:N:K ...      -> $OUT/sec_<i>.csv, $OUT/sec_index.txt
# The same loop as experiments/device_source.sh, in its "sections" mode.
NCU_MODE=sections exec bash "$(dirname "$0")/device_source.sh" "$@"
