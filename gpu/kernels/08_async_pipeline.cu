// gemmscope rung 08: rung 07's warp-tiled compute fed by an asynchronous
// multi-stage pipeline: cp.async (sm_80 and newer) copies global memory
// straight into shared memory, no register staging, STAGES = 2..4 buffers,
// STAGES-1 tiles in flight ahead of the one being computed.
//
// ---------------------------------------------------------------------------
// CONTRACT (mirrored exactly by the registry, the launcher, the performance
// model and the warp-level address simulator; keep it in sync with the code)
// ---------------------------------------------------------------------------
//   C = A * B, FP32, row-major, no alpha/beta; signature and correctness as
//   rung 07. Compute capability 8.0 or newer: the file refuses to compile for
//   an older target (#error), and the registry refuses the config first.
//
//   template<int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN,
//            int SWZ, int SPLITK, int STAGES> sgemm_08_async
//   Everything as rung 07 (sgemm_07_warptile): static_asserts (plus
//   2 <= STAGES <= 4), NT, __launch_bounds__(NT, 1), grid (gm*gn, 1, SPLITK),
//   block order (SWZ), K slices (SPLITK; > 1: atomicAdd into a C the launcher
//   zeroes), thread and warp layout, the padded transposed A layout
//   (LDA = BM + 4), the compute (sgemm_08_compute = sgemm_07_compute) and the
//   C store.
//   Dynamic shared memory: STAGES stages of STAGE = BK*LDA + BK*BN floats,
//     stage s at float offset s*STAGE (AsT_s then Bs_s, as rung 07);
//     bytes = STAGES*STAGE*4 (above 48 KiB the launcher raises the limit).
//
//   Copies (cp.async cannot transpose: it moves 4, 8 or 16 contiguous bytes):
//     A, element by element, 4-byte cp.async.ca (zero-filled outside A):
//       element e = tid + it*NT < BM*BK (it < ceil(BM*BK/NT)):
//         k = e % 8, r = (e/8) % BM, kc = e / (8*BM)      (8 lanes = one 32-byte
//         sector of one row; a warp covers 4 rows)
//         gm = m0 + r, gk = k0 + 8*kc + k
//         dst &AsT[8*kc + k][r], src &A[gm*K + gk], 4 bytes if gm < M && gk < K
//         else 0 (the destination is zero-filled and the source, possibly
//         outside A, is never read: the zfill idiom of CUTLASS's cp_async)
//       (with LDA = BM + 4 the 32 lanes write 32 different banks)
//     B, i = tid + it*NT < BK*BN/4: r = i / (BN/4), c = 4*(i % (BN/4)),
//       gk = k0 + r, gn = n0 + c:
//       bVec: one 16-byte cp.async.cg, 16 bytes if gk < K && gn < N else 0
//             (N%4 == 0: gn < N implies gn+3 < N)
//       else: four 4-byte cp.async.ca, element e valid if gk < K && gn+e < N
//     bVec = (N % 4 == 0) && B 16-byte aligned (cp.async 16 needs 16-byte
//     aligned source and destination); A never needs alignment.
//   Schedule (T = the slice's tiles; one commit group per tile slot, empty
//   groups included, so that group g always holds tile g):
//     prologue: for s < STAGES-1: [s < T: copy tile s -> stage s]; commit
//     for t < T:
//       cp.async.wait_group(STAGES-2)   (this thread's copies of tile t done)
//       __syncthreads()                 (everyone's copies of tile t visible;
//                                        everyone finished computing tile t-1)
//       [t+STAGES-1 < T: copy tile t+STAGES-1 -> stage (t+STAGES-1)%STAGES,
//        the stage tile t-1 was computed from]; commit
//       compute stage t%STAGES
//     cp.async.wait_group(0)
//   Why there is no race: the copy into stage (t-1)%STAGES is issued after the
//   barrier of iteration t, which every thread reaches only after computing
//   tile t-1 (write-after-read); tile t is read only after every thread has
//   waited for its own copies of tile t and passed the barrier (read-after-
//   write): at iteration t, STAGES-1+t groups were committed, and
//   wait_group(STAGES-2) leaves at most the newest STAGES-2 pending, so groups
//   0..t (tiles 0..t) are complete.
// ---------------------------------------------------------------------------

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 800)
#error "gemmscope rung 08 (cp.async pipeline) needs compute capability 8.0 or newer (sm_80+)"
#endif

#ifndef GEMMSCOPE_HOST_EMULATION
// 4-byte copy, cached in L1 (.ca); src_bytes 0 zero-fills the destination.
__device__ __forceinline__ void sgemm_08_cp4(float* dst, const float* src, int src_bytes)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" :: "r"(s), "l"(src), "r"(src_bytes));
}
// 16-byte copy bypassing L1 (.cg); src_bytes 0 zero-fills the destination.
__device__ __forceinline__ void sgemm_08_cp16(float* dst, const float* src, int src_bytes)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(s), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void sgemm_08_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int PENDING>
__device__ __forceinline__ void sgemm_08_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(PENDING)); }
#endif

