// gemmscope rung 05: 2-D register tiling with 128-bit (float4) global loads,
// transposed A tile in shared memory, 128-bit shared reads and C stores.
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
//   template<int BM, int BN, int BK, int TM, int TN> sgemm_05_float4
//   Requires BK%4 == 0, TM%4 == 0, TN%4 == 0, BN%4 == 0, BM%TM == 0,
//   BN%TN == 0, NT <= 1024 (static_assert).
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
//   Dynamic shared memory (extern __shared__ float4 smem4[], used as floats):
//     AsT[BK][BM] at float offset 0,     AsT[k][m] = smem[k*BM + m]  (A transposed)
//     Bs [BK][BN] at float offset BM*BK, Bs[k][n]  = smem[BM*BK + k*BN + n]
//     bytes = (BM*BK + BK*BN)*4   (same as rung 04; above 48 KiB the launcher
//     must raise cudaFuncAttributeMaxDynamicSharedMemorySize)
//   Vector-path predicates, uniform, decided once per kernel:
//     aVec = (K % 4 == 0) && (A is 16-byte aligned)
//     bVec = (N % 4 == 0) && (B is 16-byte aligned)
//     cVec = (N % 4 == 0) && (C is 16-byte aligned)
//     (device allocations are 256-byte aligned, so in practice aVec = K%4==0,
//      bVec = cVec = N%4==0.)
//   For each K tile k0 = 0, BK, 2BK, ... (ceil(K/BK) tiles):
//     A tile, BM rows x BK/4 float4s:
//       for (i = tid; i < BM*BK/4; i += NT) { r = i / (BK/4); c4 = i % (BK/4);
//         gm = m0 + r; gk = k0 + 4*c4;
//         if (aVec && gm < M && gk+3 < K) v = float4 at &A[gm*K + gk]     (LDG.128)
//         else v.e = (gm < M && gk+e < K) ? A[gm*K + gk+e] : 0, e=0..3  (scalar LDG)
//         AsT[4*c4+0][r] = v.x; AsT[4*c4+1][r] = v.y;
//         AsT[4*c4+2][r] = v.z; AsT[4*c4+3][r] = v.w;             (4 scalar STS) }
//     B tile, BK rows x BN/4 float4s:
//       for (i = tid; i < BK*BN/4; i += NT) { r = i / (BN/4); c4 = i % (BN/4);
//         gk = k0 + r; gn = n0 + 4*c4;
//         if (bVec && gk < K && gn+3 < N) v = float4 at &B[gk*N + gn]     (LDG.128)
//         else v.e = (gk < K && gn+e < N) ? B[gk*N + gn+e] : 0            (scalar LDG)
//         float4 store of v to &Bs[r][4*c4]                              (STS.128) }
//     __syncthreads()
//     for kk < BK {
//       for i < TM step 4: regA[i..i+3] = float4 at &AsT[kk][ty*TM + i]  (LDS.128)
//       for j < TN step 4: regB[j..j+3] = float4 at &Bs[kk][tx*TN + j]   (LDS.128)
//       for i < TM, j < TN: acc[i][j] += regA[i] * regB[j]
//     }
//     __syncthreads()
//   Store: for i < TM, j < TN step 4: row = m0 + ty*TM + i, col = n0 + tx*TN + j;
//     if (row < M): if (cVec && col+3 < N) float4 store to &C[row*N + col] (STG.128)
//                   else for e < 4: if (col+e < N) C[row*N + col+e] = acc[i][j+e]
//   (The linear loops are written as constant-trip loops over
//    i = tid + it*NT guarded by i < size: same index sequence, unrollable.)
//
//   Indexing: per-tile base pointers are formed in 64-bit, offsets inside a
//   tile in 32-bit (safe while BM*K, BK*N, BM*N < 2^31).
// ---------------------------------------------------------------------------

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), 1)
sgemm_05_float4(const float* __restrict__ A,
                const float* __restrict__ B,
                float* __restrict__ C,
                int M, int N, int K)
{
    static_assert(BK % 4 == 0, "sgemm_05_float4: BK must be a multiple of 4");
    static_assert(TM % 4 == 0, "sgemm_05_float4: TM must be a multiple of 4");
    static_assert(TN % 4 == 0, "sgemm_05_float4: TN must be a multiple of 4");
    static_assert(BN % 4 == 0, "sgemm_05_float4: BN must be a multiple of 4");
    static_assert(BM % TM == 0, "sgemm_05_float4: BM must be a multiple of TM");
    static_assert(BN % TN == 0, "sgemm_05_float4: BN must be a multiple of TN");
    constexpr int NT = (BM / TM) * (BN / TN);
    static_assert(NT <= 1024, "sgemm_05_float4: BM*BN/(TM*TN) must be <= 1024");
    constexpr int A4 = BM * BK / 4;   // float4s in the A tile
    constexpr int B4 = BK * BN / 4;   // float4s in the B tile
    constexpr int A_ITERS = (A4 + NT - 1) / NT;
    constexpr int B_ITERS = (B4 + NT - 1) / NT;

    extern __shared__ float4 smem4[];
    float* smem = reinterpret_cast<float*>(smem4);
    float* AsT = smem;             // AsT[k][m] = AsT[k*BM + m]
    float* Bs  = smem + BM * BK;   // Bs[k][n]  = Bs[k*BN + n]   (BM*BK % 4 == 0: 16B aligned)

    const int tid = threadIdx.x;
    const int tx  = tid % (BN / TN);
    const int ty  = tid / (BN / TN);
    const int m0  = blockIdx.y * BM;
    const int n0  = blockIdx.x * BN;

    const bool aVec = ((K & 3) == 0) && ((reinterpret_cast<unsigned long long>(A) & 15ull) == 0);
    const bool bVec = ((N & 3) == 0) && ((reinterpret_cast<unsigned long long>(B) & 15ull) == 0);
    const bool cVec = ((N & 3) == 0) && ((reinterpret_cast<unsigned long long>(C) & 15ull) == 0);

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

        // ---- A tile: GMEM -> SMEM (transposed) ----
#pragma unroll
        for (int it = 0; it < A_ITERS; ++it) {
            const int i = tid + it * NT;
            if (A4 % NT == 0 || i < A4) {
                const int r = i / (BK / 4);
                const int c = 4 * (i % (BK / 4));
                const bool rowOk = (m0 + r) < M;
                const int gk = k0 + c;
                const float* p = Ak + r * K + c;                 // &A[(m0+r)*K + k0+c]
                float4 v;
                if (aVec && rowOk && gk + 3 < K) {
                    v = *reinterpret_cast<const float4*>(p);
                } else {
                    v.x = (rowOk && gk + 0 < K) ? p[0] : 0.0f;
                    v.y = (rowOk && gk + 1 < K) ? p[1] : 0.0f;
                    v.z = (rowOk && gk + 2 < K) ? p[2] : 0.0f;
                    v.w = (rowOk && gk + 3 < K) ? p[3] : 0.0f;
                }
                AsT[(c + 0) * BM + r] = v.x;
                AsT[(c + 1) * BM + r] = v.y;
                AsT[(c + 2) * BM + r] = v.z;
                AsT[(c + 3) * BM + r] = v.w;
            }
        }
        // ---- B tile: GMEM -> SMEM ----
#pragma unroll
        for (int it = 0; it < B_ITERS; ++it) {
            const int i = tid + it * NT;
            if (B4 % NT == 0 || i < B4) {
                const int r = i / (BN / 4);
                const int c = 4 * (i % (BN / 4));
                const bool rowOk = (k0 + r) < K;
                const int gn = n0 + c;
                const float* p = Bk + r * N + c;                 // &B[(k0+r)*N + n0+c]
                float4 v;
                if (bVec && rowOk && gn + 3 < N) {
                    v = *reinterpret_cast<const float4*>(p);
                } else {
                    v.x = (rowOk && gn + 0 < N) ? p[0] : 0.0f;
                    v.y = (rowOk && gn + 1 < N) ? p[1] : 0.0f;
                    v.z = (rowOk && gn + 2 < N) ? p[2] : 0.0f;
                    v.w = (rowOk && gn + 3 < N) ? p[3] : 0.0f;
                }
                *reinterpret_cast<float4*>(&Bs[r * BN + c]) = v;
            }
        }
        __syncthreads();

        // ---- SMEM -> registers (128-bit), outer products ----
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
