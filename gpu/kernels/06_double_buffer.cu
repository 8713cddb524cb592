// gemmscope rung 06: rung 05 + double-buffered shared memory with register
// staging of the next tile's global loads (one __syncthreads per K tile).
//
// ---------------------------------------------------------------------------
// CONTRACT (mirrored exactly by the launcher, the performance model and the
// warp-level address simulator; keep this block in sync with the code)
// ---------------------------------------------------------------------------
//   C = A * B, FP32, all row-major, no alpha/beta:
//     A is M x K -> A[m*K + k];  B is K x N -> B[k*N + n];  C is M x N -> C[m*N + n]
//   Signature: (const float* A, const float* B, float* C, int M, int N, int K)
//   Correct for any M, N, K >= 1; every C element is written exactly once.
//
//   template<int BM, int BN, int BK, int TM, int TN> sgemm_06_dbuf
//   Everything as rung 05 (sgemm_05_float4): same static_asserts, NT, block,
//   __launch_bounds__(NT, 1) (see rung 05 for why the ", 1"),
//   grid, thread layout (tx = tid % (BN/TN), ty = tid / (BN/TN)), outputs,
//   the same aVec/bVec/cVec predicates, the same A/B tile index maps
//   (A: i -> r = i/(BK/4), c4 = i%(BK/4), transposed scalar stores into AsT;
//    B: i -> r = i/(BN/4), c4 = i%(BN/4), float4 store into Bs), the same
//   LDS.128 outer-product loop and the same C store.
//   Dynamic shared memory: two stages, each laid out exactly like rung 05:
//     stage s (s = 0, 1) starts at float offset s*STAGE, STAGE = BM*BK + BK*BN
//       AsT_s[k][m] = smem[s*STAGE + k*BM + m]
//       Bs_s [k][n] = smem[s*STAGE + BM*BK + k*BN + n]
//     bytes = 2*(BM*BK + BK*BN)*4   (above 48 KiB the launcher must raise
//     cudaFuncAttributeMaxDynamicSharedMemorySize)
//   Register staging: float4 ldA[A_ITERS], ldB[B_ITERS] with
//     A_ITERS = ceil((BM*BK/4)/NT), B_ITERS = ceil((BK*BN/4)/NT);
//     slot it of a thread holds float4 index i = tid + it*NT (if i < size).
//   Schedule (T = ceil(K/BK) tiles, tile t covers k0 = t*BK):
//     prologue: global tile 0 -> ldA/ldB -> stage 0; __syncthreads()
//     for t in [0, T):
//       if (t+1 < T) global tile t+1 -> ldA/ldB          (LDGs in flight ...)
//       compute on stage t%2                              (... during the FMAs)
//       if (t+1 < T) ldA/ldB -> stage (t+1)%2
//       __syncthreads()                                   (exactly one per t)
//
//   Why there is no race (B_t = the __syncthreads at the end of iteration t,
//   B_-1 = the one after the prologue):
//   * Write-after-read: in iteration t a thread writes stage (t+1)%2. The
//     last reads of that stage were the compute of iteration t-1 (same
//     parity as t+1), which every thread finished before arriving at
//     B_(t-1); the writes happen after B_(t-1). For t = 0, stage 1 has
//     never been read. The compute of iteration t itself reads only stage
//     t%2, which is different from the stage being written.
//   * Read-after-write: stage (t+1)%2 is read in iteration t+1, after
//     B_t, and all its writes were made before B_t (in iteration t, or in
//     the prologue for stage 0 / t = -1).
//   * Stage t%2 is not written in iteration t by anyone, so concurrent
//     readers in iteration t see a stable tile.
//   The barrier is executed uniformly (T and t are block-uniform).
//
//   Indexing: per-tile base pointers are formed in 64-bit, offsets inside a
//   tile in 32-bit (safe while BM*K, BK*N, BM*N < 2^31).
// ---------------------------------------------------------------------------

