// gemmscope rung 02: shared-memory tiling, one output element per thread.
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
//   template<int BM, int BN, int BK> sgemm_02_smem
//   NT     = BM*BN threads, block (BN, BM, 1), __launch_bounds__(NT)
//   grid   = (ceil(N/BN), ceil(M/BM), 1)
//   m0 = blockIdx.y*BM, n0 = blockIdx.x*BN
//   tx = threadIdx.x, ty = threadIdx.y, tid = ty*BN + tx
//   Thread output: row = m0 + ty, col = n0 + tx.
//   Shared (static): float As[BM][BK]; float Bs[BK][BN];
//                    bytes = (BM*BK + BK*BN)*4
//   For each K tile k0 = 0, BK, 2BK, ... (ceil(K/BK) tiles):
//     A tile: for (i = tid; i < BM*BK; i += NT) { r = i / BK; c = i % BK;
//               As[r][c] = (m0+r < M && k0+c < K) ? A[(m0+r)*K + k0+c] : 0 }
//     B tile: for (i = tid; i < BK*BN; i += NT) { r = i / BN; c = i % BN;
//               Bs[r][c] = (k0+r < K && n0+c < N) ? B[(k0+r)*N + n0+c] : 0 }
//     __syncthreads()
//     for kk in [0, BK): acc += As[ty][kk] * Bs[kk][tx]
//     __syncthreads()
//   Store: if (row < M && col < N) C[row*N + col] = acc.
//   (The linear loops are written as a constant-trip loop over
//    i = tid + it*NT, it = 0 .. ceil(BM*BK/NT)-1, guarded by i < BM*BK; this
//    is the same index sequence as the loop above, just unrollable.)
//
//   Indexing: per-tile base pointers are formed in 64-bit, offsets inside a
//   tile in 32-bit (safe while BM*K, BK*N, BM*N < 2^31).
// ---------------------------------------------------------------------------

template <int BM, int BN, int BK>
__global__ void __launch_bounds__(BM * BN)
sgemm_02_smem(const float* __restrict__ A,
              const float* __restrict__ B,
              float* __restrict__ C,
              int M, int N, int K)
{
    constexpr int NT = BM * BN;
    static_assert(NT <= 1024, "sgemm_02_smem: BM*BN must be <= 1024");
    constexpr int A_ITERS = (BM * BK + NT - 1) / NT;
    constexpr int B_ITERS = (BK * BN + NT - 1) / NT;

    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];

    const int tx  = threadIdx.x;
    const int ty  = threadIdx.y;
    const int tid = ty * BN + tx;
    const int m0  = blockIdx.y * BM;
    const int n0  = blockIdx.x * BN;

    float acc = 0.0f;

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
                As[r][c] = v;
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
                Bs[r][c] = v;
            }
        }
        __syncthreads();

#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            acc += As[ty][kk] * Bs[kk][tx];
        }
        __syncthreads();
    }

    const int row = m0 + ty;
    const int col = n0 + tx;
    if (row < M && col < N) C[(long long)row * N + col] = acc;
}
