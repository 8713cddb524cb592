// gemmscope rung 12: rung 11 whose split-K slices add their partial tiles into C
// with 16-byte vector reductions. Same tiles, same pipeline, same K loop (rung
// 11's, copied here so that this file reads on its own); what changes is the
// write-back of a split-K slice.
//
// Why (H200, 2026-12-01, eighth session): at 512 x 512 x 16384 the fastest config
// (rung 11, 128x128x8 w64x64 4x4x2x4 s3, split-K 16) reaches 90-92 % of cuBLAS.
// Its 256 blocks end together and each adds its 128 x 128 tile into C with
// scalar atomics: four RED.E.ADD.F32 per float4 of C, a warp's lanes 16 bytes
// apart, so every request touches 16 sectors of which it adds 2 floats. The L2
// reduces about 1.05e11 such sector requests a second (experiments/microbench.py);
// the 16 slices' reductions alone take 35 us of the kernel's 203 (a standalone
// kernel of the same pattern), and 13 us as one 16-byte reduction per float4.
//
// What it adds to rung 11: where C's rows are 16-byte aligned (N % 4 == 0 and C
// aligned), each thread adds each float4 of its accumulators with one vector
// reduction (atomicAdd of a float4 in global memory: compute capability 9.0 and
// newer, #error before): a quarter of the requests, 8 floats a sector. Off the
// vector path the scalar atomics of rung 11. Without split-K rung 12 is rung 11:
// the registry admits it only with SPLITK >= 2.
//
// ---------------------------------------------------------------------------
// CONTRACT (mirrored exactly by the registry, the launcher, the performance
// model and the warp-level address simulator; keep it in sync with the code)
// ---------------------------------------------------------------------------
//   template<int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN,
//            int SWZ, int SPLITK, int STAGES, int SPREAD> sgemm_12_vred
//   Everything as rung 11 (sgemm_11_steady), except the C write-back of a
//   split-K slice: with cVec and col + 3 < N, one atomicAdd(float4*) per
//   (row, col..col+3) instead of four atomicAdd(float*). Compute capability
//   9.0 or newer (#error otherwise; the registry refuses the config first).
// ---------------------------------------------------------------------------

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 900)
#error "rung 12 (vector reductions: atomicAdd of a float4) needs compute capability 9.0 or newer"
#endif

#ifndef GEMMSCOPE_HOST_EMULATION
// 4-byte copy, cached in L1 (.ca); src_bytes 0 zero-fills the destination.
__device__ __forceinline__ void sgemm_12_cp4(float* dst, const float* src, int src_bytes)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" :: "r"(s), "l"(src), "r"(src_bytes));
}
// 16-byte copy bypassing L1 (.cg); src_bytes 0 zero-fills the destination.
__device__ __forceinline__ void sgemm_12_cp16(float* dst, const float* src, int src_bytes)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(s), "l"(src), "r"(src_bytes));
}
// The same copies without a source size: always the full 4 or 16 bytes.
__device__ __forceinline__ void sgemm_12_cp4_full(float* dst, const float* src)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" :: "r"(s), "l"(src));
}
__device__ __forceinline__ void sgemm_12_cp16_full(float* dst, const float* src)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(s), "l"(src));
}
__device__ __forceinline__ void sgemm_12_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int PENDING>
__device__ __forceinline__ void sgemm_12_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(PENDING)); }
#endif

// The copies one thread issues for every tile: source pointers at the slice's first tile (rows of A beyond M
// and columns of B beyond N clamped into the matrix), and, for the depth-checked copies, the first k of the
// thread's A copies. Shared offsets are the thread's base plus compile-time offsets per copy.
template <int BM, int BN, int BK, int NT, bool BVEC>
struct sgemm_12_plan {
    static constexpr int LDA = BM + 4;
    static constexpr int AE = BM * BK;
    static constexpr int A_ITERS = AE / NT;
    static constexpr int BU = BVEC ? BK * BN / 4 : BK * BN;     // B copy units: float4s, or floats
    static constexpr int B_ITERS = BU / NT;
    static constexpr int COPIES = A_ITERS + B_ITERS;
    static constexpr int G = NT / 8;                            // A rows (of 8 k) the block's threads cover per copy
    // copy it of A: e = tid + it*NT, e/8 = tid/8 + it*G; G and BM are powers of two, so the row and the k chunk
    // split into the thread's part and a compile-time part
    static constexpr int a_row(int it) { return (it * G) % BM; }
    static constexpr int a_kc(int it) { return (it * G) / BM; }
    static constexpr int a_off(int it) { return 8 * a_kc(it) * LDA + a_row(it); }
    static constexpr int b_off(int it) { return (BVEC ? 4 : 1) * it * NT; }
    const float* aSrc[A_ITERS];
    const float* bSrc[B_ITERS];
    int aBase;        // shared offset of copy 0 (within a stage)
    int bBase;
    int aK0;          // k of copy 0 within its tile
    int tid;

