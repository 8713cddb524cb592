// gemmscope rung 01: naive SGEMM, one output element per thread.
//
// ---------------------------------------------------------------------------
// CONTRACT (mirrored exactly by the launcher, the performance model and the
// warp-level address simulator; keep this block in sync with the code)
// ---------------------------------------------------------------------------
//   C = A * B, FP32, all row-major, no alpha/beta:
//     A is M x K  -> A[m*K + k]
//     B is K x N  -> B[k*N + n]
//     C is M x N  -> C[m*N + n]
//   Signature: (const float* A, const float* B, float* C, int M, int N, int K)
//   Correct for any M, N, K >= 1; every C element is written exactly once.
//
//   template<int BX, int BY, int COALESCED> sgemm_01_naive
//   Block  : (BX, BY, 1) threads.  No shared memory.
//   COALESCED = 1:
//     col  = blockIdx.x*BX + threadIdx.x
//     row  = blockIdx.y*BY + threadIdx.y
//     grid = (ceil(N/BX), ceil(M/BY), 1)
//     (consecutive threadIdx.x -> consecutive columns: B and C accesses of a
//      warp are coalesced, A[row*K+k] is a broadcast)
//   COALESCED = 0:
//     row  = blockIdx.x*BX + threadIdx.x
//     col  = blockIdx.y*BY + threadIdx.y
//     grid = (ceil(M/BX), ceil(N/BY), 1)
//     (consecutive threadIdx.x -> consecutive rows: A and C accesses of a
//      warp are strided by K / N floats)
//   Threads with row >= M or col >= N do nothing.
//   Body: acc = 0; for k in [0, K): acc += A[row*K + k] * B[k*N + col];
//         C[row*N + col] = acc.
//
//   The k loop is left to nvcc's default unrolling (no pragma; nvcc 13 for
//   sm_90 unrolls it: 29 FFMA / 58 LDG in the SASS, remainder loops included).
//
//   Indexing: row offsets are formed in 64-bit (long long), so the kernel is
//   safe for matrices with more than 2^31 elements.
// ---------------------------------------------------------------------------

template <int BX, int BY, int COALESCED>
__global__ void sgemm_01_naive(const float* __restrict__ A,
                               const float* __restrict__ B,
                               float* __restrict__ C,
                               int M, int N, int K)
{
    int row, col;
    if (COALESCED) {
        col = blockIdx.x * BX + threadIdx.x;
        row = blockIdx.y * BY + threadIdx.y;
    } else {
        row = blockIdx.x * BX + threadIdx.x;
        col = blockIdx.y * BY + threadIdx.y;
    }
    if (row >= M || col >= N) return;

    const float* __restrict__ a = A + (long long)row * K;   // &A[row*K + 0]
    const float* __restrict__ b = B + col;                   // &B[0*N + col]
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += a[k] * b[(long long)k * N];                   // A[row*K+k] * B[k*N+col]
    }
    C[(long long)row * N + col] = acc;
}
