"""Compiler facts without a GPU: registers, shared memory, spills and the SASS instruction mix.

Every kernel config is compiled the way CuPy 14 compiles it on the device - NVRTC, straight to a CUBIN
for one ``sm_XX`` - and the CUBIN is read with the CUDA binary utilities:

* **compile** (:func:`compile_program`, :func:`compile_cubin`): the kernel file
  ``gpu/kernels/<Rung.file>``, read fresh on every call, goes through ``nvrtcCompileProgram`` with the
  options CuPy's ``RawModule`` ends up passing (``gpu.launcher.NVRTC_OPTIONS`` = ``-std=c++17``, then
  CuPy's own ``-ftz=true``, ``-arch=sm_XX`` and ``--device-as-default-execution-space``;
  see :data:`CUPY_OPTIONS`) plus ``--ptxas-options=-v`` for the register / spill report in the program
  log (reporting only: it changes no code). Each config's ``name_expression`` is added with
  ``nvrtcAddNameExpression`` and its lowered (mangled) name read back. CuPy compiles one name
  expression per program; to amortise the front end this tool puts up to ``--chunk`` configs of one
  rung in a program (ptxas compiles and allocates each ``__global__`` function on its own, so the code
  of a function does not depend on its neighbours; ``tests/test_facts.py`` checks one against a
  single-expression compile). The CUDA front end's name for the program (CuPy: ``<hash>.cubin.cu``)
  is the kernel file name here; it only appears in diagnostics.
* **resources**: ``cuobjdump --dump-resource-usage`` (REG, STACK, SHARED, LOCAL per function) and the
  ptxas lines of the program log (``Used N registers``, ``N bytes stack frame, N bytes spill stores,
  N bytes spill loads``, ``N bytes smem``). ``SHARED`` in the cubin is the static shared memory plus
  the 1 KiB per block the driver reserves on sm_80 and later (``shared_reserved_bytes``).
* **SASS** (:func:`analyse_sass`): ``nvdisasm -c`` (labelled branch targets), parsed per function into
  instructions; each opcode is reduced to a *family* (:func:`family`): the mnemonic with its modifiers
  stripped (``IMAD.MOV.U32`` -> ``IMAD``, ``FFMA.FTZ`` -> ``FFMA``), except memory instructions, which
  keep their access width (``LDS``, ``LDS.64``, ``LDS.128``, ``LDG`` (= ``LDG.E``/``LDG.E.CONSTANT``),
  ``LDG.128`` (= ``LDG.E.128...``), ``STS.128``, ``STG``, ``LDL``/``STL`` (local memory = spills)).

Main-loop heuristic (:func:`find_main_loop`)
--------------------------------------------
The function's instructions are split into basic blocks (leaders: the entry, every branch target,
every instruction after a ``BRA``/``EXIT``/``RET``/``BRX``/``JMP``); edges follow ``BRA`` targets
(plus the fall-through when the branch is predicated) and fall-throughs. Dominators are computed on
the blocks reachable from the entry; a *back edge* is an edge ``u -> h`` where ``h`` dominates ``u``,
and its *natural loop* is ``h`` plus every block that reaches ``u`` without passing through ``h``
(loops with the same header are merged). This catches out-of-line blocks that the compiler moved
after the loop and that branch back into it. The **main loop** is the loop with the most ``FFMA``
instructions; a loop nested in another with as many FFMAs is dropped (an outer K loop around a rolled
inner loop: per K tile, not per inner iteration), and of sibling loops with as many FFMAs (one K loop
instantiated per operand path: rung 10's B copies by 16-byte or 4-byte ``cp.async``) the one that moves
the most bytes and then has the fewest instructions, the aligned path, as :func:`steady_path` picks
within a loop. ``sass_loop`` counts every instruction of the loop's blocks **once** (a static
count): for a loop body without internal branches (rungs 02-05 at the configs we ship: guarded loads
are predicated) that is exactly one iteration; where the body has internal branches (rung 06's
``if (hasNext)`` prefetch of the next tile) it is the sum over both paths, i.e. the count of an
iteration that takes all of them. ``loop_branches`` counts the conditional branches inside the loop
so a reader can tell.

``sass_loop_path`` is the **steady-state iteration** (:func:`steady_path`): one path through the loop
body from the header to a block that branches back (inner back edges cut), the one that moves the most
global + shared bytes and, among those, has the fewest instructions. That picks the iteration of an
interior tile: 16-byte aligned (one ``LDG.128`` moves what four guarded scalar ``LDG`` move, in fewer
instructions: rungs 05/06's fallback is skipped), not the last tile (rung 06's prefetch moves bytes, so
it is taken), the busiest thread (a guarded extra load round of rung 02/03 is taken). Without branches
in the body, ``sass_loop_path == sass_loop``.

Expected FFMAs per loop iteration (:func:`expected_loop_ffma`): ``BK*TM*TN`` for rungs 02-06 (TM = TN
= 1 for rung 02, TN = 1 for rung 03) - one K tile of the thread's micro-tile - and, for the naive rung
01, the ``#pragma unroll N`` factor read from its source. ``loop_ffma_ok`` is True when they agree;
``loop_tiles`` is ``loop_ffma / expected`` when that is a whole number (the compiler unrolled the K
loop that many times) and None otherwise.

Limits of the heuristic: it is a static count (no trip counts: a rolled inner loop shows once; the
naive rung's remainder loop for ``K % 4`` is a separate, smaller loop and is not counted); predicated-
off instructions count; a loop whose body is not FFMA-dominated is never chosen; indirect branches
(``BRX``/``JMX``, not produced for these kernels) are treated as leaving the function.

Usage::

    python -m tools.compiler_facts --arch sm_90 --configs classic            # table only
    python -m tools.compiler_facts --arch sm_90 --arch sm_89 --configs all --ship --jobs 2
    python -m tools.compiler_facts --arch sm_86 --configs "04:BM=64,BN=64,BK=8,TM=4,TN=4" --out f.json

The shipped cache is ``model/data/compiler_facts/<arch>.json``, read by :mod:`model.facts` (which
needs none of these tools).
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # pragma: no cover - when run as a script
    sys.path.insert(0, str(REPO))

from model.registry import RUNGS, KernelConfig, classic_configs, geometry, grid_configs  # noqa: E402

KERNEL_DIR = REPO / "gpu" / "kernels"
SHIP_DIR = REPO / "model" / "data" / "compiler_facts"
SCHEMA_VERSION = 1

LAUNCHER_OPTIONS = ("-std=c++17",)
"""``gpu.launcher.NVRTC_OPTIONS`` (copied, not imported: ``gpu`` needs CuPy)."""
CUPY_OPTIONS = ("-ftz=true", "--device-as-default-execution-space")
"""What CuPy 14.2 adds (``cupy/cuda/compiler.py``: ``_compile_with_cache_cuda`` appends ``-ftz=true``;
``_compile_using_nvrtc_no_warning`` appends ``-arch=sm_XX`` and ``--device-as-default-execution-space``;
it also adds ``-I<cupy include dir>``, which our self-contained kernels do not need)."""
REPORT_OPTIONS = ("--ptxas-options=-v",)

DEFAULT_ARCHS = ("sm_90", "sm_89", "sm_86", "sm_80")

# The families we ship and sweep (experiments/sweeps/{ladder,blocks,regtile}.toml).
REGTILE_GRID = dict(BM=(32, 64, 128, 256), BN=(32, 64, 128, 256), BK=(8, 16, 32), TM=(2, 4, 8, 16),
                    TN=(2, 4, 8, 16))
SMEM_GRID = dict(BM=(8, 16, 32), BN=(8, 16, 32), BK=(8, 16, 32))
NAIVE_GRID = dict(BX=(8, 16, 32, 64, 128), BY=(8, 16, 32, 64, 128), COALESCED=(0, 1))


class FactsError(RuntimeError):
    """A tool (NVRTC, cuobjdump, nvdisasm) is missing or failed."""


class CompileFailed(FactsError):
    def __init__(self, what: str, log: str) -> None:
        super().__init__(f"{what}: NVRTC compilation failed:\n{log}")
        self.log = log


# --------------------------------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------------------------------


def _nvrtc():
    try:
        from cuda.bindings import nvrtc  # type: ignore
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise FactsError("cuda-bindings is not installed (pip install -r requirements-facts.txt)") from exc
    return nvrtc


def _check(result, what: str):
    err = result[0]
    if int(err) != 0:
        raise FactsError(f"{what}: {err!r}")
    return result[1:] if len(result) > 2 else (result[1] if len(result) == 2 else None)


@functools.lru_cache(maxsize=None)
def nvrtc_version() -> str:
    """NVRTC's own ``major.minor`` (what ``cupy.cuda.nvrtc.getVersion()`` reports on the device)."""
    nv = _nvrtc()
    major, minor = _check(nv.nvrtcVersion(), "nvrtcVersion")
    return f"{major}.{minor}"


