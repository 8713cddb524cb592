// gemmscope rung 03: 1-D register tiling, TM outputs (one column) per thread.
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
//   template<int BM, int BN, int BK, int TM> sgemm_03_reg1d
//   Requires BM % TM == 0 and NT <= 1024 (static_assert).
//   NT     = BM*BN/TM threads, block (NT, 1, 1), __launch_bounds__(NT)
//   grid   = (ceil(N/BN), ceil(M/BM), 1)
//   m0 = blockIdx.y*BM, n0 = blockIdx.x*BN, tid = threadIdx.x
//   tc = tid % BN, tr = tid / BN
//   Thread outputs: rows m0 + tr*TM + i (i < TM), column n0 + tc.
//   Dynamic shared memory (extern __shared__ float smem[]):
//     As[BM][BK] at smem[0],   As[r][c] = smem[r*BK + c]
//     Bs[BK][BN] at smem[BM*BK], Bs[r][c] = smem[BM*BK + r*BN + c]
//     bytes = (BM*BK + BK*BN)*4   (launcher passes this as shared_mem)
//   For each K tile k0 = 0, BK, 2BK, ... (ceil(K/BK) tiles):
//     A tile: for (i = tid; i < BM*BK; i += NT) { r = i / BK; c = i % BK;
//               As[r][c] = (m0+r < M && k0+c < K) ? A[(m0+r)*K + k0+c] : 0 }
//     B tile: for (i = tid; i < BK*BN; i += NT) { r = i / BN; c = i % BN;
//               Bs[r][c] = (k0+r < K && n0+c < N) ? B[(k0+r)*N + n0+c] : 0 }
//     __syncthreads()
//     for kk < BK { b = Bs[kk][tc]; for i < TM: acc[i] += As[tr*TM+i][kk] * b; }
//     __syncthreads()
//   Store: for i < TM: if (row < M && col < N) C[row*N + col] = acc[i],
//          row = m0 + tr*TM + i, col = n0 + tc.
//   (The linear loops are written as constant-trip loops over
//    i = tid + it*NT guarded by i < size: same index sequence, unrollable.)
//
//   Indexing: per-tile base pointers are formed in 64-bit, offsets inside a
//   tile in 32-bit (safe while BM*K, BK*N, BM*N < 2^31).
// ---------------------------------------------------------------------------

template <int BM, int BN, int BK, int TM>
__global__ void __launch_bounds__(BM * BN / TM)
sgemm_03_reg1d(const float* __restrict__ A,
               const float* __restrict__ B,
               float* __restrict__ C,
               int M, int N, int K)
{
    static_assert(BM % TM == 0, "sgemm_03_reg1d: BM must be a multiple of TM");
    constexpr int NT = BM * BN / TM;
    static_assert(NT <= 1024, "sgemm_03_reg1d: BM*BN/TM must be <= 1024");
    constexpr int A_ITERS = (BM * BK + NT - 1) / NT;
    constexpr int B_ITERS = (BK * BN + NT - 1) / NT;

    extern __shared__ float smem[];
    float* As = smem;              // As[r][c] = As[r*BK + c]
    float* Bs = smem + BM * BK;    // Bs[r][c] = Bs[r*BN + c]

    const int tid = threadIdx.x;
    const int tc  = tid % BN;
    const int tr  = tid / BN;
    const int m0  = blockIdx.y * BM;
    const int n0  = blockIdx.x * BN;

    float acc[TM];
#pragma unroll
    for (int i = 0; i < TM; ++i) acc[i] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        const float* __restrict__ Ak = A + (long long)m0 * K + k0;  // &A[m0*K + k0]
        const float* __restrict__ Bk = B + (long long)k0 * N + n0;  // &B[k0*N + n0]

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

#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            const float b = Bs[kk * BN + tc];
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                acc[i] += As[(tr * TM + i) * BK + kk] * b;
            }
        }
        __syncthreads();
    }

    const int col = n0 + tc;
    if (col < N) {
        float* __restrict__ Cb = C + (long long)m0 * N + col;  // &C[m0*N + col]
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int r = tr * TM + i;
            if (m0 + r < M) Cb[r * N] = acc[i];
        }
    }
}
