"""What every command-line entry point shares: one-line errors with exit status 2, argument types that
refuse nonsense before any work, and the checks of a problem size against a GPU.

Every CLI of gemmscope (``analyze.py`` and its subcommands, ``experiments.sweep``, ``experiments.predict``,
``tools.calibrate``, ``tools.sim_vs_ncu``, ``tools.compiler_facts``) builds its parser with :class:`Parser`
and runs its body through :func:`run`: a bad input prints ``error: <what is wrong>`` on one line of
stderr and exits with status 2; nothing else is printed and no work is done. This module imports only
the standard library (it runs before anything heavy is loaded).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Callable, Sequence

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 1
MAX_DIM = 2**31 - 1           # the kernels take M, N, K as 32-bit ints
MAX_GRID_X = 2**31 - 1        # CUDA's gridDim.x limit
MAX_GRID_YZ = 65535           # CUDA's gridDim.y and gridDim.z limit
BYTES_PER_ELEMENT = 4         # FP32

# Device memory of the shipped GPUs, bytes (binary GiB as the boards report them), used only to refuse
# problems whose A, B and C cannot fit. A spec file may carry its own ``memory_bytes``; that wins.
DEVICE_MEMORY_BYTES = {
    "rtx4060": (8 * 2**30, "NVIDIA RTX 4060 datasheet: 8 GB GDDR6"),
    "rtx4090": (24 * 2**30, "NVIDIA RTX 4090 datasheet: 24 GB GDDR6X"),
    "rtx3090": (24 * 2**30, "NVIDIA RTX 3090 datasheet: 24 GB GDDR6X"),
    "rtxa6000": (48 * 2**30, "NVIDIA RTX A6000 datasheet: 48 GB GDDR6"),
    "a100": (80 * 2**30, "NVIDIA A100 SXM4 80GB datasheet"),
    "h100": (80 * 2**30, "NVIDIA H100 SXM5 80GB datasheet"),
    "h200": (141 * 2**30, "NVIDIA H200 SXM datasheet: 141 GB HBM3e"),
}


class BadInput(Exception):
    """A command-line input that is refused before any work (exit status 2)."""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (``PROG: error: ...; see --help``) and exit status 2."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def run(body: Callable[[], int], debug_env: str = "GEMMSCOPE_DEBUG") -> int:
    """Run a CLI body: known errors become one line on stderr and exit 2; an unexpected exception is one
    line and exit 1 (set ``GEMMSCOPE_DEBUG=1`` for the traceback)."""
    from model.errors import GemmscopeError
    try:
        return body()
    except (BadInput, GemmscopeError) as e:
        print(f"error: {_one_line(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:          # output piped into head, less, ...: not an error
        try:
            sys.stderr.close()
        finally:
            return 0
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - the last line of defence: no traceback for a user
        if os.environ.get(debug_env):
            raise
        print(f"error: internal error (a bug, please report it; {debug_env}=1 shows the traceback): "
              f"{type(e).__name__}: {_one_line(e)}", file=sys.stderr)
        return EXIT_INTERNAL


# --------------------------------------------------------------------------------------------------
# argparse types (each raises ArgumentTypeError -> one line, exit 2)
# --------------------------------------------------------------------------------------------------


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must be an integer, got {text!r}") from None


def positive_int(text: str) -> int:
    v = _int(text, "value")
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def nonneg_int(text: str) -> int:
    v = _int(text, "value")
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {v}")
    return v


def dim(text: str) -> int:
    """A matrix dimension: 1 .. 2^31 - 1 (the kernels index with 32-bit ints)."""
    v = _int(text, "a matrix size")
    if not 1 <= v <= MAX_DIM:
        raise argparse.ArgumentTypeError(f"a matrix size must be between 1 and {MAX_DIM}, got {v}")
    return v


def registers(text: str) -> int:
    v = _int(text, "registers per thread")
    if not 1 <= v <= 255:
        raise argparse.ArgumentTypeError(f"registers per thread must be between 1 and 255, got {v}")
    return v


def positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text}")
    return v


# --------------------------------------------------------------------------------------------------
# Configs, sizes, files
# --------------------------------------------------------------------------------------------------


def parse_config(text: str):
    """``NAME[:KEY=VAL,...]`` -> KernelConfig; a key given twice is refused (not last-one-wins)."""
    from model.registry import KernelConfig
    _, _, rest = text.partition(":")
    seen: set[str] = set()
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key = item.partition("=")[0].strip().upper()
        if key in seen:
            raise BadInput(f"config {text!r}: parameter {key} given twice")
        seen.add(key)
    return KernelConfig.parse(text)


def memory_bytes(gpu) -> tuple[int, str] | None:
    """The GPU's device memory (bytes, source), or None when unknown."""
    own = getattr(gpu, "memory_bytes", None)
    if own:
        return int(own), "spec file"
    return DEVICE_MEMORY_BYTES.get(getattr(gpu, "key", ""))


