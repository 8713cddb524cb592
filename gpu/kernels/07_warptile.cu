// gemmscope rung 07: warp tiling. Rung 06's double-buffered shared memory,
// with the block's threads grouped by warp: each warp computes a WM x WN
// sub-tile of the block's BM x BN tile, in WMITER x WNITER steps of TM x TN
// per thread; conflict-free shared-memory tile stores (A transposed, its rows
// padded); 128-bit shared reads; the inner k loop's operand registers double
// buffered; optional grouped block order (SWZ) and split-K (SPLITK).
//
// ---------------------------------------------------------------------------
// CONTRACT (mirrored exactly by the registry, the launcher, the performance
// model and the warp-level address simulator; keep it in sync with the code)
// ---------------------------------------------------------------------------
//   C = A * B, FP32, all row-major, no alpha/beta:
//     A is M x K -> A[m*K + k];  B is K x N -> B[k*N + n];  C is M x N -> C[m*N + n]
//   Signature: (const float* A, const float* B, float* C, int M, int N, int K)
//   Correct for any M, N, K >= 1.
//
//   template<int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN,
//            int SWZ, int SPLITK> sgemm_07_warptile
//   NT      = (BM/WM)*(BN/WN)*32 threads, block (NT, 1, 1), __launch_bounds__(NT, 1)
//             (the ", 1" as in rung 05: ptxas must not cap registers and spill)
//   WMITER  = (WM*WN) / (32*TM*TN*WNITER);  WSUBM = WM/WMITER;  WSUBN = WN/WNITER
//   Requires (static_assert): BM%WM == 0, BN%WN == 0, WMITER >= 1 exact,
//     WM%WMITER == 0, WN%WNITER == 0, WSUBM%TM == 0, WSUBN%TN == 0,
//     (WSUBM/TM)*(WSUBN/TN) == 32, TM%4 == 0, TN%4 == 0, BK%8 == 0, NT <= 1024,
//     SWZ >= 1, SPLITK >= 1.
//   Each thread computes (WMITER*TM) x (WNITER*TN) outputs.
//
//   Launch: grid = (gm*gn, 1, SPLITK), gm = ceil(M/BM), gn = ceil(N/BN).
//   Block order (which output tile blockIdx.x computes; blocks are dispatched
//   in increasing blockIdx.x, then blockIdx.z):
//     pid = blockIdx.x
//     SWZ == 1: bm = pid / gn, bn = pid % gn          (row-major, as rungs 02-06)
//     SWZ  > 1: groups of SWZ block rows walked column by column:
//       g = pid / (SWZ*gn); first = g*SWZ; size = min(gm - first, SWZ)
//       r = pid % (SWZ*gn); bm = first + r % size; bn = r / size
//     m0 = bm*BM, n0 = bn*BN
//   Split-K: kTiles = ceil(K/BK), per = ceil(kTiles/SPLITK); slice z = blockIdx.z
//     computes K tiles [z*per, min(kTiles, (z+1)*per)) (none: the block returns);
//     SPLITK == 1: C is stored; SPLITK > 1: each slice atomicAdds its partial sums
//     into C, WHICH THE LAUNCHER MUST ZERO BEFORE EVERY LAUNCH.
//
//   Thread layout: warp = tid/32, lane = tid%32,
//     wr = warp / (BN/WN), wc = warp % (BN/WN)   (warp's tile rows wr*WM.., cols wc*WN..)
//     lanes interleaved by 2 (CUTLASS's RowMajorInterleaved<2>), LC = WSUBN/TN
//     lane columns, LC >= 2 and 32/LC >= 2:
//       tr = (lane / (2*LC))*2 + lane%2,  tc = (lane/2) % LC
//     (otherwise tr = lane / LC, tc = lane % LC). Each 4-lane quad then reads
//     2 A and 2 B addresses, and the two quarter-warps of a half-warp are
//     served by one shared-memory wavefront for A and for B alike; with
//     tc = lane % LC a quad reads 4 different B float4s and every quarter-warp
//     needs its own wavefront (measured on the H200: model/simulate.py).
//   Thread outputs: rows m0 + wr*WM + wi*WSUBM + tr*TM + i  (wi < WMITER, i < TM)
//                   cols n0 + wc*WN + wj*WSUBN + tc*TN + j  (wj < WNITER, j < TN)
//
//   Dynamic shared memory (extern __shared__ float4 smem4[], used as floats):
//     LDA = BM + 4 (A's rows padded by one float4: conflict-free transposed stores)
//     STAGE = BK*LDA + BK*BN floats; two stages, stage s at float offset s*STAGE:
//       AsT_s[k][m] = smem[s*STAGE + k*LDA + m]
//       Bs_s [k][n] = smem[s*STAGE + BK*LDA + k*BN + n]
//     bytes = 2*STAGE*4 (above 48 KiB the launcher raises the dynamic limit)
//   Vector-path predicates, uniform, decided once per kernel:
//     aVec = (K % 4 == 0) && A 16-byte aligned; bVec, cVec likewise with N, B, C
//
//   Global -> shared, per K tile k0 (register staged as rung 06:
//   float4 ldA[A_ITERS], ldB[B_ITERS], A_ITERS = ceil(BM*BK/4/NT), ...):
//     A: float4 index i = tid + it*NT < BM*BK/4, mapped in PAIRS so that two
//        neighbouring lanes read one 32-byte sector and a warp covers 16 rows:
//          s = i % 2, r = (i/2) % BM, c = 4*(2*((i/2)/BM) + s)
//        gm = m0 + r, gk = k0 + c:
//          if (aVec && gm < M && gk+3 < K) v = float4 at &A[gm*K + gk] (LDG.128)
//          else v.e = (gm < M && gk+e < K) ? A[gm*K + gk+e] : 0    (scalar LDG)
//        AsT[c+e][r] = v.e, e = 0..3 (4 scalar STS; with LDA = BM+4 the 32 lanes
//        of a warp hit 32 different banks)
//     B: i = tid + it*NT < BK*BN/4: r = i / (BN/4), c = 4*(i % (BN/4)),
//        gk = k0 + r, gn = n0 + c; float4 (bVec && gk < K && gn+3 < N) or
//        guarded scalars; STS.128 to &Bs[r][c]
//   Schedule (T = the slice's tiles): prologue tile 0 -> stage 0, barrier;
//     for t < T: [t+1 < T: LDG of tile t+1 into ldA/ldB]; compute stage t%2;
//                [t+1 < T: ldA/ldB -> stage (t+1)%2]; __syncthreads()
//     (exactly rung 06's schedule; see its race note)
//   Compute on one stage, for kk < BK (operand registers double buffered:
//   fragments of kk+1 are loaded before the FFMAs of kk):
//     fa[wi*TM + i] = AsT[kk][wr*WM + wi*WSUBM + tr*TM + i]   (LDS.128, i step 4)
//     fb[wj*TN + j] = Bs [kk][wc*WN + wj*WSUBN + tc*TN + j]   (LDS.128, j step 4)
//     acc[wi*TM+i][wj*TN+j] += fa[wi*TM+i] * fb[wj*TN+j]
//   Store: for each output row (guard row < M) and 4 columns j..j+3:
//     SPLITK == 1: float4 store when cVec && col+3 < N, else guarded scalars;
//     SPLITK  > 1: guarded scalar atomicAdd (RED.ADD.F32) per element.
//
//   Indexing: per-tile base pointers in 64-bit, offsets inside a tile in 32-bit.
// ---------------------------------------------------------------------------

