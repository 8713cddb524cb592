// gemmscope rung 10: rung 08 with a branch-free K loop. Same tiles, same
// cp.async pipeline, same FFMAs; what changes is the code around the copies.
//
// Why (the SASS of rung 08, sm_90, and Nsight Compute on the H200, 2026-11-30):
// rung 08's loop issues its copies inside two branches (`t + STAGES - 1 <
// numTiles`, and B's 16-byte or 4-byte path, decided per tile), recomputing
// every address and bound per copy. The compiler cannot move instructions
// across those branches, so the copies and their address arithmetic (chains of
// dependent integer instructions, 2-11 cycles of fixed stall each) sit in one
// block outside the FFMAs: both warps of a scheduler reach it together after
// the barrier, and the warp state shows 0.13 cycles per instruction waiting on
// fixed latencies where cuBLAS waits 0.01, at the same instruction count.
//
// What it adds to rung 08:
//   1. Each thread's copies are planned once per block (sgemm_10_plan): source
//      pointers at the slice's first tile, shared offsets, and the k (A) or row
//      (B) of each copy in its tile, set to BK where the copy falls outside A or
//      B in M or N. A tile's copies then need one add and one compare each.
//   2. No branch in the loop: a tile past the slice is "copied" with source
//      size 0 (zero-fill of a stage nobody reads again), and B's vector path is
//      chosen once per block (two instantiations of the loop).
//   3. The copies of the next tile are spread over the BK steps of the compute
//      (as CUTLASS's multistage mainloop does), between the fragment loads and
//      the FFMAs of each step.
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
//            int SWZ, int SPLITK, int STAGES> sgemm_10_lean
//   Everything as rung 08 (sgemm_08_async): static_asserts, NT,
//   __launch_bounds__(NT, 1), grid (gm*gn, 1, SPLITK), block order (SWZ), K slices,
//   thread and warp layout, LDA = BM + 4, dynamic shared memory, the A copies
//   and their addresses, B's 16-byte copies when bVec, the compute and the C
//   store, except:
//     B's copies off the vector path (N % 4 != 0 or B not 16-byte aligned):
//       element by element, 4-byte cp.async.ca, e = tid + it*NT < BK*BN:
//       r = e / BN, c = e % BN, dst &Bs[r*BN + c], src &B[(k0+r)*N + n0+c],
//       4 bytes if k0+r < K && n0+c < N else 0 (a warp reads 128 contiguous
//       bytes; rung 08 copies the 4 floats of a float4 per thread instead).
//     Schedule: as rung 08, except that the copies of tile t+STAGES-1 are
//       issued during the compute of tile t (copy q at step kk when
//       kk*COPIES/BK <= q < (kk+1)*COPIES/BK, COPIES = A's + B's copies per
//       thread) and committed after it, also (zero-filled) when that tile is
//       past the slice; a K slice ends at min(K, (tBegin + numTiles) * BK).
//       Still no race: stage (t-1)%STAGES is written only after iteration t's
//       barrier, and no thread reads it before tile t+STAGES-1's wait.
// ---------------------------------------------------------------------------

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 800)
#error "gemmscope rung 10 (branch-free cp.async pipeline) needs compute capability 8.0 or newer (sm_80+)"
#endif

#ifndef GEMMSCOPE_HOST_EMULATION
// 4-byte copy, cached in L1 (.ca); src_bytes 0 zero-fills the destination.
__device__ __forceinline__ void sgemm_10_cp4(float* dst, const float* src, int src_bytes)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" :: "r"(s), "l"(src), "r"(src_bytes));
}
// 16-byte copy bypassing L1 (.cg); src_bytes 0 zero-fills the destination.
__device__ __forceinline__ void sgemm_10_cp16(float* dst, const float* src, int src_bytes)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(s), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void sgemm_10_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int PENDING>
__device__ __forceinline__ void sgemm_10_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(PENDING)); }
#endif

// The copies one thread issues for every tile, fixed for the whole K loop: source pointers at the slice's
// first tile, shared-memory offsets within a stage, and the k (A) or row (B) of each copy within its tile,
// set to BK where the copy lies outside A or B in M or N (or beyond the tile), so that one compare against
// the tile's valid depth decides it (no branch).
template <int BM, int BN, int BK, int NT, bool BVEC>
struct sgemm_10_plan {
    static constexpr int LDA = BM + 4;
    static constexpr int AE = BM * BK;
    static constexpr int A_ITERS = (AE + NT - 1) / NT;
    static constexpr int BU = BVEC ? BK * BN / 4 : BK * BN;     // B copy units: float4s, or floats
    static constexpr int B_ITERS = (BU + NT - 1) / NT;
    const float* aSrc[A_ITERS];
    int aDst[A_ITERS];
    int aK[A_ITERS];
    const float* bSrc[B_ITERS];
    int bDst[B_ITERS];
    int bK[B_ITERS];

