// gemmscope rung 09: rung 08 with its FFMA operands laid out for the register
// file's two banks. Same tiles, same cp.async pipeline, same instruction count;
// what changes is which register bank each FFMA operand sits in.
//
// Why (Nsight Compute on the H200, 2026-11-30, 4096^3): rung 08's best config
// and cuBLAS execute the same instructions at the same residency, but our warps
// lose 0.30 cycles per instruction to dispatch stalls against cuBLAS's 0.10.
// Volta and later read FFMA operands from two register banks (register index
// mod 2); two operands of one FFMA in the same bank, neither served by the
// operand reuse cache, cost an extra read cycle (Jia et al. 2018, "Dissecting
// the NVIDIA Volta GPU Architecture via Microbenchmarking"; the maxas SGEMM
// notes). In rung 08 the accumulator of column j and the B operand of column j
// are both filled by 128-bit moves (LDS.128 into the fragment, STG.128 out of
// the accumulators), so both sit in bank j % 2: every FFMA whose A operand comes
// from the reuse cache still pays a conflict between B and the accumulator.
// tools/bank_conflicts.py counts 0.87-1.0 extra reads per FFMA for thread tiles
// of 16 x 8 in rung 08, about 0.12 here.
//
// What it adds to rung 08:
//   1. B's tile is stored in shared memory with the two floats of each pair
//      swapped (column c at position c ^ 1), by 4-byte cp.async copies (a
//      16-byte copy cannot permute). The LDS.128 of a fragment then brings
//      column j+1 into the register of parity j % 2 and column j into the other:
//      B and the accumulator of every FFMA sit in different banks.
//   2. The FFMAs of one k step run row by row in serpentine order (left to
//      right, then right to left), so that the A operand of a row, and the B
//      operand where a row turns, come from the reuse cache.
//
// ---------------------------------------------------------------------------
// CONTRACT (mirrored exactly by the registry, the launcher, the performance
// model and the warp-level address simulator; keep it in sync with the code)
// ---------------------------------------------------------------------------
//   C = A * B, FP32, row-major, no alpha/beta; signature and correctness as
//   rung 07. Compute capability 8.0 or newer (#error otherwise; the registry
//   refuses the config first).
//
//   template<int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN,
//            int SWZ, int SPLITK, int STAGES> sgemm_09_bank
//   Everything as rung 08 (sgemm_08_async): static_asserts, NT,
//   __launch_bounds__(NT, 1), grid (gm*gn, 1, SPLITK), block order (SWZ), K
//   slices (SPLITK; > 1: atomicAdd into a C the launcher zeroes), thread and
//   warp layout, the padded transposed A layout (LDA = BM + 4), the A copies,
//   the pipeline schedule, the dynamic shared memory (STAGES stages of
//   STAGE = BK*LDA + BK*BN floats) and the C store, except:
//     B copies, element by element, 4-byte cp.async.ca (zero-filled outside B):
//       element e = tid + it*NT < BK*BN (it < ceil(BK*BN/NT)):
//         r = e / BN, c = e % BN, gk = k0 + r, gn = n0 + c
//         dst &Bs[r*BN + (c ^ 1)], src &B[gk*N + gn], 4 bytes if gk < K && gn < N
//         (a warp reads 32 consecutive floats of one row: 128 bytes; it writes
//         32 different banks). B never needs alignment.
//     Fragments: the LDS.128 at Bs[kk*BN + col] (col a multiple of 4) returns
//       columns (col+1, col, col+3, col+2) in its four registers.
//     FFMAs of k step kk: for i < WMITER*TM, for jj < WNITER*TN:
//       j = (i odd) ? WNITER*TN-1-jj : jj;  acc[i][j] += a[i] * b[j]
// ---------------------------------------------------------------------------

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 800)
#error "gemmscope rung 09 (cp.async pipeline, bank-aware operands) needs compute capability 8.0 or newer (sm_80+)"
#endif

#ifndef GEMMSCOPE_HOST_EMULATION
// 4-byte copy, cached in L1 (.ca); src_bytes 0 zero-fills the destination.
__device__ __forceinline__ void sgemm_09_cp4(float* dst, const float* src, int src_bytes)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" :: "r"(s), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void sgemm_09_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int PENDING>
__device__ __forceinline__ void sgemm_09_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(PENDING)); }
#endif

