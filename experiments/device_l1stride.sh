#!/usr/bin/env bash
# One device call (seventeenth session, 2026-12-02; diagnostic): experiments/l1_stride.py -> $OUT/l1_stride.json; with PAIRS=1 experiments/l1_pairs.py -> $OUT/l1_pairs.json
set -u
OUT=${OUT:-$PWD/device-out}
[ "${PAIRS:-0}" = 1 ] || python3 -m experiments.l1_stride --out "$OUT/l1_stride.json" > "$OUT/l1_stride.log" 2>&1
[ "${PAIRS:-0}" = 1 ] || { echo "exit $?"; tail -n 3 "$OUT/l1_stride.log"; }
if [ "${PAIRS:-0}" = 1 ]; then
  [ "${BITS:-0}" = 1 ] && { BITS=1 python3 -m experiments.l1_pairs --out "$OUT/l1_pairs_bits.json" > "$OUT/l1_pairs_bits.log" 2>&1; echo "bits exit $?"; } || python3 -m experiments.l1_pairs --out "$OUT/l1_pairs.json" > "$OUT/l1_pairs.log" 2>&1
  echo "pairs exit $?"; tail -n 2 "$OUT/l1_pairs.log"
fi
if [ "${NCU_STRIDE:-0}" = 1 ]; then     # L1 hit rate and tag-stage counters of the all-hit 8-row loads at five strides
  NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  L1_STRIDE_MODES=hit L1_STRIDE_G=4 L1_STRIDE_ROWS=447,449,455,459,479,1031 timeout 300 "$NCU" --clock-control none \
      --metrics l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum,l1tex__data_pipe_lsu_wavefronts_mem_lg.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_global_op_ld.sum,l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ld.sum,l1tex__lsu_writeback_active.sum,sm__cycles_active.avg \
      --csv --print-units base -k regex:l1_lines python3 -m experiments.l1_stride > "$OUT/ncu_stride.csv" 2> "$OUT/ncu_stride.err"
  echo "ncu exit $?"
fi
if [ "${STEP_SCAN:-0}" = 1 ]; then     # all-hit loads at every stride 447..480, the 16 loads 2^20 words (2^15 lines) apart
  R=$(seq -s, 447 480)
  L1_STRIDE_MODES=hit L1_STRIDE_ROWS=$R L1_STRIDE_STEP=1048576 python3 -m experiments.l1_stride \
      --out "$OUT/l1_stride_step.json" > "$OUT/l1_stride_step.log" 2>&1
  echo "step scan exit $?"; tail -n 2 "$OUT/l1_stride_step.log"
fi
