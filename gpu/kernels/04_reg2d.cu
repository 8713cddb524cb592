// gemmscope rung 04: 2-D register tiling (TM x TN outputs per thread).
// Starts from the register-tiling code of the seed note, with its two bugs
// fixed (register arrays declared as regis_A/regis_B but used as
// frag_A/frag_B; accumulators never written back to C).
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
//   template<int BM, int BN, int BK, int TM, int TN> sgemm_04_reg2d
//   Requires BM % TM == 0, BN % TN == 0, NT <= 1024 (static_assert).
//   NT     = BM*BN/(TM*TN) threads, block (NT, 1, 1), __launch_bounds__(NT, 1)
//   __launch_bounds__(NT, 1): the explicit minBlocksPerSM = 1 is deliberate.
//   With __launch_bounds__(NT) alone, ptxas 13 for sm_90 caps the register
//   count to chase occupancy and SPILLS the accumulators (e.g. 64 regs and a
//   spill for <64,64,8,4,4>, 32 regs and 22 KB of spills for
//   <256,256,32,16,8>); with ", 1" it may use up to 65536/NT registers, as the
//   register-tiling design intends. It does not change the launch (NT threads).
//   grid   = (ceil(N/BN), ceil(M/BM), 1)
//   m0 = blockIdx.y*BM, n0 = blockIdx.x*BN, tid = threadIdx.x
//   tx = tid % (BN/TN), ty = tid / (BN/TN)
//   Thread outputs: rows m0 + ty*TM + i (i < TM), cols n0 + tx*TN + j (j < TN).
//   Dynamic shared memory (extern __shared__ float smem[]):
//     As[BM][BK] at smem[0],     As[r][c] = smem[r*BK + c]
//     Bs[BK][BN] at smem[BM*BK], Bs[r][c] = smem[BM*BK + r*BN + c]
//     bytes = (BM*BK + BK*BN)*4   (launcher passes this as shared_mem; above
//     48 KiB the launcher must raise cudaFuncAttributeMaxDynamicSharedMemorySize)
//   For each K tile k0 = 0, BK, 2BK, ... (ceil(K/BK) tiles):
//     A tile: for (i = tid; i < BM*BK; i += NT) { r = i / BK; c = i % BK;
//               As[r][c] = (m0+r < M && k0+c < K) ? A[(m0+r)*K + k0+c] : 0 }
//     B tile: for (i = tid; i < BK*BN; i += NT) { r = i / BN; c = i % BN;
//               Bs[r][c] = (k0+r < K && n0+c < N) ? B[(k0+r)*N + n0+c] : 0 }
//     __syncthreads()
//     for kk < BK {
//       for i < TM: regA[i] = As[ty*TM + i][kk]
//       for j < TN: regB[j] = Bs[kk][tx*TN + j]
//       for i < TM, j < TN: acc[i][j] += regA[i] * regB[j]
//     }
//     __syncthreads()
//   Store: for i < TM, j < TN: row = m0 + ty*TM + i, col = n0 + tx*TN + j;
//          if (row < M && col < N) C[row*N + col] = acc[i][j]   (scalar stores)
//   (The linear loops are written as constant-trip loops over
//    i = tid + it*NT guarded by i < size: same index sequence, unrollable.)
//
//   Indexing: per-tile base pointers are formed in 64-bit, offsets inside a
//   tile in 32-bit (safe while BM*K, BK*N, BM*N < 2^31).
// ---------------------------------------------------------------------------

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), 1)
sgemm_04_reg2d(const float* __restrict__ A,
               const float* __restrict__ B,
               float* __restrict__ C,
               int M, int N, int K)
{
    static_assert(BM % TM == 0, "sgemm_04_reg2d: BM must be a multiple of TM");
    static_assert(BN % TN == 0, "sgemm_04_reg2d: BN must be a multiple of TN");
    constexpr int NT = (BM / TM) * (BN / TN);
    static_assert(NT <= 1024, "sgemm_04_reg2d: BM*BN/(TM*TN) must be <= 1024");
    constexpr int A_ITERS = (BM * BK + NT - 1) / NT;
    constexpr int B_ITERS = (BK * BN + NT - 1) / NT;

    extern __shared__ float smem[];
    float* As = smem;              // As[r][c] = As[r*BK + c]
    float* Bs = smem + BM * BK;    // Bs[r][c] = Bs[r*BN + c]

    const int tid = threadIdx.x;
    const int tx  = tid % (BN / TN);
    const int ty  = tid / (BN / TN);
    const int m0  = blockIdx.y * BM;
    const int n0  = blockIdx.x * BN;

    float regA[TM];
    float regB[TN];
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        const float* __restrict__ Ak = A + (long long)m0 * K + k0;  // &A[m0*K + k0]
        const float* __restrict__ Bk = B + (long long)k0 * N + n0;  // &B[k0*N + n0]

        // ---- stage 1: GMEM -> SMEM (zero-filled outside the matrices) ----
#pragma unroll
        for (int it = 0; it < A_ITERS; ++it) {
            const int i = tid + it * NT;
            if ((BM * BK) % NT == 0 || i < BM * BK) {
                const int r = i / BK;
                const int c = i % BK;
                float v = 0.0f;
                if (m0 + r < M && k0 + c < K) v = Ak[r * K + c];
                As[r * BK + c] = v;
            }
        }
#pragma unroll
        for (int it = 0; it < B_ITERS; ++it) {
            const int i = tid + it * NT;
            if ((BK * BN) % NT == 0 || i < BK * BN) {
                const int r = i / BN;
                const int c = i % BN;
                float v = 0.0f;
                if (k0 + r < K && n0 + c < N) v = Bk[r * N + c];
                Bs[r * BN + c] = v;
            }
        }
        __syncthreads();

        // ---- stage 2: SMEM -> registers, outer products ----
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
            for (int i = 0; i < TM; ++i) regA[i] = As[(ty * TM + i) * BK + kk];
#pragma unroll
            for (int j = 0; j < TN; ++j) regB[j] = Bs[kk * BN + tx * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += regA[i] * regB[j];
        }
        __syncthreads();
    }

    // ---- write back (guarded) ----
    float* __restrict__ Cb = C + (long long)m0 * N + n0;  // &C[m0*N + n0]
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = ty * TM + i;
        if (m0 + r < M) {
#pragma unroll
            for (int j = 0; j < TN; ++j) {
                const int c = tx * TN + j;
                if (n0 + c < N) Cb[r * N + c] = acc[i][j];
            }
        }
    }
}