def _gb(x: float) -> str:
    return f"{x / 2**30:,.1f} GiB"


def check_problem(gpu, M: int, N: int, K: int, cfg=None) -> None:
    """Refuse a size that cannot run on ``gpu``: a dimension over 2^31 - 1, A, B and C (FP32) larger
    than the device memory (with the figures), or a grid over CUDA's limits for ``cfg``."""
    for name, v in (("M", M), ("N", N), ("K", K)):
        if not 1 <= int(v) <= MAX_DIM:
            raise BadInput(f"size {name} = {v} is outside 1 .. {MAX_DIM}")
    need = BYTES_PER_ELEMENT * (M * K + K * N + M * N)
    mem = memory_bytes(gpu)
    if mem is not None and need > mem[0]:
        raise BadInput(f"size {M} x {N} x {K} needs {_gb(need)} for A, B and C in FP32, more than the "
                       f"{_gb(mem[0])} of memory of the {gpu.name} ({mem[1]})")
    if cfg is not None and cfg.rung != 0:
        from model.registry import grid
        gx, gy, gz = grid(cfg, M, N)
        if gx > MAX_GRID_X or gy > MAX_GRID_YZ or gz > MAX_GRID_YZ:
            raise BadInput(f"{cfg.label} at M={M}, N={N} needs a grid of ({gx}, {gy}, {gz}) blocks, over CUDA's "
                           f"limits ({MAX_GRID_X}, {MAX_GRID_YZ}, {MAX_GRID_YZ})")


def output_file(path: str | Path, suffixes: Sequence[str] = (), what: str = "output") -> Path:
    """An output file path that can be written: not a folder, with one of ``suffixes``, parent creatable."""
    p = Path(path)
    if suffixes and p.suffix.lower() not in suffixes:
        raise BadInput(f"{what} {p}: the file name must end in {' or '.join(suffixes)}")
    if p.is_dir():
        raise BadInput(f"{what} {p} is a folder, not a file")
    _writable_parent(p, what)
    if p.exists() and not os.access(p, os.W_OK):
        raise BadInput(f"{what} {p} exists and is not writable")
    return p


def output_dir(path: str | Path, what: str = "output folder") -> Path:
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise BadInput(f"{what} {p} exists and is not a folder")
    if p.is_dir():
        if not os.access(p, os.W_OK):
            raise BadInput(f"{what} {p} is not writable")
    else:
        _writable_parent(p, what)
    return p


def _writable_parent(p: Path, what: str) -> None:
    q = p.parent if str(p.parent) else Path(".")
    while not q.exists():
        q = q.parent
    if not q.is_dir():
        raise BadInput(f"{what} {p}: {q} is not a folder")
    if not os.access(q, os.W_OK):
        raise BadInput(f"{what} {p}: cannot write in {q}")


def input_files(paths: Sequence[str | Path]) -> None:
    """Every path exists (file or folder) and files are readable text; else one line naming it."""
    for s in paths:
        p = Path(s)
        if not p.exists():
            raise BadInput(f"{p}: no such file or folder")
        if p.is_file():
            check_text_file(p)


def check_text_file(p: Path, sniff: int = 4096) -> None:
    try:
        with open(p, "rb") as fh:
            head = fh.read(sniff)
    except OSError as e:
        raise BadInput(f"{p}: cannot read: {e.strerror or e}") from None
    if b"\0" in head:
        raise BadInput(f"{p}: a binary file, not JSON Lines text")
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(head) - 4:     # not just a multi-byte character cut at the sniff boundary
            raise BadInput(f"{p}: not UTF-8 text (byte {e.start}); expected JSON Lines") from None


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_description_str(self, s: str) -> None:
        pass

    def close(self) -> None:
        pass


def stages(total: int, desc: str):
    """A progress bar of ``total`` stages on stderr (tqdm), shown only on a terminal; a no-op without tqdm."""
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return _NoBar()
    return tqdm(total=total, desc=desc, file=sys.stderr, disable=None, leave=False,
                bar_format="{desc}: {n}/{total} {bar} {elapsed}")