template <int BM, int BN, int BK, int NT, int A_ITERS, int B_ITERS>
__device__ __forceinline__ void sgemm_07_load_tile(float4 (&ldA)[A_ITERS],
                                                    float4 (&ldB)[B_ITERS],
                                                    const float* __restrict__ A,
                                                    const float* __restrict__ B,
                                                    int M, int N, int K,
                                                    int m0, int n0, int k0, int tid,
                                                    bool aVec, bool bVec)
{
    constexpr int A4 = BM * BK / 4;
    constexpr int B4 = BK * BN / 4;
    const float* __restrict__ Ak = A + (long long)m0 * K + k0;  // &A[m0*K + k0]
    const float* __restrict__ Bk = B + (long long)k0 * N + n0;  // &B[k0*N + n0]
#pragma unroll
    for (int it = 0; it < A_ITERS; ++it) {
        const int i = tid + it * NT;
        if (A4 % NT == 0 || i < A4) {
            const int h = i >> 1;
            const int r = h % BM;
            const int c = 4 * (2 * (h / BM) + (i & 1));
            const bool rowOk = (m0 + r) < M;
            const int gk = k0 + c;
            const float* p = Ak + r * K + c;                     // &A[(m0+r)*K + k0+c]
            float4 v;
            if (aVec && rowOk && gk + 3 < K) {
                v = *reinterpret_cast<const float4*>(p);
            } else {
                v.x = (rowOk && gk + 0 < K) ? p[0] : 0.0f;
                v.y = (rowOk && gk + 1 < K) ? p[1] : 0.0f;
                v.z = (rowOk && gk + 2 < K) ? p[2] : 0.0f;
                v.w = (rowOk && gk + 3 < K) ? p[3] : 0.0f;
            }
            ldA[it] = v;
        }
    }
#pragma unroll
    for (int it = 0; it < B_ITERS; ++it) {
        const int i = tid + it * NT;
        if (B4 % NT == 0 || i < B4) {
            const int r = i / (BN / 4);
            const int c = 4 * (i % (BN / 4));
            const bool rowOk = (k0 + r) < K;
            const int gn = n0 + c;
            const float* p = Bk + r * N + c;                     // &B[(k0+r)*N + n0+c]
            float4 v;
            if (bVec && rowOk && gn + 3 < N) {
                v = *reinterpret_cast<const float4*>(p);
            } else {
                v.x = (rowOk && gn + 0 < N) ? p[0] : 0.0f;
                v.y = (rowOk && gn + 1 < N) ? p[1] : 0.0f;
                v.z = (rowOk && gn + 2 < N) ? p[2] : 0.0f;
                v.w = (rowOk && gn + 3 < N) ? p[3] : 0.0f;
            }
            ldB[it] = v;
        }
    }
}