// Issue the copies of the tile at k0 into one stage (AsT, Bs).
template <int BM, int BN, int BK, int NT>
__device__ __forceinline__ void sgemm_09_copy_tile(float* AsT, float* Bs,
                                                    const float* __restrict__ A,
                                                    const float* __restrict__ B,
                                                    int M, int N, int K,
                                                    int m0, int n0, int k0, int tid)
{
    constexpr int LDA = BM + 4;
    constexpr int AE = BM * BK;
    constexpr int BE = BK * BN;
    constexpr int A_ITERS = (AE + NT - 1) / NT;
    constexpr int B_ITERS = (BE + NT - 1) / NT;
#pragma unroll
    for (int it = 0; it < A_ITERS; ++it) {
        const int e = tid + it * NT;
        if (AE % NT == 0 || e < AE) {
            const int k = e % 8;
            const int r = (e / 8) % BM;
            const int kc = e / (8 * BM);
            const int gk = k0 + 8 * kc + k;
            const bool ok = (m0 + r) < M && gk < K;
            // src-size 0 copies nothing (zero-fill): the address is never read, even if outside A
            sgemm_09_cp4(&AsT[(8 * kc + k) * LDA + r], A + (long long)(m0 + r) * K + gk, ok ? 4 : 0);
        }
    }
#pragma unroll
    for (int it = 0; it < B_ITERS; ++it) {
        const int e = tid + it * NT;
        if (BE % NT == 0 || e < BE) {
            const int r = e / BN;
            const int c = e % BN;
            const int gk = k0 + r;
            const int gn = n0 + c;
            const bool ok = gk < K && gn < N;
            // pair-swapped: column c lands at c ^ 1 (see the header)
            sgemm_09_cp4(&Bs[r * BN + (c ^ 1)], B + (long long)gk * N + gn, ok ? 4 : 0);
        }
    }
}

// One warp-tiled pass over a shared-memory stage: BK rank-1 updates of the
// thread's (WMITER*TM) x (WNITER*TN) accumulators, operand fragments of kk+1
// loaded (LDS.128) before the FFMAs of kk.
template <int BM, int BN, int BK, int WMITER, int WNITER, int WSUBM, int WSUBN, int TM, int TN>
__device__ __forceinline__ void sgemm_09_compute(const float* __restrict__ Aw,
                                                  const float* __restrict__ Bw,
                                                  float (&acc)[WMITER * TM][WNITER * TN])
{
    constexpr int LDA = BM + 4;
    float fa[2][WMITER * TM];
    float fb[2][WNITER * TN];
#pragma unroll
    for (int kk = 0; kk <= BK; ++kk) {
        if (kk < BK) {                                   // fragments of kk -> buffer kk%2
#pragma unroll
            for (int wi = 0; wi < WMITER; ++wi)
#pragma unroll
                for (int i = 0; i < TM; i += 4) {
                    const float4 a = *reinterpret_cast<const float4*>(&Aw[kk * LDA + wi * WSUBM + i]);
                    fa[kk & 1][wi * TM + i + 0] = a.x; fa[kk & 1][wi * TM + i + 1] = a.y;
                    fa[kk & 1][wi * TM + i + 2] = a.z; fa[kk & 1][wi * TM + i + 3] = a.w;
                }
#pragma unroll
            for (int wj = 0; wj < WNITER; ++wj)
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const float4 b = *reinterpret_cast<const float4*>(&Bw[kk * BN + wj * WSUBN + j]);
                    // pair-swapped in shared memory: b.x is column j+1, b.y column j, ...
                    fb[kk & 1][wj * TN + j + 1] = b.x; fb[kk & 1][wj * TN + j + 0] = b.y;
                    fb[kk & 1][wj * TN + j + 3] = b.z; fb[kk & 1][wj * TN + j + 2] = b.w;
                }
        }
        if (kk > 0) {                                    // FFMAs of kk-1 from buffer (kk-1)%2
            const int q = (kk - 1) & 1;
#pragma unroll
            for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
                for (int jj = 0; jj < WNITER * TN; ++jj) {      // serpentine: reuse a[i], and b[j] at the turn
                    const int j = (i & 1) ? (WNITER * TN - 1 - jj) : jj;
                    acc[i][j] += fa[q][i] * fb[q][j];
                }
        }
    }
}

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int SWZ, int SPLITK, int STAGES>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
sgemm_09_bank(const float* __restrict__ A,
               const float* __restrict__ B,
               float* __restrict__ C,
               int M, int N, int K)
{
    static_assert(BM % WM == 0 && BN % WN == 0, "sgemm_09_bank: BM%WM and BN%WN must be 0");
    static_assert((WM * WN) % (32 * TM * TN * WNITER) == 0,
                  "sgemm_09_bank: WM*WN must be a multiple of 32*TM*TN*WNITER");
    constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER);
    static_assert(WMITER >= 1 && WM % WMITER == 0 && WN % WNITER == 0,
                  "sgemm_09_bank: WMITER, WNITER must divide WM, WN");
    constexpr int WSUBM = WM / WMITER;
    constexpr int WSUBN = WN / WNITER;
    static_assert(WSUBM % TM == 0 && WSUBN % TN == 0 && (WSUBM / TM) * (WSUBN / TN) == 32,
                  "sgemm_09_bank: a warp's 32 lanes must tile WSUBM x WSUBN by TM x TN");
    static_assert(TM % 4 == 0 && TN % 4 == 0, "sgemm_09_bank: TM, TN must be multiples of 4");
    static_assert(BK % 8 == 0, "sgemm_09_bank: BK must be a multiple of 8");
    static_assert(SWZ >= 1 && SPLITK >= 1, "sgemm_09_bank: SWZ, SPLITK must be >= 1");
    static_assert(STAGES >= 2 && STAGES <= 4, "sgemm_09_bank: STAGES must be 2, 3 or 4");
    constexpr int NT = (BM / WM) * (BN / WN) * 32;
    static_assert(NT <= 1024, "sgemm_09_bank: at most 1024 threads");
    constexpr int LDA = BM + 4;
    constexpr int STAGE = BK * LDA + BK * BN;

    extern __shared__ float4 smem4[];
    float* smem = reinterpret_cast<float*>(smem4);

    // ---- which output tile and K slice (as rung 07) ----
    const int gm = (M + BM - 1) / BM;
    const int gn = (N + BN - 1) / BN;
    const int pid = blockIdx.x;
    int bm, bn;
    if (SWZ == 1) {
        bm = pid / gn;
        bn = pid % gn;
    } else {
        const int first = (pid / (SWZ * gn)) * SWZ;
        const int size = min(gm - first, SWZ);
        const int r = pid % (SWZ * gn);
        bm = first + r % size;
        bn = r / size;
    }
    const int m0 = bm * BM;
    const int n0 = bn * BN;
    const int kTiles = (K + BK - 1) / BK;
    const int per = (kTiles + SPLITK - 1) / SPLITK;
    const int tBegin = (SPLITK == 1) ? 0 : (int)blockIdx.z * per;
    const int numTiles = min(kTiles - tBegin, per);
    if (numTiles <= 0) return;                           // block-uniform, before any barrier
    const int kBegin = tBegin * BK;

    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int wr = warp / (BN / WN);
    const int wc = warp % (BN / WN);
    // lanes interleaved by 2 (see the CONTRACT): each 4-lane quad covers 2 x 2 (tr, tc)
    constexpr int LC = WSUBN / TN;                       // lane columns
    constexpr bool IL = LC >= 2 && (32 / LC) >= 2;
    const int tr = IL ? (lane / (2 * LC)) * 2 + (lane & 1) : lane / LC;
    const int tc = IL ? (lane / 2) % LC : lane % LC;

    const bool cVec = ((N & 3) == 0) && ((reinterpret_cast<unsigned long long>(C) & 15ull) == 0);

    float acc[WMITER * TM][WNITER * TN];