    __device__ __forceinline__ sgemm_10_plan(const float* __restrict__ A, const float* __restrict__ B,
                                             int M, int N, int K, int m0, int n0, int kBegin, int tid)
    {
#pragma unroll
        for (int it = 0; it < A_ITERS; ++it) {
            const int e = tid + it * NT;
            const int k = e % 8;
            const int r = (e / 8) % BM;
            const int kc = e / (8 * BM);
            const bool in = (AE % NT == 0 || e < AE) && (m0 + r) < M;
            aSrc[it] = A + (long long)(in ? m0 + r : 0) * K + kBegin + 8 * kc + k;
            aDst[it] = (8 * kc + k) * LDA + r;
            aK[it] = in ? 8 * kc + k : BK;
        }
#pragma unroll
        for (int it = 0; it < B_ITERS; ++it) {
            const int i = tid + it * NT;
            const int r = BVEC ? i / (BN / 4) : i / BN;
            const int c = BVEC ? 4 * (i % (BN / 4)) : i % BN;
            const bool in = (BU % NT == 0 || i < BU) && (n0 + c) < N;   // BVEC: N % 4 == 0, so c+3 < N too
            bSrc[it] = B + (long long)(kBegin + r) * N + (in ? n0 + c : 0);
            bDst[it] = BK * LDA + r * BN + c;
            bK[it] = in ? r : BK;
        }
    }

    static constexpr int COPIES = A_ITERS + B_ITERS;

    // Copy q (A's A_ITERS first, then B's) of the tile kOff elements into the slice, into the stage at st;
    // depth = the tile's valid K (BK for a full tile, less for the last, <= 0 past the slice: zero-fill).
    __device__ __forceinline__ void copy_one(int q, float* st, int kOff, int depth, int N) const
    {
        if (q < A_ITERS) {
            sgemm_10_cp4(st + aDst[q], aSrc[q] + kOff, aK[q] < depth ? 4 : 0);
        } else {
            const int it = q - A_ITERS;
            const float* src = bSrc[it] + (long long)kOff * N;
            if (BVEC)
                sgemm_10_cp16(st + bDst[it], src, bK[it] < depth ? 16 : 0);
            else
                sgemm_10_cp4(st + bDst[it], src, bK[it] < depth ? 4 : 0);
        }
    }

    // All copies of one tile (the prologue).
    __device__ __forceinline__ void copy(float* st, int kOff, int depth, int N) const
    {
#pragma unroll
        for (int q = 0; q < COPIES; ++q) copy_one(q, st, kOff, depth, N);
    }
};