    __device__ __forceinline__ sgemm_12_plan(const float* __restrict__ A, const float* __restrict__ B,
                                             int M, int N, int K, int m0, int n0, int kBegin, int tid_)
        : tid(tid_)
    {
        static_assert(AE % NT == 0 && BU % NT == 0, "sgemm_12: every thread issues the same copies");
        static_assert((G % BM == 0) || (BM % G == 0), "sgemm_12: NT/8 and BM must divide one another");
        const int k = tid % 8;
        const int r0 = (tid / 8) % BM;
        const int kc0 = (tid / 8) / BM;
        aBase = (8 * kc0 + k) * LDA + r0;
        aK0 = 8 * kc0 + k;
#pragma unroll
        for (int it = 0; it < A_ITERS; ++it) {
            const int row = min(m0 + r0 + a_row(it), M - 1);
            aSrc[it] = A + (long long)row * K + kBegin + aK0 + 8 * a_kc(it);
        }
        bBase = BK * LDA + (BVEC ? 4 : 1) * tid;
#pragma unroll
        for (int it = 0; it < B_ITERS; ++it) {
            const int i = tid + it * NT;
            const int r = BVEC ? i / (BN / 4) : i / BN;
            const int c = BVEC ? 4 * (i % (BN / 4)) : i % BN;
            const int col = min(n0 + c, BVEC ? N - 4 : N - 1);
            bSrc[it] = B + (long long)(kBegin + r) * N + col;
        }
    }

    // Copy q (A's A_ITERS first, then B's) of the tile kOff elements into the slice, into the stage at st.
    // FULL: a full tile inside the slice, no bound; else depth = the tile's valid K (<= 0 past the slice).
    template <bool FULL>
    __device__ __forceinline__ void copy_one(int q, float* st, int kOff, int depth, int N) const
    {
        if (q < A_ITERS) {
            float* dst = st + aBase + a_off(q);
            if (FULL)
                sgemm_12_cp4_full(dst, aSrc[q] + kOff);
            else
                sgemm_12_cp4(dst, aSrc[q] + kOff, aK0 + 8 * a_kc(q) < depth ? 4 : 0);
        } else {
            const int it = q - A_ITERS;
            float* dst = st + bBase + b_off(it);
            const float* src = bSrc[it] + (long long)kOff * N;
            const int r = BVEC ? (tid + it * NT) / (BN / 4) : (tid + it * NT) / BN;
            if (BVEC) {
                if (FULL) sgemm_12_cp16_full(dst, src);
                else sgemm_12_cp16(dst, src, r < depth ? 16 : 0);
            } else {
                if (FULL) sgemm_12_cp4_full(dst, src);
                else sgemm_12_cp4(dst, src, r < depth ? 4 : 0);
            }
        }
    }

    // All copies of one tile (the prologue), depth-checked.
    __device__ __forceinline__ void copy(float* st, int kOff, int depth, int N) const
    {
#pragma unroll
        for (int q = 0; q < COPIES; ++q) copy_one<false>(q, st, kOff, depth, N);
    }
};