#pragma unroll
    for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = 0.0f;

    // ---- prologue: tiles 0 .. STAGES-2 in flight, one commit group each ----
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < numTiles) {
            float* st = smem + s * STAGE;
            sgemm_09_copy_tile<BM, BN, BK, NT>(st, st + BK * LDA, A, B, M, N, K, m0, n0,
                                               kBegin + s * BK, tid);
        }
        sgemm_09_commit();
    }

    const int aOff = wr * WM + tr * TM;
    const int bOff = BK * LDA + wc * WN + tc * TN;
    int readStage = 0;                                   // t % STAGES
    int writeStage = STAGES - 1;                         // (t + STAGES - 1) % STAGES
    for (int t = 0; t < numTiles; ++t) {
        sgemm_09_wait<STAGES - 2>();
        __syncthreads();
        if (t + STAGES - 1 < numTiles) {
            float* st = smem + writeStage * STAGE;
            sgemm_09_copy_tile<BM, BN, BK, NT>(st, st + BK * LDA, A, B, M, N, K, m0, n0,
                                               kBegin + (t + STAGES - 1) * BK, tid);
        }
        sgemm_09_commit();
        const float* st = smem + readStage * STAGE;
        sgemm_09_compute<BM, BN, BK, WMITER, WNITER, WSUBM, WSUBN, TM, TN>(st + aOff, st + bOff, acc);
        readStage = (readStage + 1 == STAGES) ? 0 : readStage + 1;
        writeStage = (writeStage + 1 == STAGES) ? 0 : writeStage + 1;
    }
    sgemm_09_wait<0>();

    // ---- write back ----
#pragma unroll
    for (int wi = 0; wi < WMITER; ++wi)
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int row = m0 + wr * WM + wi * WSUBM + tr * TM + i;
            if (row < M) {
                float* Crow = C + (long long)row * N;
#pragma unroll
                for (int wj = 0; wj < WNITER; ++wj)
#pragma unroll
                    for (int j = 0; j < TN; j += 4) {
                        const int col = n0 + wc * WN + wj * WSUBN + tc * TN + j;
                        if (SPLITK > 1) {
#pragma unroll
                            for (int e = 0; e < 4; ++e)
                                if (col + e < N) atomicAdd(Crow + col + e, acc[wi * TM + i][wj * TN + j + e]);
                        } else if (cVec && col + 3 < N) {
                            *reinterpret_cast<float4*>(Crow + col) =
                                make_float4(acc[wi * TM + i][wj * TN + j + 0], acc[wi * TM + i][wj * TN + j + 1],
                                            acc[wi * TM + i][wj * TN + j + 2], acc[wi * TM + i][wj * TN + j + 3]);
                        } else {
#pragma unroll
                            for (int e = 0; e < 4; ++e)
                                if (col + e < N) Crow[col + e] = acc[wi * TM + i][wj * TN + j + e];
                        }
                    }
            }
        }
}