template <int BM, int BN, int BK, int NT, int A_ITERS, int B_ITERS>
__device__ __forceinline__ void sgemm_07_store_tile(const float4 (&ldA)[A_ITERS],
                                                     const float4 (&ldB)[B_ITERS],
                                                     float* AsT, float* Bs, int tid)
{
    constexpr int A4 = BM * BK / 4;
    constexpr int B4 = BK * BN / 4;
    constexpr int LDA = BM + 4;
#pragma unroll
    for (int it = 0; it < A_ITERS; ++it) {
        const int i = tid + it * NT;
        if (A4 % NT == 0 || i < A4) {
            const int h = i >> 1;
            const int r = h % BM;
            const int c = 4 * (2 * (h / BM) + (i & 1));
            AsT[(c + 0) * LDA + r] = ldA[it].x;
            AsT[(c + 1) * LDA + r] = ldA[it].y;
            AsT[(c + 2) * LDA + r] = ldA[it].z;
            AsT[(c + 3) * LDA + r] = ldA[it].w;
        }
    }
#pragma unroll
    for (int it = 0; it < B_ITERS; ++it) {
        const int i = tid + it * NT;
        if (B4 % NT == 0 || i < B4) {
            const int r = i / (BN / 4);
            const int c = 4 * (i % (BN / 4));
            *reinterpret_cast<float4*>(&Bs[r * BN + c]) = ldB[it];
        }
    }
}

