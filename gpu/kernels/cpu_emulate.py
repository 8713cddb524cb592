#!/usr/bin/env python3
"""CPU emulation of the gemmscope SGEMM kernels, under sanitizers (no GPU).

Each kernel file is compiled as host C++ with a tiny CUDA shim:
  * every CUDA thread of a block is a real pthread, __syncthreads() is a
    pthread barrier, blocks run one after another;
  * __shared__ arrays become function statics, the dynamic shared memory is a
    heap buffer of exactly the bytes the contract says (filled with NaN before
    every block, so reading a never-written element shows up in C);
  * float4 is a 16-byte aligned struct, so UBSan's alignment check catches a
    misaligned 128-bit access (global or shared).

Two builds per kernel file:
  asan : -fsanitize=address,undefined  (out-of-bounds global / shared accesses,
         misaligned float4 accesses)
  tsan : -fsanitize=thread             (shared-memory races: a missing or
         misplaced __syncthreads, a double-buffer stage overwritten while
         another thread still reads it, two threads writing one C element)

Rungs 08-10's cp.async is emulated (GEMMSCOPE_HOST_EMULATION, see CP_ASYNC below) in two ways, both built:
  issue : the copy happens when it is issued (the earliest moment the hardware
          may write): a copy into a stage another thread still reads is a race;
  wait  : the copy happens at the cp.async.wait_group that retires its group
          (the latest moment): reading a stage before waiting leaves the NaN
          poison or an old tile in C.
Split-K configs (SPLITK > 1) atomicAdd into C: the driver poisons C, then zeroes
it (as the launcher does) before the launch; blocks run one after another, so a
plain += is an exact emulation of atomicAdd here.

Inputs are small integers, so every FP32 sum is exact and C is compared for
exact equality with a double-precision reference; C is poisoned with NaN
before each launch. Misaligned-pointer variants (A, B, C offset by one float)
check the uniform vector-path predicates of rungs 05/06.

Usage: python3 gpu/kernels/cpu_emulate.py [--only 05] [--build asan|tsan|both]
Needs g++ (C++20) with libasan/libubsan/libtsan. Exit status 1 on any failure.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

R456 = [
    (128, 128, 8, 8, 8), (128, 128, 16, 8, 8), (64, 64, 8, 4, 4), (64, 64, 8, 8, 4),
    (128, 64, 8, 8, 8), (256, 128, 8, 8, 8), (32, 32, 8, 4, 4), (256, 256, 32, 16, 8),
    (128, 128, 32, 8, 8), (64, 64, 16, 4, 4),
]
R78 = [
    (64, 64, 8, 32, 32, 1, 4, 4, 1, 1),        # 128 threads, WMITER 2
    (32, 64, 8, 32, 32, 2, 4, 4, 1, 1),        # 64 threads, WMITER 1
    (128, 128, 16, 64, 32, 2, 4, 4, 1, 1),     # classic: 256 threads, 8x8 per thread
    (128, 128, 16, 64, 64, 4, 8, 4, 1, 1),     # siboehm's kernel 10
    (64, 32, 16, 32, 32, 1, 8, 4, 1, 1),       # TM 8
    (64, 64, 32, 32, 32, 1, 4, 4, 1, 1),       # BK 32
    (64, 64, 8, 32, 32, 1, 4, 4, 3, 1),        # grouped block order
    (64, 64, 8, 32, 32, 1, 4, 4, 1, 3),        # split-K
    (32, 64, 8, 32, 32, 2, 4, 4, 2, 4),        # both
]
def _nt(c):
    """Threads of a warp-tiled config (BM, BN, BK, WM, WN, ...)."""
    return (c[0] // c[3]) * (c[1] // c[4]) * 32


RUNGS = {
    "01": ("01_naive.cu", "sgemm_01_naive",
           [(32, 32, 1), (32, 32, 0), (16, 16, 1), (8, 8, 1), (32, 8, 1), (8, 32, 0)]),
    "02": ("02_smem_tiling.cu", "sgemm_02_smem",
           [(8, 8, 8), (16, 16, 16), (32, 32, 32), (16, 32, 16), (16, 32, 32),
            (32, 16, 32), (8, 32, 32), (8, 8, 4), (16, 8, 12)]),
    "03": ("03_reg1d.cu", "sgemm_03_reg1d",
           [(64, 64, 8, 8), (64, 64, 16, 4), (32, 64, 8, 4), (64, 32, 16, 8)]),
    "04": ("04_reg2d.cu", "sgemm_04_reg2d", R456 + [(64, 64, 8, 2, 2), (32, 64, 4, 4, 2)]),
    "05": ("05_float4.cu", "sgemm_05_float4", R456 + [(64, 32, 4, 4, 4)]),
    "06": ("06_double_buffer.cu", "sgemm_06_dbuf", R456 + [(64, 32, 4, 4, 4)]),
    # (BM, BN, BK, WM, WN, WNITER, TM, TN, SWZ, SPLITK)
    "07": ("07_warptile.cu", "sgemm_07_warptile", R78),
    # ... + STAGES
    "08": ("08_async_pipeline.cu", "sgemm_08_async",
           [c + (3,) for c in R78] + [c + (2,) for c in R78[:4]] + [c + (4,) for c in R78[:3] + R78[-3:]]),
    # rung 08's configs + its classic shape (16 x 8 per thread) at small tiles and split-K
    "09": ("09_bank_aware.cu", "sgemm_09_bank",
           [c + (3,) for c in R78] + [c + (2,) for c in R78[:2]] + [c + (4,) for c in R78[-3:]]
           + [(128, 256, 8, 64, 64, 2, 8, 4, 1, 1, 3), (64, 64, 8, 64, 64, 2, 8, 4, 2, 2, 4)]),
    # rung 08's configs + its fastest geometry (16 x 8 per thread) at small tiles and split-K
    "10": ("10_lean_pipeline.cu", "sgemm_10_lean",
           [c + (3,) for c in R78] + [c + (2,) for c in R78[:2]] + [c + (4,) for c in R78[-3:]]
           + [(128, 256, 8, 64, 64, 2, 4, 4, 1, 1, 3), (64, 64, 8, 64, 64, 2, 4, 4, 2, 2, 4)]),
    # rung 10's configs whose copies divide evenly among the threads (the uniform_copies rule), its fastest
    # geometry at 4096^3 and split-K
    "11": ("11_steady_loop.cu", "sgemm_11_steady",
           [c + (3, 1) for c in R78 if (c[0] * c[2]) % _nt(c) == 0 and (c[2] * c[1] // 4) % _nt(c) == 0]
           + [c + (3, c[2]) for c in R78[:4]] + [c + (2, 2) for c in R78[:2]]
           + [(128, 128, 8, 64, 64, 2, 4, 4, 8, 1, 4, 1), (128, 128, 8, 64, 64, 2, 4, 4, 8, 1, 4, 8),
              (128, 256, 8, 64, 64, 2, 4, 4, 1, 1, 3, 1), (64, 64, 8, 64, 64, 2, 4, 4, 2, 2, 4, 3),
              (128, 128, 8, 64, 64, 2, 4, 4, 1, 3, 2, 1)]),
    # rung 11's split-K configs (the only ones rung 12 admits), its fastest at 512 x 512 x 16384 (split-K 16)
    "12": ("12_vector_reduce.cu", "sgemm_12_vred",
           [c[:9] + (2,) + (3, 1) for c in R78 if (c[0] * c[2]) % _nt(c) == 0 and (c[2] * c[1] // 4) % _nt(c) == 0][:4]
           + [(128, 128, 8, 64, 64, 2, 4, 4, 1, 16, 3, 8), (128, 128, 8, 64, 64, 2, 4, 4, 8, 3, 4, 1),
              (64, 64, 8, 64, 64, 2, 4, 4, 2, 2, 4, 3), (128, 128, 8, 64, 64, 2, 4, 4, 1, 3, 2, 1)]),
}

PRELUDE = r"""
#include <pthread.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <cstdint>
#include <vector>
#include <random>
#include <string>
struct alignas(16) float4 { float x, y, z, w; };
struct dim3 { unsigned x = 1, y = 1, z = 1; };
static thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;
static pthread_barrier_t g_bar;
static void* g_dyn_smem = nullptr;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
static inline void __syncthreads() { pthread_barrier_wait(&g_bar); }
static inline float4 make_float4(float x, float y, float z, float w) { float4 v{x, y, z, w}; return v; }
static inline int min(int a, int b) { return a < b ? a : b; }
// blocks run one after another: a plain read-modify-write is an exact atomicAdd here
static inline float atomicAdd(float* p, float v) { float o = *p; *p = o + v; return o; }
static inline float4 atomicAdd(float4* p, float4 v) {   // sm_90's vector reduction (rung 12)
    float4 o = *p; p->x += v.x; p->y += v.y; p->z += v.z; p->w += v.w; return o;
}

