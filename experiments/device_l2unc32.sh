#!/usr/bin/env bash
# One device call (seventeenth session, 2026-12-02; diagnostic, no sweep):
#  1. experiments/l2_merge.py under Nsight Compute: do the L2's lookups fall below the SMs' read requests when many
#     SMs ask for one sector together, warm (--cache-control none, the second launch) and cold (--cache-control all)?
#     -> $OUT/l2m_<groups>_<cold|warm>.csv
#  2. The uncoalesced naive kernel at K = 447 against 448: per-instruction stall samples (SourceCounters, a sample
#     every 32 cycles) -> $OUT/src_<i>.csv.gz (experiments/device_source.sh).
set -u
OUT=${OUT:-$PWD/device-out}
export CUPY_TF32=0
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M="lts__t_sectors_op_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum"
M="$M,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,lts__t_sectors_srcunit_ltcfabric_op_read.sum"
M="$M,lts__t_requests_srcunit_tex_op_read.sum,lrc__lrc2xbar_sectors_op_read.sum"
M="$M,lrc__lrc2xbar_sectors_op_read_coalescing_achieved.sum,lrc__ilc_input_sectors.sum,lrc__ilc_output_sectors.sum"
M="$M,l1tex__m_xbar2l1tex_read_sectors_mem_lg_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
M="$M,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,dram__bytes_read.sum,gpu__time_duration.sum"
for g in 1 4 132; do
  for c in all none; do
    tag=$([ $c = all ] && echo cold || echo warm)
    timeout 120 "$NCU" --clock-control none --cache-control $c --metrics "$M" --csv --print-units base \
        -k regex:merge_read --launch-skip 1 --launch-count 1 \
        python3 -m experiments.l2_merge --groups $g > "$OUT/l2m_${g}_${tag}.csv" 2>&1
    echo "l2m groups $g $tag exit $?"
  done
done
U8="01:BX=8,BY=32,COALESCED=0"; U16="01:BX=16,BY=32,COALESCED=0"
NCU_EXTRA="--warp-sampling-interval 0" OUT=$OUT bash experiments/device_source.sh \
    $U8:298:418:447 $U8:298:418:448 $U8:1536:1536:447 $U8:1536:1536:448 $U16:298:418:447 $U16:298:418:448 > "$OUT/src.log" 2>&1
cat "$OUT/src_index.txt"
cd "$OUT" && tar czf l2unc32.tgz l2m_* src_* ./*.log && rm -f l2m_* src_*