// Global tile (k0) -> staging registers. Out-of-range elements are zero.
template <int BM, int BN, int BK, int NT, int A_ITERS, int B_ITERS>
__device__ __forceinline__ void sgemm_06_load_tile(float4 (&ldA)[A_ITERS],
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
            const int r = i / (BK / 4);
            const int c = 4 * (i % (BK / 4));
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

// Staging registers -> one shared-memory stage (AsT transposed, Bs float4).
template <int BM, int BN, int BK, int NT, int A_ITERS, int B_ITERS>
__device__ __forceinline__ void sgemm_06_store_tile(const float4 (&ldA)[A_ITERS],
                                                     const float4 (&ldB)[B_ITERS],
                                                     float* AsT, float* Bs, int tid)
{
    constexpr int A4 = BM * BK / 4;
    constexpr int B4 = BK * BN / 4;
#pragma unroll
    for (int it = 0; it < A_ITERS; ++it) {
        const int i = tid + it * NT;
        if (A4 % NT == 0 || i < A4) {
            const int r = i / (BK / 4);
            const int c = 4 * (i % (BK / 4));
            AsT[(c + 0) * BM + r] = ldA[it].x;
            AsT[(c + 1) * BM + r] = ldA[it].y;
            AsT[(c + 2) * BM + r] = ldA[it].z;
            AsT[(c + 3) * BM + r] = ldA[it].w;
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

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), 1)
sgemm_06_dbuf(const float* __restrict__ A,
              const float* __restrict__ B,
              float* __restrict__ C,
              int M, int N, int K)
{
    static_assert(BK % 4 == 0, "sgemm_06_dbuf: BK must be a multiple of 4");
    static_assert(TM % 4 == 0, "sgemm_06_dbuf: TM must be a multiple of 4");
    static_assert(TN % 4 == 0, "sgemm_06_dbuf: TN must be a multiple of 4");
    static_assert(BN % 4 == 0, "sgemm_06_dbuf: BN must be a multiple of 4");
    static_assert(BM % TM == 0, "sgemm_06_dbuf: BM must be a multiple of TM");
    static_assert(BN % TN == 0, "sgemm_06_dbuf: BN must be a multiple of TN");
    constexpr int NT = (BM / TM) * (BN / TN);
    static_assert(NT <= 1024, "sgemm_06_dbuf: BM*BN/(TM*TN) must be <= 1024");
    constexpr int A_ITERS = (BM * BK / 4 + NT - 1) / NT;
    constexpr int B_ITERS = (BK * BN / 4 + NT - 1) / NT;
    constexpr int STAGE = BM * BK + BK * BN;   // floats per stage (multiple of 4)

    extern __shared__ float4 smem4[];
    float* smem = reinterpret_cast<float*>(smem4);
    // stage s: AsT = smem + s*STAGE, Bs = smem + s*STAGE + BM*BK

    const int tid = threadIdx.x;
    const int tx  = tid % (BN / TN);
    const int ty  = tid / (BN / TN);
    const int m0  = blockIdx.y * BM;
    const int n0  = blockIdx.x * BN;

    const bool aVec = ((K & 3) == 0) && ((reinterpret_cast<unsigned long long>(A) & 15ull) == 0);
    const bool bVec = ((N & 3) == 0) && ((reinterpret_cast<unsigned long long>(B) & 15ull) == 0);
    const bool cVec = ((N & 3) == 0) && ((reinterpret_cast<unsigned long long>(C) & 15ull) == 0);

    float4 ldA[A_ITERS];
    float4 ldB[B_ITERS];
    float regA[TM];
    float regB[TN];
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    const int numTiles = (K + BK - 1) / BK;

    // ---- prologue: tile 0 -> stage 0 ----
    sgemm_06_load_tile<BM, BN, BK, NT, A_ITERS, B_ITERS>(ldA, ldB, A, B, M, N, K,
                                                         m0, n0, 0, tid, aVec, bVec);
    sgemm_06_store_tile<BM, BN, BK, NT, A_ITERS, B_ITERS>(ldA, ldB, smem, smem + BM * BK, tid);
    __syncthreads();

    for (int t = 0; t < numTiles; ++t) {
        const bool hasNext = (t + 1) < numTiles;
        const float* AsT = smem + (t & 1) * STAGE;         // stage t%2
        const float* Bs  = AsT + BM * BK;

        // (1) issue the global loads of tile t+1 into registers
        if (hasNext)
            sgemm_06_load_tile<BM, BN, BK, NT, A_ITERS, B_ITERS>(ldA, ldB, A, B, M, N, K,
                                                                 m0, n0, (t + 1) * BK, tid,
                                                                 aVec, bVec);

        // (2) compute on stage t%2
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                const float4 a = *reinterpret_cast<const float4*>(&AsT[kk * BM + ty * TM + i]);
                regA[i + 0] = a.x; regA[i + 1] = a.y; regA[i + 2] = a.z; regA[i + 3] = a.w;
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const float4 b = *reinterpret_cast<const float4*>(&Bs[kk * BN + tx * TN + j]);
                regB[j + 0] = b.x; regB[j + 1] = b.y; regB[j + 2] = b.z; regB[j + 3] = b.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += regA[i] * regB[j];
        }

        // (3) staged registers -> stage (t+1)%2 (last read in iteration t-1,
        //     before the barrier that ended it: see the race note above)
        if (hasNext) {
            float* nAsT = smem + ((t + 1) & 1) * STAGE;
            sgemm_06_store_tile<BM, BN, BK, NT, A_ITERS, B_ITERS>(ldA, ldB, nAsT, nAsT + BM * BK, tid);
        }
        __syncthreads();
    }

    // ---- write back (float4 where allowed, guarded scalars otherwise) ----
    float* __restrict__ Cb = C + (long long)m0 * N + n0;  // &C[m0*N + n0]
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = ty * TM + i;
        if (m0 + r < M) {
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const int c = tx * TN + j;
                float* p = Cb + r * N + c;                      // &C[(m0+r)*N + n0+c]
                if (cVec && n0 + c + 3 < N) {
                    float4 v;
                    v.x = acc[i][j + 0]; v.y = acc[i][j + 1];
                    v.z = acc[i][j + 2]; v.w = acc[i][j + 3];
                    *reinterpret_cast<float4*>(p) = v;
                } else {
                    if (n0 + c + 0 < N) p[0] = acc[i][j + 0];
                    if (n0 + c + 1 < N) p[1] = acc[i][j + 1];
                    if (n0 + c + 2 < N) p[2] = acc[i][j + 2];
                    if (n0 + c + 3 < N) p[3] = acc[i][j + 3];
                }
            }
        }
    }
}