// One warp-tiled pass over a shared-memory stage: BK rank-1 updates of the
// thread's (WMITER*TM) x (WNITER*TN) accumulators, operand fragments of kk+1
// loaded (LDS.128) before the FFMAs of kk, and the copies of the tile STAGES-1
// ahead spread over the BK steps (step kk issues copies kk*COPIES/BK ..), so
// that they interleave with the FFMAs instead of preceding them.
template <int BM, int BN, int BK, int WMITER, int WNITER, int WSUBM, int WSUBN, int TM, int TN, class Plan>
__device__ __forceinline__ void sgemm_10_compute(const float* __restrict__ Aw,
                                                  const float* __restrict__ Bw,
                                                  float (&acc)[WMITER * TM][WNITER * TN],
                                                  const Plan& plan, float* wst, int kOff, int depth, int N)
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
        if (kk < BK) {                                   // this step's share of the next tile's copies
#pragma unroll
            for (int c = kk * Plan::COPIES / BK; c < (kk + 1) * Plan::COPIES / BK; ++c)
                plan.copy_one(c, wst, kOff, depth, N);
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

// The K loop of one block: the prologue puts tiles 0..STAGES-2 in flight, then every iteration waits for
// tile t, passes the barrier, and computes tile t while issuing the copies of tile t+STAGES-1 (zero-filled
// past the slice: no branch), then commits them. BVEC: B's 16-byte copies (N % 4 == 0, B 16-byte aligned), else 4-byte ones.
template <int BM, int BN, int BK, int WMITER, int WNITER, int WSUBM, int WSUBN, int TM, int TN, int NT,
          int STAGES, bool BVEC>
__device__ __forceinline__ void sgemm_10_mainloop(float* smem, const float* __restrict__ A,
                                                  const float* __restrict__ B, int M, int N, int K,
                                                  int m0, int n0, int kBegin, int kEnd, int numTiles, int tid,
                                                  int aOff, int bOff, float (&acc)[WMITER * TM][WNITER * TN])
{
    constexpr int LDA = BM + 4;
    constexpr int STAGE = BK * LDA + BK * BN;
    const sgemm_10_plan<BM, BN, BK, NT, BVEC> plan(A, B, M, N, K, m0, n0, kBegin, tid);
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        plan.copy(smem + s * STAGE, s * BK, min(kEnd - (kBegin + s * BK), BK), N);
        sgemm_10_commit();
    }
    int readStage = 0;                                   // t % STAGES
    int writeStage = STAGES - 1;                         // (t + STAGES - 1) % STAGES
    for (int t = 0; t < numTiles; ++t) {
        sgemm_10_wait<STAGES - 2>();
        __syncthreads();
        const int kOff = (t + STAGES - 1) * BK;
        const float* st = smem + readStage * STAGE;
        sgemm_10_compute<BM, BN, BK, WMITER, WNITER, WSUBM, WSUBN, TM, TN>(
            st + aOff, st + bOff, acc, plan, smem + writeStage * STAGE, kOff, min(kEnd - (kBegin + kOff), BK), N);
        sgemm_10_commit();
        readStage = (readStage + 1 == STAGES) ? 0 : readStage + 1;
        writeStage = (writeStage + 1 == STAGES) ? 0 : writeStage + 1;
    }
    sgemm_10_wait<0>();
}

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int SWZ, int SPLITK, int STAGES>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
sgemm_10_lean(const float* __restrict__ A,
               const float* __restrict__ B,
               float* __restrict__ C,
               int M, int N, int K)
{
    static_assert(BM % WM == 0 && BN % WN == 0, "sgemm_10_lean: BM%WM and BN%WN must be 0");
    static_assert((WM * WN) % (32 * TM * TN * WNITER) == 0,
                  "sgemm_10_lean: WM*WN must be a multiple of 32*TM*TN*WNITER");
    constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER);
    static_assert(WMITER >= 1 && WM % WMITER == 0 && WN % WNITER == 0,
                  "sgemm_10_lean: WMITER, WNITER must divide WM, WN");
    constexpr int WSUBM = WM / WMITER;
    constexpr int WSUBN = WN / WNITER;
    static_assert(WSUBM % TM == 0 && WSUBN % TN == 0 && (WSUBM / TM) * (WSUBN / TN) == 32,
                  "sgemm_10_lean: a warp's 32 lanes must tile WSUBM x WSUBN by TM x TN");
    static_assert(TM % 4 == 0 && TN % 4 == 0, "sgemm_10_lean: TM, TN must be multiples of 4");
    static_assert(BK % 8 == 0, "sgemm_10_lean: BK must be a multiple of 8");
    static_assert(SWZ >= 1 && SPLITK >= 1, "sgemm_10_lean: SWZ, SPLITK must be >= 1");
    static_assert(STAGES >= 2 && STAGES <= 4, "sgemm_10_lean: STAGES must be 2, 3 or 4");
    constexpr int NT = (BM / WM) * (BN / WN) * 32;
    static_assert(NT <= 1024, "sgemm_10_lean: at most 1024 threads");
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

    const int kEnd = min(K, kBegin + numTiles * BK);     // the slice's end
    const int aOff = wr * WM + tr * TM;
    const int bOff = BK * LDA + wc * WN + tc * TN;
    if (bVec)
        sgemm_10_mainloop<BM, BN, BK, WMITER, WNITER, WSUBM, WSUBN, TM, TN, NT, STAGES, true>(
            smem, A, B, M, N, K, m0, n0, kBegin, kEnd, numTiles, tid, aOff, bOff, acc);
    else
        sgemm_10_mainloop<BM, BN, BK, WMITER, WNITER, WSUBM, WSUBN, TM, TN, NT, STAGES, false>(
            smem, A, B, M, N, K, m0, n0, kBegin, kEnd, numTiles, tid, aOff, bOff, acc);

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