// One warp-tiled pass over a shared-memory stage, as rung 10: BK rank-1 updates, fragments of kk+1 loaded
// before the FFMAs of kk, the copies of the tile STAGES-1 ahead spread over the first SPREAD steps.
template <bool FULL, int SPREAD, int BM, int BN, int BK, int WMITER, int WNITER, int WSUBM, int WSUBN, int TM, int TN, class Plan>
__device__ __forceinline__ void sgemm_12_compute(const float* __restrict__ Aw,
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
        if (kk < SPREAD) {                               // this step's share of the next tile's copies
#pragma unroll
            for (int c = kk * Plan::COPIES / SPREAD; c < (kk + 1) * Plan::COPIES / SPREAD; ++c)
                plan.template copy_one<FULL>(c, wst, kOff, depth, N);
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

// The K loop of one block: the prologue puts tiles 0..STAGES-2 in flight; the steady loop computes tile t
// while copying the full tile t+STAGES-1 without a bound; the last iterations copy depth-checked (the partial
// tile, zero-fill past the slice). BVEC: B's 16-byte copies (N % 4 == 0, B 16-byte aligned), else 4-byte ones.
template <int BM, int BN, int BK, int WMITER, int WNITER, int WSUBM, int WSUBN, int TM, int TN, int NT,
          int STAGES, int SPREAD, bool BVEC>
__device__ __forceinline__ void sgemm_12_mainloop(float* smem, const float* __restrict__ A,
                                                  const float* __restrict__ B, int M, int N, int K,
                                                  int m0, int n0, int kBegin, int kEnd, int numTiles, int tid,
                                                  int aOff, int bOff, float (&acc)[WMITER * TM][WNITER * TN])
{
    constexpr int LDA = BM + 4;
    constexpr int STAGE = BK * LDA + BK * BN;
    const sgemm_12_plan<BM, BN, BK, NT, BVEC> plan(A, B, M, N, K, m0, n0, kBegin, tid);
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        plan.copy(smem + s * STAGE, s * BK, min(kEnd - (kBegin + s * BK), BK), N);
        sgemm_12_commit();
    }
    const int nFull = (kEnd - kBegin) / BK;              // full tiles of the slice
    const int nSteady = nFull > STAGES - 1 ? nFull - (STAGES - 1) : 0;   // iterations whose copied tile is full
    int readStage = 0;                                   // t % STAGES
    int writeStage = STAGES - 1;                         // (t + STAGES - 1) % STAGES
    int t = 0;
    for (; t < nSteady; ++t) {
        sgemm_12_wait<STAGES - 2>();
        __syncthreads();
        const int kOff = (t + STAGES - 1) * BK;
        const float* st = smem + readStage * STAGE;
        sgemm_12_compute<true, SPREAD, BM, BN, BK, WMITER, WNITER, WSUBM, WSUBN, TM, TN>(
            st + aOff, st + bOff, acc, plan, smem + writeStage * STAGE, kOff, BK, N);
        sgemm_12_commit();
        readStage = (readStage + 1 == STAGES) ? 0 : readStage + 1;
        writeStage = (writeStage + 1 == STAGES) ? 0 : writeStage + 1;
    }
    for (; t < numTiles; ++t) {
        sgemm_12_wait<STAGES - 2>();
        __syncthreads();
        const int kOff = (t + STAGES - 1) * BK;
        const float* st = smem + readStage * STAGE;
        sgemm_12_compute<false, SPREAD, BM, BN, BK, WMITER, WNITER, WSUBM, WSUBN, TM, TN>(
            st + aOff, st + bOff, acc, plan, smem + writeStage * STAGE, kOff, min(kEnd - (kBegin + kOff), BK), N);
        sgemm_12_commit();
        readStage = (readStage + 1 == STAGES) ? 0 : readStage + 1;
        writeStage = (writeStage + 1 == STAGES) ? 0 : writeStage + 1;
    }
    sgemm_12_wait<0>();
}

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int SWZ, int SPLITK, int STAGES,
          int SPREAD>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
sgemm_12_vred(const float* __restrict__ A,
                const float* __restrict__ B,
                float* __restrict__ C,
                int M, int N, int K)
{
    static_assert(BM % WM == 0 && BN % WN == 0, "sgemm_12_vred: BM%WM and BN%WN must be 0");
    static_assert((WM * WN) % (32 * TM * TN * WNITER) == 0,
                  "sgemm_12_vred: WM*WN must be a multiple of 32*TM*TN*WNITER");
    constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER);
    static_assert(WMITER >= 1 && WM % WMITER == 0 && WN % WNITER == 0,
                  "sgemm_12_vred: WMITER, WNITER must divide WM, WN");
    constexpr int WSUBM = WM / WMITER;
    constexpr int WSUBN = WN / WNITER;
    static_assert(WSUBM % TM == 0 && WSUBN % TN == 0 && (WSUBM / TM) * (WSUBN / TN) == 32,
                  "sgemm_12_vred: a warp's 32 lanes must tile WSUBM x WSUBN by TM x TN");
    static_assert(TM % 4 == 0 && TN % 4 == 0, "sgemm_12_vred: TM, TN must be multiples of 4");
    static_assert(BK % 8 == 0, "sgemm_12_vred: BK must be a multiple of 8");
    static_assert(SWZ >= 1 && SPLITK >= 1, "sgemm_12_vred: SWZ, SPLITK must be >= 1");
    static_assert(STAGES >= 2 && STAGES <= 4, "sgemm_12_vred: STAGES must be 2, 3 or 4");
    static_assert(SPREAD >= 1 && SPREAD <= BK, "sgemm_12_vred: 1 <= SPREAD <= BK");
    constexpr int NT = (BM / WM) * (BN / WN) * 32;
    static_assert(NT <= 1024, "sgemm_12_vred: at most 1024 threads");

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
    // lanes interleaved by 2 (see rung 07's CONTRACT): each 4-lane quad covers 2 x 2 (tr, tc)
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
    constexpr int LDA = BM + 4;
    const int aOff = wr * WM + tr * TM;
    const int bOff = BK * LDA + wc * WN + tc * TN;
    if (bVec)
        sgemm_12_mainloop<BM, BN, BK, WMITER, WNITER, WSUBM, WSUBN, TM, TN, NT, STAGES, SPREAD, true>(
            smem, A, B, M, N, K, m0, n0, kBegin, kEnd, numTiles, tid, aOff, bOff, acc);
    else
        sgemm_12_mainloop<BM, BN, BK, WMITER, WNITER, WSUBM, WSUBN, TM, TN, NT, STAGES, SPREAD, false>(
            smem, A, B, M, N, K, m0, n0, kBegin, kEnd, numTiles, tid, aOff, bOff, acc);

    // ---- write back (as rung 10) ----
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
                            if (cVec && col + 3 < N) {       // one 16-byte reduction (red.global.add.v4.f32)
                                atomicAdd(reinterpret_cast<float4*>(Crow + col),
                                          make_float4(acc[wi * TM + i][wj * TN + j + 0], acc[wi * TM + i][wj * TN + j + 1],
                                                      acc[wi * TM + i][wj * TN + j + 2], acc[wi * TM + i][wj * TN + j + 3]));
                                continue;
                            }
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
