#!/bin/bash
# One device call (2026-12-01, fourteenth session): code fetch against how many SMs fetch (experiments.icache_share)
# and the fetch14 sweep (rung 11's large-SASS configs at one round of 1-132 blocks; predictions committed before).
set -u
python3 -m experiments.icache_share --out "$OUT/icache_share-2026-12-01.json" 2>&1 | tee "$OUT/icache_share.log"
SKIP_TESTS=1 bash experiments/device_run.sh fetch14 > "$OUT/run.log" 2>&1
tail -20 "$OUT/run.log"