// Issue the copies of the tile at k0 into one stage (AsT, Bs).
template <int BM, int BN, int BK, int NT>
__device__ __forceinline__ void sgemm_08_copy_tile(float* AsT, float* Bs,
                                                    const float* __restrict__ A,
                                                    const float* __restrict__ B,
                                                    int M, int N, int K,
                                                    int m0, int n0, int k0, int tid, bool bVec)
{
    constexpr int LDA = BM + 4;
    constexpr int AE = BM * BK;
    constexpr int B4 = BK * BN / 4;
    constexpr int A_ITERS = (AE + NT - 1) / NT;
    constexpr int B_ITERS = (B4 + NT - 1) / NT;
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
            sgemm_08_cp4(&AsT[(8 * kc + k) * LDA + r], A + (long long)(m0 + r) * K + gk, ok ? 4 : 0);
        }
    }
#pragma unroll
    for (int it = 0; it < B_ITERS; ++it) {
        const int i = tid + it * NT;
        if (B4 % NT == 0 || i < B4) {
            const int r = i / (BN / 4);
            const int c = 4 * (i % (BN / 4));
            const int gk = k0 + r;
            const int gn = n0 + c;
            const float* src = B + (long long)gk * N + gn;
            if (bVec) {
                const bool ok = gk < K && gn < N;
                sgemm_08_cp16(&Bs[r * BN + c], src, ok ? 16 : 0);
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const bool ok = gk < K && gn + q < N;
                    sgemm_08_cp4(&Bs[r * BN + c + q], src + q, ok ? 4 : 0);
                }
            }
        }
    }
}

// One warp-tiled pass over a shared-memory stage: BK rank-1 updates of the
// thread's (WMITER*TM) x (WNITER*TN) accumulators, operand fragments of kk+1
// loaded (LDS.128) before the FFMAs of kk.
template <int BM, int BN, int BK, int WMITER, int WNITER, int WSUBM, int WSUBN, int TM, int TN>
__device__ __forceinline__ void sgemm_08_compute(const float* __restrict__ Aw,
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
                    fb[kk & 1][wj * TN + j + 0] = b.x; fb[kk & 1][wj * TN + j + 1] = b.y;
                    fb[kk & 1][wj * TN + j + 2] = b.z; fb[kk & 1][wj * TN + j + 3] = b.w;
                }
        }
        if (kk > 0) {                                    // FFMAs of kk-1 from buffer (kk-1)%2
            const int q = (kk - 1) & 1;
#pragma unroll
            for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
                for (int j = 0; j < WNITER * TN; ++j) acc[i][j] += fa[q][i] * fb[q][j];
        }
    }
}

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int SWZ, int SPLITK, int STAGES>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
sgemm_08_async(const float* __restrict__ A,
               const float* __restrict__ B,
               float* __restrict__ C,
               int M, int N, int K)
{
    static_assert(BM % WM == 0 && BN % WN == 0, "sgemm_08_async: BM%WM and BN%WN must be 0");
    static_assert((WM * WN) % (32 * TM * TN * WNITER) == 0,
                  "sgemm_08_async: WM*WN must be a multiple of 32*TM*TN*WNITER");
    constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER);
    static_assert(WMITER >= 1 && WM % WMITER == 0 && WN % WNITER == 0,
                  "sgemm_08_async: WMITER, WNITER must divide WM, WN");
    constexpr int WSUBM = WM / WMITER;
    constexpr int WSUBN = WN / WNITER;
    static_assert(WSUBM % TM == 0 && WSUBN % TN == 0 && (WSUBM / TM) * (WSUBN / TN) == 32,
                  "sgemm_08_async: a warp's 32 lanes must tile WSUBM x WSUBN by TM x TN");
    static_assert(TM % 4 == 0 && TN % 4 == 0, "sgemm_08_async: TM, TN must be multiples of 4");
    static_assert(BK % 8 == 0, "sgemm_08_async: BK must be a multiple of 8");
    static_assert(SWZ >= 1 && SPLITK >= 1, "sgemm_08_async: SWZ, SPLITK must be >= 1");
    static_assert(STAGES >= 2 && STAGES <= 4, "sgemm_08_async: STAGES must be 2, 3 or 4");
    constexpr int NT = (BM / WM) * (BN / WN) * 32;
    static_assert(NT <= 1024, "sgemm_08_async: at most 1024 threads");
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

    const bool bVec = ((N & 3) == 0) && ((reinterpret_cast<unsigned long long>(B) & 15ull) == 0);
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
            sgemm_08_copy_tile<BM, BN, BK, NT>(st, st + BK * LDA, A, B, M, N, K, m0, n0,
                                               kBegin + s * BK, tid, bVec);
        }
        sgemm_08_commit();
    }

    const int aOff = wr * WM + tr * TM;
    const int bOff = BK * LDA + wc * WN + tc * TN;
    int readStage = 0;                                   // t % STAGES
    int writeStage = STAGES - 1;                         // (t + STAGES - 1) % STAGES
    for (int t = 0; t < numTiles; ++t) {
        sgemm_08_wait<STAGES - 2>();
        __syncthreads();
        if (t + STAGES - 1 < numTiles) {
            float* st = smem + writeStage * STAGE;
            sgemm_08_copy_tile<BM, BN, BK, NT>(st, st + BK * LDA, A, B, M, N, K, m0, n0,
                                               kBegin + (t + STAGES - 1) * BK, tid, bVec);
        }
        sgemm_08_commit();
        const float* st = smem + readStage * STAGE;
        sgemm_08_compute<BM, BN, BK, WMITER, WNITER, WSUBM, WSUBN, TM, TN>(st + aOff, st + bOff, acc);
        readStage = (readStage + 1 == STAGES) ? 0 : readStage + 1;
        writeStage = (writeStage + 1 == STAGES) ? 0 : writeStage + 1;
    }
    sgemm_08_wait<0>();

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
