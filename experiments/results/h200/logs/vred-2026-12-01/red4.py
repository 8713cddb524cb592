# one-off: the split-K epilogue's reductions alone at 512x512, S=16 slices of 128x128 tiles, 256 threads a block,
# each thread 64 values (as 11 steady 128x128x8 w64x64 4x4x2x4: 4 warps? here 256 threads x 64 = 16384 = 128x128)
import cupy as cp, numpy as np
src = r'''
extern "C" __global__ void red_scalar(float* C, int N, int S) {
    int tile = blockIdx.x / S;                 // 16 tiles of 128x128 in a 512x512 C
    int tm = (tile / 4) * 128, tn = (tile % 4) * 128;
    int t = threadIdx.x;                       // 256 threads: 16 rows x 16 col-groups of 4, 8 row-steps x 2 col-steps
    int tr = t / 16, tc = t % 16;
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 2; ++j) {
            int row = tm + i * 16 + tr, col = tn + j * 64 + tc * 4;
            float* p = C + (long long)row * N + col;
            for (int e = 0; e < 4; ++e) atomicAdd(p + e, 1.0f + e);
        }
}
extern "C" __global__ void red_vec(float* C, int N, int S) {
    int tile = blockIdx.x / S;
    int tm = (tile / 4) * 128, tn = (tile % 4) * 128;
    int t = threadIdx.x;
    int tr = t / 16, tc = t % 16;
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 2; ++j) {
            int row = tm + i * 16 + tr, col = tn + j * 64 + tc * 4;
            float4* p = reinterpret_cast<float4*>(C + (long long)row * N + col);
            atomicAdd(p, make_float4(1.0f, 2.0f, 3.0f, 4.0f));
        }
}
'''
m = cp.RawModule(code=src, options=("-std=c++17", "-arch=sm_90"))
ks, kv = m.get_function("red_scalar"), m.get_function("red_vec")
N, S = 512, 16
C = cp.zeros((N, N), dtype=cp.float32)
def t(f):
    for _ in range(3): f()
    ts = []
    for _ in range(30):
        a, b = cp.cuda.Event(), cp.cuda.Event(); a.record(); f(); b.record(); b.synchronize(); ts.append(cp.cuda.get_elapsed_time(a, b) * 1e3)
    return float(np.median(ts))
for S in (8, 16):
    blocks = 16 * S
    C.fill(0); ks((blocks,), (256,), (C, np.int32(N), np.int32(S))); ref = C.copy()
    C.fill(0); kv((blocks,), (256,), (C, np.int32(N), np.int32(S))); ok = bool(cp.allclose(C, ref))
    print(f"S={S}: scalar {t(lambda: ks((blocks,), (256,), (C, np.int32(N), np.int32(S)))):.2f} us, "
          f"vector {t(lambda: kv((blocks,), (256,), (C, np.int32(N), np.int32(S)))):.2f} us, same sums {ok}")
