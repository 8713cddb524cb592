#!/usr/bin/env bash
# One device call (seventeenth session, 2026-12-02; development): the kscan32 sweep (the naive kernel at K = 448..480,
# 1536x1536; predictions committed before: experiments/predictions/kscan32.jsonl) and Nsight Compute's L1TEX / SM
# throughput breakdown of the 8x32 uncoalesced block at K = 448, 449, 452, 456, 464 (K mod 32 = 0, 1, 4, 8, 16).
set -u
OUT=${OUT:-$PWD/device-out}
SKIP_TESTS=1 OUT=$OUT bash experiments/device_run.sh kscan32 > "$OUT/sweeps.log" 2>&1
tail -n 4 "$OUT/sweeps.log"
U="01:BX=8,BY=32,COALESCED=0"
OUT=$OUT bash experiments/device_l1break.sh $U:1536:1536:448 $U:1536:1536:449 $U:1536:1536:452 $U:1536:1536:456 \
    $U:1536:1536:464 > "$OUT/brk.log" 2>&1
cat "$OUT/brk_index.txt"
cd "$OUT" && tar czf kscan32_brk.tgz brk_* brk.log && rm -f brk_*