// One warp-tiled pass over a shared-memory stage: BK rank-1 updates of the
// thread's (WMITER*TM) x (WNITER*TN) accumulators, operand fragments of kk+1
// loaded (LDS.128) before the FFMAs of kk.
template <int BM, int BN, int BK, int WMITER, int WNITER, int WSUBM, int WSUBN, int TM, int TN>
__device__ __forceinline__ void sgemm_07_compute(const float* __restrict__ Aw,
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

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int SWZ, int SPLITK>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
sgemm_07_warptile(const float* __restrict__ A,
                  const float* __restrict__ B,
                  float* __restrict__ C,
                  int M, int N, int K)
{
    static_assert(BM % WM == 0 && BN % WN == 0, "sgemm_07_warptile: BM%WM and BN%WN must be 0");
    static_assert((WM * WN) % (32 * TM * TN * WNITER) == 0,
                  "sgemm_07_warptile: WM*WN must be a multiple of 32*TM*TN*WNITER");
    constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER);
    static_assert(WMITER >= 1 && WM % WMITER == 0 && WN % WNITER == 0,
                  "sgemm_07_warptile: WMITER, WNITER must divide WM, WN");
    constexpr int WSUBM = WM / WMITER;
    constexpr int WSUBN = WN / WNITER;
    static_assert(WSUBM % TM == 0 && WSUBN % TN == 0 && (WSUBM / TM) * (WSUBN / TN) == 32,
                  "sgemm_07_warptile: a warp's 32 lanes must tile WSUBM x WSUBN by TM x TN");
    static_assert(TM % 4 == 0 && TN % 4 == 0, "sgemm_07_warptile: TM, TN must be multiples of 4");
    static_assert(BK % 8 == 0, "sgemm_07_warptile: BK must be a multiple of 8");
    static_assert(SWZ >= 1 && SPLITK >= 1, "sgemm_07_warptile: SWZ, SPLITK must be >= 1");
    constexpr int NT = (BM / WM) * (BN / WN) * 32;
    static_assert(NT <= 1024, "sgemm_07_warptile: at most 1024 threads");
    constexpr int LDA = BM + 4;
    constexpr int A_ITERS = (BM * BK / 4 + NT - 1) / NT;
    constexpr int B_ITERS = (BK * BN / 4 + NT - 1) / NT;
    constexpr int STAGE = BK * LDA + BK * BN;

    extern __shared__ float4 smem4[];
    float* smem = reinterpret_cast<float*>(smem4);

    // ---- which output tile and K slice ----
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

    const bool aVec = ((K & 3) == 0) && ((reinterpret_cast<unsigned long long>(A) & 15ull) == 0);
    const bool bVec = ((N & 3) == 0) && ((reinterpret_cast<unsigned long long>(B) & 15ull) == 0);
    const bool cVec = ((N & 3) == 0) && ((reinterpret_cast<unsigned long long>(C) & 15ull) == 0);

    float4 ldA[A_ITERS];
    float4 ldB[B_ITERS];
    float acc[WMITER * TM][WNITER * TN];
#pragma unroll
    for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = 0.0f;

    // ---- prologue: tile 0 of the slice -> stage 0 ----
    sgemm_07_load_tile<BM, BN, BK, NT, A_ITERS, B_ITERS>(ldA, ldB, A, B, M, N, K, m0, n0, kBegin,
                                                         tid, aVec, bVec);
    sgemm_07_store_tile<BM, BN, BK, NT, A_ITERS, B_ITERS>(ldA, ldB, smem, smem + BK * LDA, tid);
    __syncthreads();

    const int aOff = wr * WM + tr * TM;                  // in AsT rows
    const int bOff = BK * LDA + wc * WN + tc * TN;       // in Bs rows, from the stage start
    for (int t = 0; t < numTiles; ++t) {
        const bool hasNext = (t + 1) < numTiles;
        const float* st = smem + (t & 1) * STAGE;
        if (hasNext)
            sgemm_07_load_tile<BM, BN, BK, NT, A_ITERS, B_ITERS>(ldA, ldB, A, B, M, N, K, m0, n0,
                                                                 kBegin + (t + 1) * BK, tid, aVec, bVec);
        sgemm_07_compute<BM, BN, BK, WMITER, WNITER, WSUBM, WSUBN, TM, TN>(st + aOff, st + bOff, acc);
        if (hasNext) {
            float* nx = smem + ((t + 1) & 1) * STAGE;
            sgemm_07_store_tile<BM, BN, BK, NT, A_ITERS, B_ITERS>(ldA, ldB, nx, nx + BK * LDA, tid);
        }
        __syncthreads();
    }

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
