#!/usr/bin/env bash
# One device call (sixteenth session, 2026-12-02; diagnostic): the uncoalesced naive kernel is within 2 % at K = 0 mod
# 32 and 3-11 % optimistic on average at other K (18-43 % at 298x418x447, onewave30 and edge_val28). Nsight Compute's
# L1TEX / SM throughput breakdown and the sections of the 8x32 block at 298x418x{447,448} and 1536x1536x{447,448}.
set -u
OUT=${OUT:-$PWD/device-out}
U="01:BX=8,BY=32,COALESCED=0"
S="$U:298:418:447 $U:298:418:448 $U:1536:1536:447 $U:1536:1536:448"
# shellcheck disable=SC2086
OUT=$OUT bash experiments/device_l1break.sh $S > "$OUT/brk.log" 2>&1
# shellcheck disable=SC2086
OUT=$OUT bash experiments/device_sections.sh $S > "$OUT/sec.log" 2>&1
cd "$OUT" && tar czf unc31.tgz brk_* sec_* ./*.log && rm -f brk_* sec_*