// ---- cp.async emulation (rung 08). CP_ASYNC_AT_WAIT = 0: copy when issued; 1: copy when the
// wait_group that retires the group runs (the latest moment the hardware may complete it).
#define GEMMSCOPE_HOST_EMULATION 1
struct CpCopy { float* dst; const float* src; int bytes; int size; };
static thread_local std::vector<CpCopy> g_cp_open;
static thread_local std::vector<std::vector<CpCopy>> g_cp_groups;
static void cp_do(const CpCopy& c) {
    if (c.size == 16 && ((((uintptr_t)c.dst) & 15) || (c.bytes && (((uintptr_t)c.src) & 15)))) {
        fprintf(stderr, "cp.async 16: misaligned address dst=%p src=%p\n", (void*)c.dst, (const void*)c.src);
        abort();
    }
    if (c.bytes < 0 || c.bytes > c.size) { fprintf(stderr, "cp.async: src size %d > %d\n", c.bytes, c.size); abort(); }
    if (c.bytes) memcpy(c.dst, c.src, c.bytes);
    memset((char*)c.dst + c.bytes, 0, c.size - c.bytes);
}
static void cp_issue(float* dst, const float* src, int bytes, int size) {
    CpCopy c{dst, src, bytes, size};
    if (CP_ASYNC_AT_WAIT) g_cp_open.push_back(c); else cp_do(c);
}
static inline void cp_commit() { g_cp_groups.push_back(g_cp_open); g_cp_open.clear(); }
template <int PENDING> static inline void cp_wait() {
    while ((int)g_cp_groups.size() > PENDING) {
        for (auto& c : g_cp_groups.front()) cp_do(c);
        g_cp_groups.erase(g_cp_groups.begin());
    }
}
static inline void sgemm_08_cp4(float* dst, const float* src, int n) { cp_issue(dst, src, n, 4); }
static inline void sgemm_08_cp16(float* dst, const float* src, int n) { cp_issue(dst, src, n, 16); }
static inline void sgemm_08_commit() { cp_commit(); }
template <int PENDING> static inline void sgemm_08_wait() { cp_wait<PENDING>(); }
static inline void sgemm_09_cp4(float* dst, const float* src, int n) { cp_issue(dst, src, n, 4); }
static inline void sgemm_09_commit() { cp_commit(); }
template <int PENDING> static inline void sgemm_09_wait() { cp_wait<PENDING>(); }
static inline void sgemm_10_cp4(float* dst, const float* src, int n) { cp_issue(dst, src, n, 4); }
static inline void sgemm_10_cp16(float* dst, const float* src, int n) { cp_issue(dst, src, n, 16); }
static inline void sgemm_10_commit() { cp_commit(); }
template <int PENDING> static inline void sgemm_10_wait() { cp_wait<PENDING>(); }
// rungs 11 and 12 share their copy helpers' signatures (unbounded "full" copies besides the zero-filling ones)
#define STEADY_CP_SHIMS(P) \
    static inline void P##_cp4(float* dst, const float* src, int n) { cp_issue(dst, src, n, 4); } \
    static inline void P##_cp16(float* dst, const float* src, int n) { cp_issue(dst, src, n, 16); } \
    static inline void P##_cp4_full(float* dst, const float* src) { cp_issue(dst, src, 4, 4); } \
    static inline void P##_cp16_full(float* dst, const float* src) { cp_issue(dst, src, 16, 16); } \
    static inline void P##_commit() { cp_commit(); } \
    template <int PENDING> static inline void P##_wait() { cp_wait<PENDING>(); }