@functools.lru_cache(maxsize=None)
def tool_versions() -> dict:
    """Versions of the packages used (for the cache's header)."""
    from importlib import metadata
    out = {"nvrtc": nvrtc_version()}
    for pkg in ("nvidia-cuda-nvrtc", "cuda-bindings", "nvidia-cuda-cuobjdump", "nvidia-cuda-nvdisasm"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


@functools.lru_cache(maxsize=None)
def find_tool(name: str) -> str:
    """Path of ``cuobjdump`` or ``nvdisasm``: ``$GEMMSCOPE_<NAME>``, cuda-pathfinder (pip wheels under
    ``site-packages/nvidia/cu13/bin``), a search of ``site-packages/nvidia``, then ``PATH``."""
    env = os.environ.get(f"GEMMSCOPE_{name.upper()}")
    if env:
        return env
    try:
        from cuda.pathfinder import find_nvidia_binary_utility  # type: ignore
        p = find_nvidia_binary_utility(name)
        if p:
            return p
    except Exception:  # noqa: BLE001 - pathfinder missing or refuses: fall back
        pass
    import site
    for sp in site.getsitepackages() + [site.getusersitepackages()]:
        for cand in sorted(Path(sp).glob(f"nvidia/**/bin/{name}")):
            if os.access(cand, os.X_OK):
                return str(cand)
    p = shutil.which(name)
    if p:
        return p
    raise FactsError(f"{name} not found (pip install -r requirements-facts.txt, or set GEMMSCOPE_{name.upper()})")


def nvrtc_options(arch: str) -> tuple[str, ...]:
    """The NVRTC options of one compile: CuPy's, for ``arch``, plus the ptxas report."""
    if arch != "sm_XX" and not re.fullmatch(r"sm_\d+[a-z]?", arch):
        raise ValueError(f"arch must look like sm_90, got {arch!r}")
    return LAUNCHER_OPTIONS + (CUPY_OPTIONS[0], f"-arch={arch}", CUPY_OPTIONS[1]) + REPORT_OPTIONS


# --------------------------------------------------------------------------------------------------
# Compile
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Compiled:
    cubin: bytes
    log: str
    lowered: Mapping[str, str]   # name expression -> mangled name
    seconds: float
    source_sha256: str           # of the kernel file as compiled (first 16 hex digits)


def compile_program(file: str, name_expressions: Sequence[str], arch: str) -> Compiled:
    """Compile ``gpu/kernels/<file>`` (read now) with NVRTC for ``arch`` and the given name expressions."""
    nv = _nvrtc()
    src = (KERNEL_DIR / file).read_bytes()
    t0 = time.perf_counter()
    prog = _check(nv.nvrtcCreateProgram(src, file.encode(), 0, [], []), "nvrtcCreateProgram")
    try:
        for e in name_expressions:
            _check(nv.nvrtcAddNameExpression(prog, e.encode()), f"nvrtcAddNameExpression({e})")
        opts = [o.encode() for o in nvrtc_options(arch)]
        (err,) = nv.nvrtcCompileProgram(prog, len(opts), opts)
        n = _check(nv.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
        buf = b" " * n
        nv.nvrtcGetProgramLog(prog, buf)
        log = buf.rstrip(b"\0 ").decode(errors="replace")
        if int(err) != 0:
            raise CompileFailed(f"{file} {arch} [{', '.join(name_expressions)}]", log)
        lowered = {}
        for e in name_expressions:
            low = _check(nv.nvrtcGetLoweredName(prog, e.encode()), f"nvrtcGetLoweredName({e})")
            lowered[e] = low.decode() if isinstance(low, bytes) else str(low)
        n = _check(nv.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
        cubin = b" " * n
        _check((nv.nvrtcGetCUBIN(prog, cubin)[0], None), "nvrtcGetCUBIN")
    finally:
        nv.nvrtcDestroyProgram(prog)
    return Compiled(cubin, log, lowered, time.perf_counter() - t0, source_digest(src))


def source_digest(src: bytes) -> str:
    """The digest stored with each fact (``source_sha256``): first 16 hex digits of SHA-256."""
    import hashlib
    return hashlib.sha256(src).hexdigest()[:16]


def compile_cubin(cfg: KernelConfig, arch: str) -> bytes:
    """The CUBIN of one config for ``arch`` (one name expression, as CuPy compiles it)."""
    if cfg.info.file is None:
        raise ValueError(f"{cfg.label} has no kernel file")
    return compile_program(cfg.info.file, [cfg.name_expression], arch).cubin


def config_sass(cfg: KernelConfig, arch: str) -> dict[str, tuple[list[Instr], dict[str, int]]]:
    """The SASS of one config for ``arch``, compiled as CuPy compiles it: {function: (instructions, labels)}."""
    with tempfile.TemporaryDirectory(prefix="gemmscope_sass_") as td:
        path = os.path.join(td, "k.cubin")
        with open(path, "wb") as f:
            f.write(compile_cubin(cfg, arch))
        return disassemble(path)


# --------------------------------------------------------------------------------------------------
# cuobjdump / ptxas log
# --------------------------------------------------------------------------------------------------


def _run(tool: str, *args: str) -> str:
    p = subprocess.run([find_tool(tool), *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise FactsError(f"{tool} {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    return p.stdout


def parse_resource_usage(text: str) -> dict[str, dict[str, int]]:
    """``cuobjdump --dump-resource-usage`` -> {mangled name: {REG, STACK, SHARED, LOCAL, ...}}."""
    out: dict[str, dict[str, int]] = {}
    cur = None
    for line in text.splitlines():
        m = re.match(r"\s*Function (\S+):\s*$", line)
        if m:
            cur = m.group(1)
            continue
        if cur and "REG:" in line:
            out[cur] = {k: int(v) for k, v in re.findall(r"([A-Z_]+(?:\[\d+\])?):(\d+)", line)}
            cur = None
    return out


def parse_ptxas_log(log: str) -> dict[str, dict[str, int]]:
    """The ``--ptxas-options=-v`` lines of an NVRTC program log, per mangled entry function."""
    out: dict[str, dict[str, int]] = {}
    cur = None
    for line in log.splitlines():
        m = re.search(r"(?:Compiling entry function|Function properties for) '?([A-Za-z_]\w*)'?", line)
        if m:
            cur = m.group(1)
            out.setdefault(cur, {})
            continue
        if cur is None:
            continue
        d = out[cur]
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            d["stack"], d["spill_stores"], d["spill_loads"] = (int(x) for x in m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            d["registers"] = int(m.group(1))
            m2 = re.search(r"used (\d+) barriers", line)
            d["barriers"] = int(m2.group(1)) if m2 else 0
            m2 = re.search(r"(\d+) bytes smem", line)
            d["smem"] = int(m2.group(1)) if m2 else 0
    return out


# --------------------------------------------------------------------------------------------------
# SASS
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Instr:
    addr: int
    pred: str | None      # "P0", "!P0", "UP1", "PT", ... or None
    op: str               # full opcode with modifiers, e.g. "LDS.128"
    operands: str
    target: str | None    # branch target label (BRA), else None
    stall: int = 1        # the control code's stall count: cycles before the warp's next issue (1 if unknown)

    @property
    def family(self) -> str:
        """:func:`family` of the opcode; ``NOP`` for an instruction predicated on ``!PT`` (never true):
        ptxas pads ``LDGSTS`` with ``@!PT LDS RZ, [RZ]`` on sm_80 and later, which takes an issue slot but
        reads no shared memory (rungs 08-10: 3 per group of copies)."""
        if self.pred in ("!PT", "!UPT"):
            return "NOP"
        return family(self.op)


MEM_OPS = frozenset({"LDG", "STG", "LDS", "STS", "LDL", "STL", "LD", "ST", "LDC", "ATOM", "ATOMS", "ATOMG",
                     "RED", "LDSM", "LDGSTS"})
WIDTHS = ("U8", "S8", "U16", "S16", "64", "128")


def family(op: str) -> str:
    """Opcode family: modifiers stripped, except a memory instruction's access width.

    >>> family("IMAD.MOV.U32"), family("LDG.E.128.CONSTANT"), family("LDS.64"), family("FFMA.FTZ")
    ('IMAD', 'LDG.128', 'LDS.64', 'FFMA')
    """
    parts = op.split(".")
    base = parts[0]
    if base in MEM_OPS:
        w = [p for p in parts[1:] if p in WIDTHS]
        return base + ("." + w[0] if w else "")
    return base


_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s+(?:@(!?U?P[0-9T]+)\s+)?([A-Z][A-Z0-9_.]*)\s*(.*?)\s*;")
_LABEL = re.compile(r"^(\.?[A-Za-z_$][\w.$]*):\s*$")
_TARGET = re.compile(r"`\(([^)]+)\)")
_SECTION = re.compile(r"^\.text\.(\S+):\s*$")


_HEX_HI = re.compile(r"^\s*/\*\s*0x([0-9a-fA-F]{16})\s*\*/\s*$")


def stall_count(hi_word: int) -> int:
    """The stall count of a Volta-and-later instruction from the high 64 bits of its 128-bit encoding:
    bits 105-108 of the instruction (41-44 of the high word), the cycles the warp waits before it issues
    its next instruction, set by the compiler for fixed-latency dependences (Jia et al., "Dissecting the
    NVIDIA Volta GPU Architecture via Microbenchmarking", 2018, sec. 2.1, control information; the
    same layout on Turing, Ampere and Hopper). A count of 0 issues the next instruction in the next cycle,
    as 1 does."""
    return max(1, (hi_word >> 41) & 0xF)


def _with_stall(instrs: list, line: str) -> bool:
    """The encoding's second line of ``-hex`` output: set the last instruction's stall count."""
    m = _HEX_HI.match(line)
    if not (m and instrs):
        return False
    last = instrs[-1]
    instrs[-1] = Instr(last.addr, last.pred, last.op, last.operands, last.target, stall_count(int(m.group(1), 16)))
    return True


def parse_nvdisasm(text: str) -> dict[str, tuple[list[Instr], dict[str, int]]]:
    """``nvdisasm -c [-hex]`` output -> {function: (instructions, {label: address})}; with ``-hex`` each
    instruction carries its control code's stall count (:func:`stall_count`)."""
    funcs: dict[str, tuple[list[Instr], dict[str, int]]] = {}
    cur = None
    pending: list[str] = []
    for line in text.splitlines():
        if cur is not None and _with_stall(funcs[cur][0], line):
            continue
        m = _SECTION.match(line)
        if m:
            cur = m.group(1)
            funcs[cur] = ([], {})
            pending = []
            continue
        if cur is None:
            continue
        m = _INSTR.match(line)
        if m:
            addr = int(m.group(1), 16)
            instrs, labels = funcs[cur]
            for lab in pending:
                labels[lab] = addr
            pending = []
            op, rest = m.group(3), m.group(4)
            t = _TARGET.search(rest) if family(op) in ("BRA", "BRX", "JMP", "CALL") else None
            instrs.append(Instr(addr, m.group(2), op, rest, t.group(1) if t else None))
            continue
        m = _LABEL.match(line.strip())
        if m and not line.lstrip().startswith((".text", ".section")):
            pending.append(m.group(1))
    return funcs


def parse_cuobjdump_sass(text: str) -> dict[str, tuple[list[Instr], dict[str, int]]]:
    """Fallback: ``cuobjdump --dump-sass`` (absolute branch addresses instead of labels)."""
    funcs: dict[str, tuple[list[Instr], dict[str, int]]] = {}
    cur = None
    for line in text.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            cur = m.group(1)
            funcs[cur] = ([], {})
            continue
        if cur is None:
            continue
        if _with_stall(funcs[cur][0], line):
            continue
        m = _INSTR.match(line)
        if m:
            op, rest = m.group(3), m.group(4)
            tgt = None
            if family(op) in ("BRA", "BRX", "JMP", "CALL"):
                t = re.search(r"0x([0-9a-fA-F]+)", rest)
                if t:
                    tgt = f"0x{int(t.group(1), 16):x}"
                    funcs[cur][1][tgt] = int(t.group(1), 16)
            funcs[cur][0].append(Instr(int(m.group(1), 16), m.group(2), op, rest, tgt))
    return funcs


def disassemble(cubin_path: str) -> dict[str, tuple[list[Instr], dict[str, int]]]:
    try:
        return parse_nvdisasm(_run("nvdisasm", "-c", "-hex", cubin_path))
    except FactsError:
        return parse_cuobjdump_sass(_run("cuobjdump", "--dump-sass", cubin_path))


def _unconditional(i: Instr) -> bool:
    return i.pred is None or i.pred == "PT"


_ENDS_BLOCK = frozenset({"BRA", "BRX", "JMP", "JMX", "EXIT", "RET"})


@dataclass
class Block:
    start: int          # index of the first instruction
    end: int            # index past the last
    succ: tuple[int, ...] = ()


def basic_blocks(instrs: Sequence[Instr], labels: Mapping[str, int]) -> list[Block]:
    """Split into basic blocks with successor lists (indices into the returned list)."""
    n = len(instrs)
    if n == 0:
        return []
    index_of = {ins.addr: k for k, ins in enumerate(instrs)}
    leaders = {0}
    for k, ins in enumerate(instrs):
        if ins.family in _ENDS_BLOCK and k + 1 < n:
            leaders.add(k + 1)
        if ins.target is not None and ins.family != "CALL" and labels.get(ins.target) in index_of:
            leaders.add(index_of[labels[ins.target]])
    starts = sorted(leaders)
    blocks = [Block(s, e) for s, e in zip(starts, starts[1:] + [n])]
    block_at = {b.start: bi for bi, b in enumerate(blocks)}
    for bi, b in enumerate(blocks):
        last = instrs[b.end - 1]
        nxt = bi + 1 if bi + 1 < len(blocks) else None
        fam = last.family
        succ: list[int] = []
        if last.pred == "!PT":          # never taken
            succ = [nxt] if nxt is not None else []
        elif fam == "BRA":
            tgt = labels.get(last.target) if last.target else None
            if tgt in index_of:
                succ.append(block_at[index_of[tgt]])
            if not _unconditional(last) and nxt is not None:
                succ.append(nxt)
        elif fam in _ENDS_BLOCK:        # EXIT, RET, indirect jumps: leave the function
            if not _unconditional(last) and nxt is not None:
                succ.append(nxt)
        elif nxt is not None:
            succ.append(nxt)
        b.succ = tuple(dict.fromkeys(succ))
    return blocks


def _reachable(blocks: Sequence[Block]) -> set[int]:
    seen, todo = {0}, [0]
    while todo:
        for s in blocks[todo.pop()].succ:
            if s not in seen:
                seen.add(s)
                todo.append(s)
    return seen


def dominators(blocks: Sequence[Block]) -> dict[int, set[int]]:
    reach = _reachable(blocks)
    preds: dict[int, set[int]] = {b: set() for b in reach}
    for b in reach:
        for s in blocks[b].succ:
            preds[s].add(b)
    dom = {b: set(reach) for b in reach}
    dom[0] = {0}
    changed = True
    order = sorted(reach)
    while changed:
        changed = False
        for b in order:
            if b == 0:
                continue
            ps = [dom[p] for p in preds[b]]
            new = (set.intersection(*ps) if ps else set()) | {b}
            if new != dom[b]:
                dom[b] = new
                changed = True
    return dom


def natural_loops(blocks: Sequence[Block]) -> dict[int, set[int]]:
    """{header block: body blocks} of every natural loop (back edges with one header merged)."""
    dom = dominators(blocks)
    preds: dict[int, set[int]] = {b: set() for b in dom}
    for b in dom:
        for s in blocks[b].succ:
            preds[s].add(b)
    loops: dict[int, set[int]] = {}
    for u in dom:
        for h in blocks[u].succ:
            if h in dom[u]:           # back edge u -> h
                body = loops.setdefault(h, {h})
                todo = [u] if u not in body else []
                body.add(u)
                while todo:
                    x = todo.pop()
                    for p in preds[x]:
                        if p not in body:
                            body.add(p)
                            todo.append(p)
    return loops


def _main_loop(instrs: Sequence[Instr], labels: Mapping[str, int]):
    """(blocks, header block, body block set) of the main loop, or None (see the module doc)."""
    found = _main_loop_siblings(instrs, labels)
    return None if found is None else found[:3]


def _main_loop_siblings(instrs: Sequence[Instr], labels: Mapping[str, int]):
    """As :func:`_main_loop`, plus whether sibling loops with as many FFMAs were set aside."""
    blocks = basic_blocks(instrs, labels)
    loops = natural_loops(blocks)
    ffma = {h: sum(1 for b in body for k in range(blocks[b].start, blocks[b].end) if instrs[k].family == "FFMA")
            for h, body in loops.items()}
    if not ffma or max(ffma.values()) == 0:
        return None
    top = max(ffma.values())
    cands = [h for h in loops if ffma[h] == top]
    # an inner loop nested in another candidate is part of it: the outer one is the K tile
    cands = [h for h in cands if not any(g != h and loops[h] < loops[g] for g in cands)]

    def steady(h: int) -> tuple[int, int]:
        ins = [instrs[k] for b in loops[h] for k in range(blocks[b].start, blocks[b].end)]
        return sum(moved_bytes(i.family) for i in ins), -len(ins)

    # sibling loops with the same FFMAs (one K loop instantiated per operand path, rung 10's B copies by
    # 16-byte or 4-byte cp.async): the aligned path, as for the steady path within a loop (steady_path)
    h = max(cands, key=steady)
    return blocks, h, loops[h], len(cands) > 1


def _around(blocks: Sequence[Block], h: int, body: set[int]) -> tuple[set[int], set[int]]:
    """(prologue, epilogue) blocks of the loop (header h, body): the blocks on a path from the entry to
    the header, and those reachable from the loop's exits. Blocks of a sibling path (the other operand
    path's copy of the loop) are in neither."""
    pred: dict[int, list[int]] = {b: [] for b in range(len(blocks))}
    for b, blk in enumerate(blocks):
        for t in blk.succ:
            pred[t].append(b)
    reach = _reachable(blocks)
    pro, todo = set(), [p for p in pred[h] if p not in body]
    while todo:
        b = todo.pop()
        if b in pro or b in body or b not in reach:
            continue
        pro.add(b)
        todo.extend(pred[b])
    epi, todo = set(), [t for b in body for t in blocks[b].succ if t not in body]
    while todo:
        b = todo.pop()
        if b in epi or b in body:
            continue
        epi.add(b)
        todo.extend(blocks[b].succ)
    return pro, epi


def find_main_loop(instrs: Sequence[Instr], labels: Mapping[str, int]) -> tuple[list[int], int] | None:
    """Instruction indices of the main loop (see the module doc) and its header's index, or None."""
    found = _main_loop(instrs, labels)
    if found is None:
        return None
    blocks, h, body = found
    return sorted(k for b in body for k in range(blocks[b].start, blocks[b].end)), blocks[h].start


_WIDTH_BYTES = {"": 4, "U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16}


def moved_bytes(fam: str) -> int:
    """Bytes one thread moves with one global or shared load/store (or cp.async copy, ``LDGSTS``) of this
    family (0 for other families, local memory and the never-executed ``NOP`` padding included)."""
    base, _, width = fam.partition(".")
    if base not in ("LDG", "STG", "LDS", "STS", "LDGSTS"):
        return 0
    return _WIDTH_BYTES.get(width, 4)


def _reverse_postorder(starts: Sequence[int], succ: Mapping[int, Sequence[int]]) -> list[int]:
    """The blocks reachable from ``starts`` along ``succ`` (an acyclic graph: back edges already cut), in a
    topological order (reverse post-order of an iterative depth-first search)."""
    order: list[int] = []
    seen: set[int] = set()
    for s0 in starts:
        if s0 in seen:
            continue
        seen.add(s0)
        stack = [(s0, iter(succ[s0]))]
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                order.append(node)
            elif nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, iter(succ[nxt])))
    order.reverse()
    return order


def _best_paths(order: Sequence[int], succ: Mapping[int, Sequence[int]], starts: Sequence[int],
                score) -> dict[int, tuple[tuple[int, ...], int | None]]:
    """{block: (the best path's summed score to it, the block before it)} over an acyclic graph in topological
    ``order``, paths beginning at ``starts``; ``score(block)`` is a tuple, summed element by element along a path and
    compared as tuples (e.g. (bytes moved, -instructions): the most bytes, then the fewest instructions)."""
    best: dict[int, tuple[tuple[int, ...], int | None]] = {}
    for b in order:
        if b in starts and (b not in best or score(b) > best[b][0]):
            best[b] = (score(b), None)
        if b not in best:
            continue
        acc, _ = best[b]
        for t in succ[b]:
            cand = (tuple(x + y for x, y in zip(acc, score(t))), b)
            if t not in best or cand[0] > best[t][0]:
                best[t] = cand
    return best


def steady_path(instrs: Sequence[Instr], blocks: Sequence[Block], h: int, body: set[int],
                longest: bool = False) -> list[int] | None:
    """Blocks of the loop's *steady-state* path: from the header to a block that branches back, the path
    that moves the most global + shared bytes (cp.async copies included), and of those the one with the
    fewest instructions (``longest``: the most - the *element path*, below).

    Where the body branches (rung 05/06 fall back to guarded scalar loads when A, B are not 16-byte
    aligned, rung 06 skips the prefetch on the last tile, rung 02 guards a partial load round), this is
    the iteration of an interior tile: aligned (one LDG.128 moves as many bytes as four scalar LDGs, and
    is shorter), not the last (the prefetch moves bytes), the busiest thread (the guarded round taken).
    With ``longest`` the same bytes by the longest path: the guarded element loads a kernel falls back to when
    A's or B's rows are not 16-byte aligned (K or N not a multiple of 4), where it has such a branch.
    Inner back edges are cut, so a rolled inner loop counts once."""
    dom = dominators(blocks)
    succ = {b: [s for s in blocks[b].succ if s in body and s != h and s not in dom[b]] for b in body}
    latches = {b for b in body if h in blocks[b].succ}
    order = _reverse_postorder([h], succ)          # topological order of the acyclic graph from the header

    def score(b: int) -> tuple[int, int]:
        ins = instrs[blocks[b].start:blocks[b].end]
        return sum(moved_bytes(i.family) for i in ins), (len(ins) if longest else -len(ins))

    best = _best_paths(order, succ, [h], score)
    ends = [b for b in latches if b in best]
    if not ends:
        return None
    end = max(ends, key=lambda b: best[b][0])
    path = []
    cur: int | None = end
    while cur is not None:
        path.append(cur)
        cur = best[cur][1]
    return path[::-1]


def stored_bytes(ins: Instr) -> int:
    """Bytes one thread writes to global memory with one store or reduction (``STG``, ``REDG``/``RED``, ``ATOMG``;
    0 for other instructions). nvdisasm prints a vector reduction's width after the op (``REDG.E.ADD.F32 x4.FTZ...``):
    16 bytes for ``x4``, 8 for ``x2``."""
    fam = ins.family
    if fam.startswith("STG"):
        return moved_bytes(fam)
    if fam.startswith(("REDG", "RED", "ATOMG")):
        o = ins.operands.lstrip()
        return 16 if o.startswith("x4") else 8 if o.startswith("x2") else 4
    return 0


def epilogue_path(instrs: Sequence[Instr], blocks: Sequence[Block], h: int, body: set[int]) -> dict[str, int] | None:
    """What an interior block runs after the main loop (header ``h``, ``body``): ``epilogue_path_instructions``, the
    instructions of the path from the loop's exit to the end that stores the most bytes with the fewest instructions
    (the interior tile's aligned stores; the guarded element paths of edge tiles and unaligned rows store as much with
    more instructions), without the loops after the main loop that compute K tiles (``epilogue_tile_loop_instructions``:
    rung 11/12 drain the pipeline's last STAGES - 1 tiles in a second loop; its iterations are K tiles, which the timing
    model counts as such). Back edges are cut, so a rolled loop that stores counts once. None without an exit path."""
    pro, epi = _around(blocks, h, body)
    if not epi:
        return None
    dom = dominators(blocks)
    tile_loop: set[int] = set()
    for lh, lb in natural_loops(blocks).items():
        if lh in epi and any(instrs[k].family == "FFMA" for b in lb for k in range(blocks[b].start, blocks[b].end)):
            tile_loop |= lb
    succ = {b: [s for s in blocks[b].succ if s in epi and s not in dom[b]] for b in epi}
    starts = sorted({t for b in body for t in blocks[b].succ if t in epi})
    order = _reverse_postorder(starts, succ)

    def score(b: int) -> tuple[int, int]:
        ins = instrs[blocks[b].start:blocks[b].end]
        return sum(stored_bytes(i) for i in ins), -(0 if b in tile_loop else len(ins))

    best = _best_paths(order, succ, starts, score)
    ends = [b for b in best if not succ[b]]
    if not ends:
        return None
    (_, neg), _ = best[max(ends, key=lambda b: best[b][0])]
    return {"epilogue_path_instructions": -neg,
            "epilogue_tile_loop_instructions": sum(blocks[b].end - blocks[b].start for b in tile_loop)}


def _hist(instrs: Iterable[Instr]) -> dict[str, int]:
    h: dict[str, int] = {}
    for i in instrs:
        f = i.family
        h[f] = h.get(f, 0) + 1
    return dict(sorted(h.items()))


def strip_padding(instrs: list[Instr], labels: Mapping[str, int]) -> list[Instr]:
    """Drop the trailing ``BRA self`` + ``NOP`` padding after the function's last instruction."""
    out = list(instrs)
    while out and (out[-1].family == "NOP"
                   or (out[-1].family == "BRA" and out[-1].target is not None
                       and labels.get(out[-1].target) == out[-1].addr)):
        out.pop()
    return out



# --------------------------------------------------------------------------------------------------
# Main-loop structure: one warp's in-order issue with a register scoreboard
# --------------------------------------------------------------------------------------------------

TRACE_GLOBAL_LATENCIES = tuple(range(0, 1601, 100))
"""Global-load latencies (cycles) at which the single-warp iteration time is tabulated."""
TRACE_SHARED_LATENCIES = (20, 40)
"""Shared-load latencies (cycles) of the table's second axis (the model interpolates between them)."""
ALU_LATENCY_CYCLES = 4
"""Dependent-issue latency of FFMA / integer ALU instructions: 4 cycles on sm_70 and later (Jia et al.,
"Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking", 2018, Table 4.1; Ampere and Hopper
microbenchmarks give the same 4 cycles, and experiments/microbench.py measures 4.1 on the H200)."""
CONST_LATENCY_CYCLES = 10
"""LDC / S2R / S2UR result latency (constant cache hit, special registers): a short fixed estimate."""

_NO_DEST = frozenset({"STS", "STG", "STL", "ST", "BAR", "BRA", "BSSY", "BSYNC", "EXIT", "RET", "DEPBAR",
                      "LDGDEPBAR", "LDGSTS", "RED", "NOP", "MEMBAR", "WARPSYNC", "CCTL", "YIELD", "ATOMS",
                      "ISETP", "FSETP", "PLOP3", "VOTE", "BMOV", "CALL", "JMP", "ERRBAR", "ARRIVES", "SYNCS"})
_REG = re.compile(r"(?<![A-Za-z0-9_])R(\d+)(\.64|\.128)?")


def _dest_width(op: str) -> int:
    parts = op.split(".")
    if "128" in parts:
        return 4
    if "64" in parts or "WIDE" in parts or parts[0] == "CS2R":
        return 2
    return 1


def _operands(ins: Instr) -> tuple[list[int], list[int]]:
    """(destination registers, source registers) of one instruction (general registers only)."""
    base = ins.op.split(".")[0]
    toks = [t.strip() for t in ins.operands.split(",")]
    dest: list[int] = []
    start = 0
    if base not in _NO_DEST and toks and re.fullmatch(r"R\d+", toks[0] or ""):
        r0 = int(toks[0][1:])
        dest = list(range(r0, r0 + _dest_width(ins.op)))
        start = 1
    srcs: list[int] = []
    for t in toks[start:]:
        for m in _REG.finditer(t):
            r = int(m.group(1))
            w = 2 if m.group(2) == ".64" else 4 if m.group(2) == ".128" else 1
            # a stored register of a vector store carries the store's width
            if base in ("STS", "STG", "STL", "ST") and not t.startswith("[") and w == 1:
                w = _dest_width(ins.op)
            srcs.extend(range(r, r + w))
    return dest, srcs


def _latency_class(ins: Instr) -> str:
    base = ins.op.split(".")[0]
    if base in ("LDG", "LD", "ATOMG"):
        return "global"
    if base in ("LDS", "LDSM"):
        return "shared"
    if base == "LDL":
        return "local"
    if base in ("LDC", "S2R", "S2UR", "ULDC", "CS2R"):
        return "const"
    return "alu"


def depbar_ready(ins: Instr, groups: Sequence[float], open_group: Sequence[float]) -> float:
    """The cycle at which ``DEPBAR.LE SB0, n`` lets a warp go: when all but the newest ``n`` cp.async groups have
    landed (``groups``: the landing cycles of the committed groups, oldest first; ``open_group``: those of the
    copies not committed yet); 0 when it need not wait. ``n`` is the last operand (hexadecimal or decimal), not
    the SB0 digit."""
    m = re.search(r",\s*(?:0x([0-9a-fA-F]+)|(\d+))\s*$", ins.operands)
    n = int(m.group(1), 16) if m and m.group(1) else int(m.group(2)) if m else 0
    done = list(groups) + ([max(open_group)] if open_group else [])
    return max(done[: len(done) - n]) if len(done) > n else 0.0


@functools.lru_cache(maxsize=64)
def _prepared(instrs: tuple) -> list:
    return [(i, _operands(i), _latency_class(i), i.op.split(".")[0]) for i in instrs]


def warp_trace(instrs: Sequence[Instr], global_latency: float, shared_latency: float, repeat: int = 1,
               local_latency: float = 0.0) -> dict:
    """One warp alone issuing ``instrs`` (``repeat`` times back to back) in order, one instruction a
    cycle, each waiting for its source registers (a scoreboard): the latency-bound time of the code,
    the critical path that Volkov ("Understanding Latency Hiding on GPUs", PhD thesis, UC Berkeley 2016,
    ch. 4) writes as latency x dependent steps. Global loads complete ``global_latency`` cycles after
    issue, shared loads ``shared_latency``, ALU results :data:`ALU_LATENCY_CYCLES`. ``LDGSTS``
    (cp.async) completes ``global_latency`` after issue into its commit group (``LDGDEPBAR`` closes a
    group); ``DEPBAR.LE SB0, n`` waits until at most ``n`` groups are outstanding. Barriers cost one
    issue slot (all warps of a block run the same code).

    Returns the cycle at which each repetition ends (``ends``), the global-load waits (``waits``: issue
    stalls on a global load's result) and the most global loads in flight at a wait."""
    ready: dict[int, float] = {}
    groups: list[float] = []
    open_group: list[float] = []
    pending_global: dict[int, float] = {}
    t = 0.0
    ends: list[float] = []
    waits = 0
    most_in_flight = 0
    lat = {"global": global_latency, "shared": shared_latency, "local": local_latency,
           "const": CONST_LATENCY_CYCLES, "alu": ALU_LATENCY_CYCLES}
    ops = _prepared(tuple(instrs))
    for _ in range(repeat):
        for ins, (dest, srcs), cls, base in ops:
            start = t
            for r in srcs:
                start = max(start, ready.get(r, 0.0))
            if base == "DEPBAR":
                start = max(start, depbar_ready(ins, groups, open_group))
            if start > t and any(r in pending_global and pending_global[r] > t for r in srcs):
                waits += 1
                most_in_flight = max(most_in_flight, sum(1 for v in set(pending_global.values()) if v > t))
            t = start + ins.stall        # the control code's stall count (1 where not known)
            if base == "LDGSTS":
                open_group.append(start + global_latency)
            elif base == "LDGDEPBAR":
                groups.append(max(open_group) if open_group else start)
                open_group = []
            for r in dest:
                ready[r] = start + lat[cls]
                if cls == "global":
                    pending_global[r] = start + lat[cls]
                else:
                    pending_global.pop(r, None)
        ends.append(t)
    return {"ends": ends, "waits": waits, "most_in_flight": most_in_flight}


def loop_trace_table(path: Sequence[Instr]) -> list[list[float]]:
    """``loop_trace_cycles`` of :func:`loop_structure` alone: one warp's steady iteration of ``path`` at every
    (global, shared) latency of the trace grid."""
    return [[round((e[3] - e[1]) / 2.0, 2) for e in (warp_trace(path, lg, ls, repeat=4)["ends"]
                                                   for ls in TRACE_SHARED_LATENCIES)]
            for lg in TRACE_GLOBAL_LATENCIES]


def loop_structure(path: Sequence[Instr], prologue: Sequence[Instr]) -> dict:
    """The main loop's structure as the timing model uses it (``model.facts``):

    * ``loop_trace_cycles[i][j]``: cycles of one steady-state iteration of one warp alone, at global-load
      latency ``TRACE_GLOBAL_LATENCIES[i]`` and shared-load latency ``TRACE_SHARED_LATENCIES[j]`` (the
      path issued 4 times with loop-carried registers; the mean of the last two);
    * ``prologue_trace_cycles``: the same for the code before the loop (in address order, once);
    * ``loop_global_loads``: global loads (LDG / LDGSTS) per iteration; ``loop_load_waits``: issue stalls on
      a global load's result per steady iteration at the longest latency (1: all loads are issued before
      the first use; one per load when each load is used before the next is issued);
      ``loop_latency_chain``: global-load latencies that add up in one iteration (the table's slope at long
      latency: 1 when all loads are issued before the first use, one per load when each is used before the
      next is issued, below 1 when loads of several iterations are in flight, 0 when the latency is hidden
      behind the warp's own work);
      ``loop_loads_in_flight``: the most global loads in flight at such a stall;
    * ``loop_order``: the order of global loads (G), shared stores (S), barriers (B) and FFMA runs (F)."""
    order = []
    for i in path:
        b = i.family.split(".")[0]
        c = {"LDG": "G", "LDGSTS": "G", "STS": "S", "BAR": "B", "FFMA": "F", "LDS": "L"}.get(b)
        if c and (not order or order[-1] != c or c in "GSB"):
            order.append(c)
    table = loop_trace_table(path)
    pro = [[round(warp_trace(prologue, lg, ls)["ends"][0], 1) for ls in TRACE_SHARED_LATENCIES]
           for lg in TRACE_GLOBAL_LATENCIES]
    hi = TRACE_GLOBAL_LATENCIES[-1]
    full = warp_trace(path, hi, TRACE_SHARED_LATENCIES[0], repeat=4)
    one = warp_trace(path, hi, TRACE_SHARED_LATENCIES[0], repeat=3)
    slope = (table[-1][0] - table[-2][0]) / (TRACE_GLOBAL_LATENCIES[-1] - TRACE_GLOBAL_LATENCIES[-2])
    return {
        "loop_trace_cycles": table,
        "prologue_trace_cycles": pro,
        "loop_global_loads": sum(1 for i in path if i.op.split(".")[0] in ("LDG", "LD", "LDGSTS")),
        "loop_load_waits": full["waits"] - one["waits"],
        "loop_latency_chain": round(slope, 4),
        "loop_loads_in_flight": full["most_in_flight"],
        "loop_order": "".join(order),
        "trace_schema": {"global_latencies": list(TRACE_GLOBAL_LATENCIES),
                         "shared_latencies": list(TRACE_SHARED_LATENCIES),
                         "alu_latency": ALU_LATENCY_CYCLES, "issue": "control-code stall counts"},
    }


def analyse_sass(instrs: list[Instr], labels: Mapping[str, int], arch: str = "sm_90") -> dict:
    """Histograms and main-loop counts of one function's SASS."""
    body = strip_padding(instrs, labels)
    out: dict = {"sass_total": _hist(body), "total_instructions": len(body)}
    found = _main_loop_siblings(body, labels)
    if found is None:
        out.update(loop_found=False, sass_loop={}, loop_instructions=None, loop_ffma=None, loop_branches=None,
                   sass_loop_path={}, loop_path_instructions=None,
                   prologue_instructions=None, epilogue_instructions=None)
        return out
    blocks, h, loop_blocks, siblings = found
    idx = sorted(k for b in loop_blocks for k in range(blocks[b].start, blocks[b].end))
    inside = set(idx)
    loop_instrs = [body[k] for k in idx]
    head_addr = body[blocks[h].start].addr
    outside = [i for k, i in enumerate(body) if k not in inside]
    if siblings:
        # the code around this loop only: not the other operand path's plan, prologue and loop
        pro_b, epi_b = _around(blocks, h, loop_blocks)
        keep = {k for b in pro_b | epi_b for k in range(blocks[b].start, blocks[b].end)}
        outside = [i for k, i in enumerate(body) if k in keep]
    branches = sum(1 for i in loop_instrs if i.family == "BRA" and not _unconditional(i))
    path = steady_path(body, blocks, h, loop_blocks)
    path_instrs = [] if path is None else [i for b in path for i in body[blocks[b].start:blocks[b].end]]
    elem = steady_path(body, blocks, h, loop_blocks, longest=True)
    elem_instrs = [] if elem is None else [i for b in elem for i in body[blocks[b].start:blocks[b].end]]
    out.update(
        loop_found=True, sass_loop=_hist(loop_instrs), loop_instructions=len(loop_instrs),
        loop_ffma=sum(1 for i in loop_instrs if i.family == "FFMA"),
        loop_branches=max(0, branches - 1),   # minus the back edge itself
        sass_loop_path=_hist(path_instrs), loop_path_instructions=len(path_instrs) if path else None,
        loop_element_path_instructions=len(elem_instrs) if elem else None,
        loop_start=head_addr,
        prologue_instructions=sum(1 for i in outside if i.addr < head_addr),
        epilogue_instructions=sum(1 for i in outside if i.addr > head_addr),
    )
    if path_instrs:
        out.update(loop_structure(path_instrs, [i for i in outside if i.addr < head_addr]))
        # the element path's lone-warp iteration (the same trace), where it differs from the steady path
        out["loop_element_trace_cycles"] = (out["loop_trace_cycles"] if len(elem_instrs) == len(path_instrs) else
                                            loop_trace_table(elem_instrs))
        # register-bank conflicts of the steady iteration's FFMAs (tools/bank_conflicts.py): extra operand reads
        from tools.bank_conflicts import BANK_RULE, ffma_conflicts, ffma_slot_classes
        rule = BANK_RULE.get(arch, "pairs")
        out["loop_bank_conflicts"] = ffma_conflicts(path_instrs, rule)[1]
        out["loop_bank_rule"] = rule
        out["loop_slot_classes"] = ffma_slot_classes(path_instrs)
    # what an interior block runs after the loop (its issue, and the code it fetches once)
    out.update(epilogue_path(body, blocks, h, loop_blocks) or {})
    return out


# --------------------------------------------------------------------------------------------------
# Facts
# --------------------------------------------------------------------------------------------------


def naive_unroll() -> int | None:
    """The ``#pragma unroll N`` of the naive kernel's K loop, read from the source now; None when the
    source leaves the unrolling to the compiler (no pragma)."""
    src = (KERNEL_DIR / RUNGS[1].file).read_text()
    code = "\n".join(line.split("//")[0] for line in src.splitlines())   # not in comments
    m = re.search(r"#pragma\s+unroll\s+(\d+)", code)
    return int(m.group(1)) if m else None


def tile_ffma(cfg: KernelConfig) -> int:
    """FFMAs one thread issues per K tile: BK*TM*TN (TM = TN = 1 for rung 02, TN = 1 for rung 03; 1 per k
    step for the naive rung 01)."""
    g = geometry(cfg)
    return g.BK * g.TM * g.TN


def expected_loop_ffma(cfg: KernelConfig) -> int | None:
    """FFMAs expected in one main-loop iteration: one K tile (BK*TM*TN) for rungs 02-06; for the naive
    rung 01 the source's ``#pragma unroll N`` factor, or None when the compiler chooses."""
    if cfg.rung == 1:
        return naive_unroll()
    return tile_ffma(cfg)


def _facts_one(cfg: KernelConfig, arch: str, mangled: str, funcs, usage, ptxas, seconds: float,
               digest: str) -> dict:
    if mangled not in funcs:
        raise FactsError(f"{cfg.key}: {mangled} not in the disassembly")
    instrs, labels = funcs[mangled]
    u = usage.get(mangled, {})
    px = ptxas.get(mangled, {})
    sass = analyse_sass(instrs, labels, arch)
    exp = expected_loop_ffma(cfg)
    tile = tile_ffma(cfg)
    lf = sass["loop_ffma"]
    static_smem = px.get("smem", 0)
    d = {
        "config_key": cfg.key, "arch": arch, "nvrtc_version": nvrtc_version(), "name": mangled,
        "registers": u.get("REG", px.get("registers")),
        "shared_static_bytes": static_smem,
        "shared_reserved_bytes": (u["SHARED"] - static_smem) if "SHARED" in u else None,
        # the per-thread local memory a launch needs (CUDA's localSizeBytes): the ABI stack frame, where
        # ptxas puts spills and local arrays, plus any .local section (cuobjdump LOCAL, 0 here)
        "local_bytes": u.get("STACK", px.get("stack", 0)) + u.get("LOCAL", 0),
        "stack_bytes": u.get("STACK", px.get("stack", 0)),
        "spill_stores": px.get("spill_stores"), "spill_loads": px.get("spill_loads"),
        "barriers": px.get("barriers"),
        "expected_loop_ffma": exp,
        "loop_ffma_ok": (lf == exp) if (lf is not None and exp is not None) else None,
        "loop_tiles": (lf // tile) if (lf and lf % tile == 0) else None,
        "source_sha256": digest,
        "compile_seconds": round(seconds, 3),
    }
    d.update(sass)
    return d


def _compile_chunk(file: str, keys: Sequence[str], arch: str) -> list[dict]:
    """Worker: compile one program holding ``keys`` (configs of one rung) and return their facts.
    A failing program is retried one config at a time; a config that still fails gets ``error``."""
    cfgs = [_from_key(k) for k in keys]
    try:
        comp = compile_program(file, [c.name_expression for c in cfgs], arch)
    except CompileFailed as exc:
        if len(cfgs) == 1:
            return [{"config_key": cfgs[0].key, "arch": arch, "nvrtc_version": nvrtc_version(),
                     "error": exc.log[-4000:]}]
        out = []
        for c in cfgs:
            out.extend(_compile_chunk(file, [c.key], arch))
        return out
    with tempfile.TemporaryDirectory(prefix="gemmscope_facts_") as td:
        path = os.path.join(td, "prog.cubin")
        with open(path, "wb") as f:
            f.write(comp.cubin)
        funcs = disassemble(path)
        usage = parse_resource_usage(_run("cuobjdump", "--dump-resource-usage", path))
    ptxas = parse_ptxas_log(comp.log)
    per = comp.seconds / len(cfgs)
    return [_facts_one(c, arch, comp.lowered[c.name_expression], funcs, usage, ptxas, per,
                       comp.source_sha256) for c in cfgs]


def _from_key(key: str) -> KernelConfig:
    """Inverse of :attr:`KernelConfig.key` (``04:BM=128,BN=128,BK=8,TM=8,TN=8``)."""
    r, _, rest = key.partition(":")
    params = {}
    for item in filter(None, rest.split(",")):
        k, _, v = item.partition("=")
        params[k.strip()] = int(v)
    return KernelConfig.make(int(r), **params)


def facts(cfg: KernelConfig, arch: str) -> dict:
    """Compiler facts of one config for ``arch`` (compiled alone, as CuPy does)."""
    if cfg.info.file is None:
        raise ValueError(f"{cfg.label} has no kernel file")
    return _compile_chunk(cfg.info.file, [cfg.key], arch)[0]


# --------------------------------------------------------------------------------------------------
# Config families
# --------------------------------------------------------------------------------------------------


def _h200():
    from model.spec import load_gpu
    return load_gpu("h200")


def family_configs(name: str) -> list[KernelConfig]:
    """``classic``, ``blocks`` (rung 01 BX, BY and rung 02 BM, BN, BK shapes), ``grid`` (rungs 04-06
    register tiling) or ``all``; grid members are those the registry accepts on the H200."""
    gpu = _h200()
    if name == "classic":
        return [c for c in classic_configs() if c.rung != 0]
    if name == "blocks":
        return list(grid_configs(1, gpu, **NAIVE_GRID)) + list(grid_configs(2, gpu, **SMEM_GRID))
    if name == "grid":
        return [c for r in (4, 5, 6) for c in grid_configs(r, gpu, **REGTILE_GRID)]
    if name == "all":
        seen: dict[str, KernelConfig] = {}
        for fam in ("classic", "blocks", "grid"):
            for c in family_configs(fam):
                seen.setdefault(c.key, c)
        return list(seen.values())
    raise ValueError(f"unknown config family {name!r} (classic, blocks, grid, all)")


def resolve_configs(items: Sequence[str]) -> list[KernelConfig]:
    """Family names, config keys (``04:BM=...``) or ``KernelConfig.parse`` texts (``reg2d:BM=64``)."""
    out: dict[str, KernelConfig] = {}
    for it in items:
        if it in ("classic", "blocks", "grid", "all"):
            cfgs = family_configs(it)
        elif re.match(r"^\d+:", it):
            cfgs = [_from_key(it)]
        else:
            cfgs = [KernelConfig.parse(it)]
        for c in cfgs:
            if c.rung != 0:
                out.setdefault(c.key, c)
    return list(out.values())


# --------------------------------------------------------------------------------------------------
# Generation and the cache files
# --------------------------------------------------------------------------------------------------


def _chunks(cfgs: Sequence[KernelConfig], size: int) -> list[tuple[str, list[str]]]:
    by_file: dict[str, list[str]] = {}
    for c in cfgs:
        by_file.setdefault(c.info.file, []).append(c.key)
    out = []
    for f, keys in by_file.items():
        # interleave expensive (large TM*TN) and cheap configs across chunks for an even load
        n = max(1, -(-len(keys) // size))
        for i in range(n):
            out.append((f, keys[i::n]))
    # biggest register tiles first, so the long compiles do not end up last
    out.sort(key=lambda fk: -max(_weight(k) for k in fk[1]))
    return out


def _weight(key: str) -> int:
    p = _from_key(key).p
    return p.get("TM", 1) * p.get("TN", 1) * p.get("BK", 1)


def generate(cfgs: Sequence[KernelConfig], arch: str, jobs: int = 2, chunk: int = 16,
             progress=None) -> dict[str, dict]:
    """Facts of ``cfgs`` for ``arch``, compiled ``chunk`` configs per NVRTC program on ``jobs`` processes."""
    work = _chunks(cfgs, chunk)
    out: dict[str, dict] = {}
    if jobs <= 1:
        for f, keys in work:
            for d in _compile_chunk(f, keys, arch):
                out[d["config_key"]] = d
            if progress:
                progress(len(out), len(cfgs))
        return out
    with cf.ProcessPoolExecutor(jobs) as ex:
        futs = [ex.submit(_compile_chunk, f, keys, arch) for f, keys in work]
        for fut in cf.as_completed(futs):
            for d in fut.result():
                out[d["config_key"]] = d
            if progress:
                progress(len(out), len(cfgs))
    return out


def _sort_key(key: str):
    r, _, rest = key.partition(":")
    return (int(r), [int(v.split("=")[1]) for v in rest.split(",") if v])


def dump_cache(path: Path, arch_facts: Mapping[str, Mapping[str, dict]], meta: Mapping) -> None:
    """Write ``{"schema_version", "generator", "archs": {arch: {"nvrtc_version", "facts": {key: {...}}}}}``,
    one config a line (small diffs)."""
    lines = ["{", f'"schema_version": {SCHEMA_VERSION},', f'"generator": {json.dumps(dict(meta), sort_keys=True)},',
             '"archs": {']
    archs = sorted(arch_facts)
    for ai, arch in enumerate(archs):
        fs = arch_facts[arch]
        nv = sorted({d.get("nvrtc_version") for d in fs.values()} - {None})
        lines.append(f'"{arch}": {{"nvrtc_version": {json.dumps(nv[0] if len(nv) == 1 else nv)}, "facts": {{')
        keys = sorted(fs, key=_sort_key)
        for ki, k in enumerate(keys):
            d = {kk: v for kk, v in fs[k].items() if kk != "compile_seconds"}
            lines.append(f"{json.dumps(k)}: {json.dumps(d, sort_keys=True)}" + ("," if ki + 1 < len(keys) else ""))
        lines.append("}}" + ("," if ai + 1 < len(archs) else ""))
    lines += ["}", "}"]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    json.loads(tmp.read_text())  # must round-trip
    tmp.replace(path)


def read_cache(path: Path) -> dict[str, dict[str, dict]]:
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return {a: dict(v.get("facts", {})) for a, v in data.get("archs", {}).items()}


def write_facts(path: Path, new: Mapping[str, Mapping[str, dict]], merge: bool = True) -> None:
    old = read_cache(path) if merge else {}
    for arch, fs in new.items():
        old.setdefault(arch, {}).update(fs)
    meta = {"tool": "tools/compiler_facts.py", "options": list(nvrtc_options("sm_XX")),
            "versions": tool_versions()}
    dump_cache(path, old, meta)


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------

TABLE_COLS = ("FFMA", "LDS", "LDS.64", "LDS.128", "LDG", "LDG.128", "STS", "STS.128", "BAR", "IMAD", "IADD3")


def table(rows: Iterable[dict]) -> str:
    """Registers, spills and the steady-state loop iteration (``sass_loop_path``) per config; ``loopN`` is
    the static size of the whole loop body, ``pathN`` that of the steady-state iteration."""
    hdr = (f"{'config':42s} {'regs':>4s} {'local':>5s} {'spillS':>6s} {'spillL':>6s} {'loopN':>5s} {'pathN':>5s} "
           + " ".join(f"{c:>7s}" for c in TABLE_COLS) + "  exp.FFMA")
    out = [hdr]
    for d in rows:
        if "error" in d:
            out.append(f"{d['config_key']:42s} COMPILE ERROR: {d['error'].strip().splitlines()[-1][:80]}")
            continue
        loop = d.get("sass_loop_path") or d.get("sass_loop") or {}
        cells = " ".join(f"{loop.get(c, 0):7d}" for c in TABLE_COLS) if d.get("loop_found") else \
            " ".join(f"{'-':>7s}" for _ in TABLE_COLS)
        ok = d.get("loop_ffma_ok")
        flag = ("" if ok or (ok is None and d.get("loop_found")) else
                (f"  <-- FFMA MISMATCH ({d.get('loop_tiles')} tiles/iter)" if d.get("loop_found") else "  (no loop)"))
        if ok is None and d.get("loop_found"):
            flag = f"  (compiler unroll: {d.get('loop_tiles')} k/iter)"
        if d.get("spill_stores") or d.get("local_bytes"):
            flag += "  SPILLS"
        out.append(f"{d['config_key']:42s} {d['registers']:4d} {d['local_bytes']:5d} {d['spill_stores']:6d} "
                   f"{d['spill_loads']:6d} {d.get('loop_instructions') or 0:5d} {d.get('loop_path_instructions') or 0:5d} {cells}  {d['expected_loop_ffma'] or '-':>4}"
                   + flag)
    return "\n".join(out)


def build_parser() -> argparse.ArgumentParser:
    from analysis.cli import Parser  # noqa: PLC0415
    ap = Parser(
        prog="python -m tools.compiler_facts",
        description="Compile kernel configs with NVRTC (as CuPy does) and report registers, shared memory, "
                    "spills and the SASS mix of the main loop. Needs requirements-facts.txt.")
    ap.add_argument("--arch", action="append", help="target, e.g. sm_90 (repeatable; default sm_90)")
    ap.add_argument("--configs", nargs="+", default=["classic"],
                    help="classic | blocks | grid | all | config keys ('04:BM=64,...') | 'reg2d:BM=64,...'")
    ap.add_argument("--out", type=Path, help="write (merge) the facts into this JSON file")
    ap.add_argument("--ship", action="store_true",
                    help=f"write (merge) each arch into the shipped cache {SHIP_DIR.relative_to(REPO)}/<arch>.json")
    ap.add_argument("--replace", action="store_true", help="with --out/--ship: replace instead of merging")
    ap.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1, help="worker processes")
    ap.add_argument("--chunk", type=int, default=16, help="name expressions per NVRTC program")
    ap.add_argument("--quiet", "-q", action="store_true", help="no table")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    from analysis.cli import BadInput, run  # noqa: PLC0415
    args = build_parser().parse_args(argv)

    def body() -> int:
        if args.jobs < 1 or args.chunk < 1:
            raise BadInput(f"--jobs and --chunk must be >= 1, got {args.jobs} and {args.chunk}")
        for a in args.arch or ():
            if not re.fullmatch(r"sm_\d{2,3}", a):
                raise BadInput(f"--arch {a!r}: expected sm_XX, e.g. sm_90")
        if args.out is not None:
            from analysis.cli import output_file  # noqa: PLC0415
            output_file(args.out, (".json",), "--out")
        resolve_configs(args.configs)          # a bad config name: refused before the toolchain is loaded
        try:
            return _main(args)
        except FactsError as exc:
            raise BadInput(f"{exc}") from None
    return run(body)


def _main(args) -> int:
    archs = args.arch or ["sm_90"]
    cfgs = resolve_configs(args.configs)
    print(f"NVRTC {nvrtc_version()} ({tool_versions().get('nvidia-cuda-nvrtc')}), options "
          f"{' '.join(nvrtc_options('sm_XX'))}; {len(cfgs)} configs x {len(archs)} arch(s), "
          f"jobs={args.jobs}, chunk={args.chunk}", file=sys.stderr)
    results: dict[str, dict[str, dict]] = {}
    bad = 0
    for arch in archs:
        t0 = time.perf_counter()

        def progress(n, total, arch=arch, t0=t0):
            if sys.stderr.isatty() or n == total or n % 100 < args.chunk:
                print(f"  {arch}: {n}/{total} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)

        res = generate(cfgs, arch, jobs=args.jobs, chunk=args.chunk, progress=progress)
        results[arch] = res
        el = time.perf_counter() - t0
        errs = [d for d in res.values() if "error" in d]
        mism = [d for d in res.values() if d.get("loop_found") and d.get("loop_ffma_ok") is False]
        noloop = [d for d in res.values() if "error" not in d and not d.get("loop_found")]
        spills = [d for d in res.values() if d.get("spill_stores") or d.get("local_bytes")]
        print(f"{arch}: {len(res)} configs in {el:.1f} s; {len(errs)} compile errors, {len(spills)} with spills, "
              f"{len(mism)} loop-FFMA mismatches, {len(noloop)} without a main loop", file=sys.stderr)
        bad += len(errs)
        if not args.quiet:
            print(f"\n== {arch} (NVRTC {nvrtc_version()}) ==")
            print(table(res[c.key] for c in cfgs if c.key in res))
    if args.out:
        write_facts(args.out, results, merge=not args.replace)
        print(f"wrote {args.out}", file=sys.stderr)
    if args.ship:
        for arch, res in results.items():
            p = SHIP_DIR / f"{arch}.json"
            write_facts(p, {arch: res}, merge=not args.replace)
            print(f"wrote {p.relative_to(REPO)}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
