#!/usr/bin/env python3
"""Compile-only check of the gemmscope SGEMM kernels (no GPU needed).

For every (file, config) it writes a temporary .cu that #includes the kernel
file and adds one explicit instantiation, compiles it with

    nvcc -cubin -arch=sm_XX -std=c++17 --resource-usage

and prints registers, stack frame, spill stores / loads, static shared memory
and the dynamic shared memory the launcher must pass (from the contract).

Optionally (--cuobjdump PATH, with nvdisasm beside it or on PATH) it dumps
the SASS and counts the memory instructions per config (LDG / LDG.128, LDS /
LDS.128, STS, STG, local LDL/STL, FFMA, BAR) over the whole kernel (static
counts, not per iteration).

Optionally (--nvrtc LIB) it also compiles each file the way CuPy will on the
device, through NVRTC with options ("-std=c++17",) and the name expressions,
which catches anything NVRTC rejects (host headers, missing builtins).

Usage:
    python3 gpu/kernels/check_compile.py [--arch sm_90 --arch sm_89]
                                         [--nvrtc /path/libnvrtc.so.13] [-j 2]
Exit status 1 if any compilation fails.
"""
import argparse
import concurrent.futures as cf
import ctypes
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# rung -> (file, kernel name, signature-less configs)
R456 = [
    (128, 128, 8, 8, 8), (128, 128, 16, 8, 8), (64, 64, 8, 4, 4), (64, 64, 8, 8, 4),
    (128, 64, 8, 8, 8), (256, 128, 8, 8, 8), (32, 32, 8, 4, 4), (256, 256, 32, 16, 8),
    (128, 128, 32, 8, 8), (64, 64, 16, 4, 4),
]
# (BM, BN, BK, WM, WN, WNITER, TM, TN, SWZ, SPLITK) of rungs 07-10 (+ STAGES for 08-10)
R78 = [
    (128, 128, 16, 64, 32, 2, 4, 4, 1, 1), (128, 128, 8, 64, 32, 2, 4, 4, 1, 1),
    (128, 128, 16, 32, 64, 2, 4, 4, 1, 1), (128, 128, 16, 64, 64, 4, 8, 4, 1, 1),
    (64, 128, 16, 32, 64, 2, 4, 4, 1, 1), (64, 64, 16, 32, 32, 2, 4, 4, 1, 1),
    (128, 128, 16, 64, 32, 2, 4, 4, 8, 4),
]
RUNGS = [
    ("01_naive.cu", "sgemm_01_naive",
     [(32, 32, 1), (32, 32, 0), (16, 16, 1), (8, 8, 1), (32, 8, 1)]),
    ("02_smem_tiling.cu", "sgemm_02_smem",
     [(8, 8, 8), (16, 16, 16), (32, 32, 32), (16, 32, 16), (32, 16, 32), (8, 32, 32)]),
    # (128,128,8,8) would need 2048 threads per block: not a valid launch, skipped.
    ("03_reg1d.cu", "sgemm_03_reg1d", [(64, 64, 8, 8), (64, 64, 16, 4)]),
    ("04_reg2d.cu", "sgemm_04_reg2d", R456 + [(64, 64, 8, 2, 2)]),
    ("05_float4.cu", "sgemm_05_float4", R456),
    ("06_double_buffer.cu", "sgemm_06_dbuf", R456),
    ("07_warptile.cu", "sgemm_07_warptile", R78),
    ("08_async_pipeline.cu", "sgemm_08_async", [c + (3,) for c in R78] + [R78[0] + (2,), R78[0] + (4,)]),
    ("09_bank_aware.cu", "sgemm_09_bank", [c + (3,) for c in R78] + [(128, 256, 8, 64, 64, 2, 8, 4, 1, 1, 3)]),
    ("10_lean_pipeline.cu", "sgemm_10_lean", [c + (3,) for c in R78] + [(128, 256, 8, 64, 64, 2, 4, 4, 1, 1, 3)]),
    ("11_steady_loop.cu", "sgemm_11_steady", [c + (3, 1) for c in R78[:5]] + [c + (3, c[2]) for c in R78[:2]]
     + [(128, 128, 8, 64, 64, 2, 4, 4, 8, 1, 4, 1)]),
    ("12_vector_reduce.cu", "sgemm_12_vred", [(128, 128, 8, 64, 64, 2, 4, 4, 1, 16, 3, 8),
                                             (64, 64, 8, 64, 64, 2, 4, 4, 2, 2, 4, 3)]),
]
SIG = "(const float*, const float*, float*, int, int, int)"