STEADY_CP_SHIMS(sgemm_11)
STEADY_CP_SHIMS(sgemm_12)
static void cp_check_drained() {
    if (!g_cp_open.empty()) { fprintf(stderr, "cp.async copies issued but never committed\n"); abort(); }
    for (auto& g : g_cp_groups)
        if (!g.empty()) { fprintf(stderr, "cp.async group never waited for\n"); abort(); }
    g_cp_groups.clear();
}
"""

DRIVER = r"""
typedef void (*kern_t)(const float*, const float*, float*, int, int, int);
struct Launch { kern_t k; dim3 grid, block; size_t dyn; const float* A; const float* B; float* C;
                int M, N, K; };
struct TArg { Launch* L; dim3 tid; };
// One pthread per CUDA thread of a block, reused for all blocks of the grid
// (blocks run one after another). Per block: barrier, kernel, barrier; in
// between, thread 0 re-poisons the dynamic shared memory with NaN.
static void* thread_main(void* p) {
    TArg* a = (TArg*)p;
    Launch* L = a->L;
    threadIdx = a->tid; blockDim = L->block; gridDim = L->grid;
    bool t0 = a->tid.x == 0 && a->tid.y == 0 && a->tid.z == 0;
    for (unsigned bz = 0; bz < L->grid.z; ++bz)
    for (unsigned by = 0; by < L->grid.y; ++by)
    for (unsigned bx = 0; bx < L->grid.x; ++bx) {
        if (t0 && L->dyn) {
            float* f = (float*)g_dyn_smem;
            for (size_t i = 0; i < L->dyn / 4; ++i) f[i] = NAN;
        }
        blockIdx.x = bx; blockIdx.y = by; blockIdx.z = bz;
        pthread_barrier_wait(&g_bar);
        L->k(L->A, L->B, L->C, L->M, L->N, L->K);
        cp_check_drained();
        pthread_barrier_wait(&g_bar);
    }
    return nullptr;
}
static void launch(Launch& L) {
    unsigned nt = L.block.x * L.block.y * L.block.z;
    std::vector<pthread_t> th(nt);
    std::vector<TArg> args(nt);
    pthread_attr_t attr; pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1 << 20);
    void* dyn = nullptr;
    if (L.dyn) dyn = aligned_alloc(16, L.dyn);   // exact size (multiple of 16): ASan sees overflow
    g_dyn_smem = dyn;
    pthread_barrier_init(&g_bar, nullptr, nt);
    unsigned t = 0;
    for (unsigned z = 0; z < L.block.z; ++z)
    for (unsigned y = 0; y < L.block.y; ++y)
    for (unsigned x = 0; x < L.block.x; ++x, ++t) {
        args[t].L = &L; args[t].tid.x = x; args[t].tid.y = y; args[t].tid.z = z;
        if (pthread_create(&th[t], &attr, thread_main, &args[t])) { perror("pthread_create"); exit(2); }
    }
    for (unsigned i = 0; i < nt; ++i) pthread_join(th[i], nullptr);
    pthread_barrier_destroy(&g_bar);
    free(dyn);
    pthread_attr_destroy(&attr);
}
static int g_fail = 0, g_pass = 0;
static float* exact_alloc(size_t n) {       // malloc'ed exactly: ASan guards both ends
    return (float*)malloc(n * sizeof(float));
}
// off = 0: 16B-aligned base pointers; off = 1: A, B, C each one float past an aligned base.
static void test(const char* name, kern_t k, dim3 grid, dim3 block, size_t dyn,
                 int M, int N, int K, int off, int zero_c = 0) {
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    float* Ab = exact_alloc(na + off); float* Bb = exact_alloc(nb + off); float* Cb = exact_alloc(nc + off);
    float *A = Ab + off, *B = Bb + off, *C = Cb + off;
    if (off) { Ab[0] = 12345.f; Bb[0] = 12345.f; Cb[0] = 12345.f; }
    std::mt19937 rng(M * 7919 + N * 104729 + K * 31 + off);
    std::uniform_int_distribution<int> d(-3, 3);
    for (size_t i = 0; i < na; ++i) A[i] = (float)d(rng);
    for (size_t i = 0; i < nb; ++i) B[i] = (float)d(rng);
    for (size_t i = 0; i < nc; ++i) C[i] = NAN;
    if (zero_c) for (size_t i = 0; i < nc; ++i) C[i] = 0.0f;   // split-K: the launcher zeroes C
    Launch L{k, grid, block, dyn, A, B, C, M, N, K};
    launch(L);
    size_t bad = 0; long firstm = -1, firstn = -1; double got = 0, want = 0;
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            double ref = 0;
            for (int kk = 0; kk < K; ++kk) ref += (double)A[(size_t)m * K + kk] * B[(size_t)kk * N + n];
            float c = C[(size_t)m * N + n];
            if (!(c == (float)ref)) {
                if (!bad) { firstm = m; firstn = n; got = c; want = ref; }
                ++bad;
            }
        }
    if (off && (Cb[0] != 12345.f)) { ++bad; fprintf(stderr, "  C[-1] overwritten\n"); }
    if (bad) {
        ++g_fail;
        printf("FAIL %s M=%d N=%d K=%d off=%d: %zu bad, first C[%ld][%ld]=%g want %g\n",
               name, M, N, K, off, bad, firstm, firstn, got, want);
    } else {
        ++g_pass;
    }
    free(Ab); free(Bb); free(Cb);
}
static unsigned cdiv(int a, int b) { return (unsigned)((a + b - 1) / b); }
"""


def transform(src):
    src = re.sub(r"//[^\n]*", "", src)          # drop comments (they quote the declarations)
    src = re.sub(r"extern\s+__shared__\s+float4\s+smem4\s*\[\s*\]\s*;",
                 "float4* smem4 = (float4*)g_dyn_smem;", src)
    src = re.sub(r"extern\s+__shared__\s+float\s+smem\s*\[\s*\]\s*;",
                 "float* smem = (float*)g_dyn_smem;", src)
    assert "extern __shared__" not in src
    src = src.replace("__shared__", "static")
    return src


def shapes_for(rung, cfg):
    """(M, N, K) list: exact tiles, tails in every dimension, tiny, K%4/N%4 != 0."""
    if rung == "01":
        bm, bn, bk = (cfg[1], cfg[0], 4) if cfg[2] else (cfg[0], cfg[1], 4)
    else:
        bm, bn, bk = cfg[0], cfg[1], cfg[2]
    extra = []
    if rung in ("07", "08", "09", "10", "11", "12"):
        extra = [(3 * bm + 1, 2 * bn + 1, bk),       # 4 block rows: a partial swizzle group
                 (bm + 5, bn - 3, 7 * bk + 5),       # K over several slices, tails
                 (2 * bm, bn, 2 * bk - 4)]           # K%4 = 0 tail
    s = [
        (1, 1, 1),
        (bm, bn, bk),                    # exactly one tile
        (2 * bm, 2 * bn, 3 * bk),        # multiples, 3 K tiles (dbuf parity wraps)
        (bm + 1, bn + 3, bk + 1),        # tails everywhere, K%4 = 1
        (2 * bm - 3, bn + 4, 2 * bk + 4),  # M tail, N%4 = 0, K%4 = 0 with K tail
        (5, 2 * bn + 2, 3 * bk - 2),     # few rows, N%4 = 2
        (37, 41, 5),                     # odd everything, K < BK possible
        (bm - 1, bn - 1, bk - 1 if bk > 1 else 1),
        (3, 7, 2 * bk + 3),
    ] + extra
    out = []
    for t in s:
        t = tuple(max(1, x) for x in t)
        if t not in out:
            out.append(t)
    return out


def launch_geometry(rung, cfg, M, N, K):
    """C++ expressions for grid, block, dynamic smem bytes (from the contract)."""
    if rung == "01":
        bx, by, co = cfg
        grid = ("cdiv(%d,%d)" % (N, bx), "cdiv(%d,%d)" % (M, by)) if co else \
               ("cdiv(%d,%d)" % (M, bx), "cdiv(%d,%d)" % (N, by))
        return grid, (bx, by), 0
    bm, bn, bk = cfg[:3]
    if rung in ("07", "08", "09", "10", "11", "12"):
        nt = _nt(cfg)
        stages = cfg[10] if rung in ("08", "09", "10", "11", "12") else 2
        dyn = stages * (bk * (bm + 4) + bk * bn) * 4
        return ("cdiv(%d,%d)*cdiv(%d,%d)" % (M, bm, N, bn), "1", str(cfg[9])), (nt, 1), dyn
    grid = ("cdiv(%d,%d)" % (N, bn), "cdiv(%d,%d)" % (M, bm))
    if rung == "02":
        return grid, (bn, bm), 0
    if rung == "03":
        return grid, (bm * bn // cfg[3], 1), (bm * bk + bk * bn) * 4
    nt = (bm // cfg[3]) * (bn // cfg[4])
    dyn = (bm * bk + bk * bn) * 4
    if rung == "06":
        dyn *= 2
    return grid, (nt, 1), dyn


def build_source(rung, cp_at_wait=0):
    fname, kname, cfgs = RUNGS[rung]
    with open(os.path.join(HERE, fname)) as f:
        src = transform(f.read())
    body = ["int main() {"]
    for cfg in cfgs:
        inst = "%s<%s>" % (kname, ",".join(map(str, cfg)))
        for (M, N, K) in shapes_for(rung, cfg):
            offs = [0, 1] if (K % 4 == 0 and N % 4 == 0) else [0]
            for off in offs:
                geo = launch_geometry(rung, cfg, M, N, K)
                (gx, gy, gz), (bx, by), dyn = (geo[0] + ("1",))[:3], geo[1], geo[2]
                zero_c = int(rung in ("07", "08", "09", "10", "11", "12") and cfg[9] > 1)
                body.append(
                    '  { dim3 g; g.x=%s; g.y=%s; g.z=%s; dim3 b; b.x=%d; b.y=%d; '
                    'test("%s", &%s, g, b, %d, %d, %d, %d, %d, %d); }'
                    % (gx, gy, gz, bx, by, inst, inst, dyn, M, N, K, off, zero_c))
    body.append('  printf("%s: %d passed, %d failed\\n", "' + fname + '", g_pass, g_fail);')
    body.append("  return g_fail ? 1 : 0;\n}")
    return ("#define CP_ASYNC_AT_WAIT %d\n" % cp_at_wait) + PRELUDE + "\n" + src + "\n" + DRIVER + "\n" + "\n".join(body) + "\n"


FLAGS = {
    "asan": ["-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
             "-fno-omit-frame-pointer"],
    "tsan": ["-O1", "-fsanitize=thread"],
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", action="append", help="rung number(s), e.g. 05")
    ap.add_argument("--build", default="both", choices=["asan", "tsan", "both"])
    ap.add_argument("--keep", help="directory to keep generated sources in")
    args = ap.parse_args()
    rungs = args.only or sorted(RUNGS)
    builds = ["asan", "tsan"] if args.build == "both" else [args.build]
    failures = 0
    td = args.keep or tempfile.mkdtemp(prefix="gemmscope_emu_")
    os.makedirs(td, exist_ok=True)
    for rung in rungs:
        modes = [(0, "issue"), (1, "wait")] if rung in ("08", "09", "10", "11", "12") else [(0, "")]
        for at_wait, mode in modes:
            tag = rung + ("_" + mode if mode else "")
            src = build_source(rung, at_wait)
            cpp = os.path.join(td, "emu_%s.cpp" % tag)
            with open(cpp, "w") as f:
                f.write(src)
            for b in builds:
                exe = os.path.join(td, "emu_%s_%s" % (tag, b))
                cmd = ["g++", "-std=c++20", "-w", "-pthread"] + FLAGS[b] + ["-o", exe, cpp]
                p = subprocess.run(cmd, capture_output=True, text=True)
                if p.returncode:
                    print("[%s %s] BUILD FAILED\n%s" % (tag, b, p.stderr[-4000:]))
                    failures += 1
                    continue
                env = dict(os.environ)
                env["TSAN_OPTIONS"] = "halt_on_error=1 second_deadlock_stack=1"
                env["ASAN_OPTIONS"] = "detect_leaks=1"
                p = subprocess.run([exe], capture_output=True, text=True, env=env)
                tail = (p.stdout + p.stderr).strip().splitlines()
                ok = p.returncode == 0
                failures += not ok
                print("[%s %s] %s  %s" % (tag, b, "ok  " if ok else "FAIL",
                                           tail[-1] if tail else ""), flush=True)
                if not ok:
                    print("\n".join(tail[-60:]))
    print("%d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