def _min_arch(fname):
    """The oldest target a kernel file builds for: the bound of its `#if __CUDA_ARCH__ < N` / `#error` guard (0: none)."""
    with open(os.path.join(HERE, fname)) as f:
        m = re.search(r"__CUDA_ARCH__\s*<\s*(\d+)\)?\s*\n#error", f.read())
    return int(m.group(1)) // 10 if m else 0


def _builds_for(fname, arch):
    """A file whose #error guard refuses ``arch`` (rung 12's float4 atomicAdd before sm_90) is not compiled for it."""
    return int(re.sub(r"\D", "", arch) or 0) >= _min_arch(fname)


def threads(kernel, cfg):
    if kernel.startswith("sgemm_01"):
        return cfg[0] * cfg[1]
    if kernel.startswith("sgemm_02"):
        return cfg[0] * cfg[1]
    if kernel.startswith("sgemm_03"):
        return cfg[0] * cfg[1] // cfg[3]
    if kernel.startswith(("sgemm_07", "sgemm_08", "sgemm_09", "sgemm_10", "sgemm_11", "sgemm_12")):
        return (cfg[0] // cfg[3]) * (cfg[1] // cfg[4]) * 32
    return (cfg[0] // cfg[3]) * (cfg[1] // cfg[4])


def dyn_smem(kernel, cfg):
    if kernel.startswith(("sgemm_01", "sgemm_02")):
        return 0
    bm, bn, bk = cfg[:3]
    if kernel.startswith("sgemm_07"):
        return 2 * (bk * (bm + 4) + bk * bn) * 4
    if kernel.startswith(("sgemm_08", "sgemm_09", "sgemm_10", "sgemm_11", "sgemm_12")):
        return cfg[10] * (bk * (bm + 4) + bk * bn) * 4
    per = (bm * bk + bk * bn) * 4
    return 2 * per if kernel.startswith("sgemm_06") else per


def name_expr(kernel, cfg):
    return "%s<%s>" % (kernel, ",".join(str(c) for c in cfg))


SASS_CLASSES = ["LDG", "LDG.128", "LDS", "LDS.128", "STS", "STS.128", "STG", "STG.128",
                "LDL", "STL", "FFMA", "BAR"]


def sass_counts(cuobjdump, cubin):
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(os.path.abspath(cuobjdump)) + os.pathsep + env.get("PATH", "")
    p = subprocess.run([cuobjdump, "--dump-sass", cubin], capture_output=True, text=True, env=env)
    counts = dict.fromkeys(SASS_CLASSES, 0)
    for m in re.finditer(r"\b(LDG|LDS|STS|STG|LDL|STL|FFMA|BAR)((?:\.[A-Z0-9_]+)*)", p.stdout):
        op, mods = m.group(1), m.group(2).split(".")
        if op in ("FFMA", "BAR", "LDL", "STL"):
            counts[op] += 1
        elif "128" in mods:
            counts[op + ".128"] += 1
        else:
            counts[op] += 1
    return counts


def compile_one(fname, kernel, cfg, arch, cuobjdump=None):
    src = '#include "%s"\ntemplate __global__ void %s%s;\n' % (
        os.path.join(HERE, fname), name_expr(kernel, cfg), SIG)
    with tempfile.TemporaryDirectory() as td:
        cu = os.path.join(td, "inst.cu")
        with open(cu, "w") as f:
            f.write(src)
        cmd = ["nvcc", "-cubin", "-arch=" + arch, "-std=c++17", "--resource-usage",
               "-o", os.path.join(td, "x.cubin"), cu]
        p = subprocess.run(cmd, capture_output=True, text=True)
        sass = (sass_counts(cuobjdump, os.path.join(td, "x.cubin"))
                if (cuobjdump and p.returncode == 0) else None)
    out = p.stdout + p.stderr
    res = {"ok": p.returncode == 0, "log": out, "sass": sass}
    m = re.search(r"Used (\d+) registers", out)
    res["regs"] = int(m.group(1)) if m else None
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", out)
    res["stack"], res["spill_st"], res["spill_ld"] = (tuple(int(x) for x in m.groups()) if m
                                                      else (None, None, None))
    m = re.search(r"(\d+) bytes smem", out)
    res["smem"] = int(m.group(1)) if m else 0
    return res


def nvrtc_check(lib_path, arch):
    # the builtins library sits next to libnvrtc; load it first so NVRTC finds it
    d = os.path.dirname(os.path.abspath(lib_path))
    for n in sorted(os.listdir(d)):
        if n.startswith("libnvrtc-builtins.so"):
            ctypes.CDLL(os.path.join(d, n), mode=ctypes.RTLD_GLOBAL)
            break
    lib = ctypes.CDLL(lib_path)
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    failures = 0
    for fname, kernel, cfgs in RUNGS:
        if not _builds_for(fname, arch):
            continue
        with open(os.path.join(HERE, fname)) as f:
            src = f.read().encode()
        prog = ctypes.c_void_p()
        rc = lib.nvrtcCreateProgram(ctypes.byref(prog), src, fname.encode(), 0, None, None)
        assert rc == 0, rc
        exprs = [name_expr(kernel, c) for c in cfgs]
        for e in exprs:
            assert lib.nvrtcAddNameExpression(prog, e.encode()) == 0
        opts = [b"-std=c++17", ("--gpu-architecture=" + arch).encode()]
        arr = (ctypes.c_char_p * len(opts))(*opts)
        rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, buf)
        log = buf.value.decode(errors="replace").strip()
        if rc != 0:
            failures += 1
            print("NVRTC %-22s %s FAILED: %s\n%s" % (fname, arch,
                  lib.nvrtcGetErrorString(rc).decode(), log))
        else:
            missing = []
            for e in exprs:
                low = ctypes.c_char_p()
                if lib.nvrtcGetLoweredName(prog, e.encode(), ctypes.byref(low)) != 0:
                    missing.append(e)
            status = "ok" if not missing else "MISSING " + ", ".join(missing)
            failures += bool(missing)
            print("NVRTC %-22s %s %s (%d name expressions)%s" % (
                fname, arch, status, len(exprs), ("\n  log: " + log) if log else ""))
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", action="append", help="default: sm_90 and sm_89")
    ap.add_argument("--nvrtc", help="path to libnvrtc.so to also check the NVRTC path")
    ap.add_argument("--cuobjdump", help="path to cuobjdump: adds a SASS instruction mix")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    archs = args.arch or ["sm_90", "sm_89"]

    jobs = [(f, k, c, a) for a in archs for f, k, cs in RUNGS for c in cs if _builds_for(f, a)]
    failures = 0
    with cf.ThreadPoolExecutor(args.j) as ex:
        results = list(ex.map(lambda j: compile_one(*j, cuobjdump=args.cuobjdump), jobs))
    cur_arch = None
    for (f, k, c, a), r in zip(jobs, results):
        if a != cur_arch:
            cur_arch = a
            print("\n== %s ==" % a)
            print("%-34s %5s %5s %6s %6s %6s %7s %8s%s" % (
                "kernel<config>", "NT", "regs", "stack", "spillS", "spillL", "smem", "dynsmem",
                ("  | " + " ".join("%7s" % c for c in SASS_CLASSES)) if args.cuobjdump else ""))
        if not r["ok"]:
            failures += 1
            print("%-34s COMPILE FAILED\n%s" % (name_expr(k, c), r["log"]))
            continue
        flag = "  <-- SPILLS" if (r["spill_st"] or r["spill_ld"]) else ""
        mix = ("  | " + " ".join("%7d" % r["sass"][c] for c in SASS_CLASSES)) if r["sass"] else ""
        print("%-34s %5d %5s %6s %6s %6s %7d %8d%s%s" % (
            name_expr(k, c), threads(k, c), r["regs"], r["stack"], r["spill_st"],
            r["spill_ld"], r["smem"], dyn_smem(k, c), mix, flag))
    if args.nvrtc:
        print()
        for a in archs:
            failures += nvrtc_check(args.nvrtc, a)
    print("\n%d failure(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
