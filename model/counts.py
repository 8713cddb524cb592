"""Per-config access counts for the timing model, fast: a versioned cache and a closed form.

The timing model needs, per config, the counts of one interior block in one steady-state K tile
(:class:`model.simulate.BlockIteration`: global requests, sectors and 128-byte lines, shared-memory
instructions and wavefronts, FFMAs, barriers, ...), which :func:`model.simulate.simulate` produces by
enumerating every warp's addresses at a small *probe* size (:func:`probe_size`) - about 5 ms a config.
:func:`steady_counts` is the one function the timing model asks instead. It answers from

1. the **cache** ``model/data/counts/counts.json``: the simulator's own counts of every shipped config
   (the compiler-facts configs and every config in a shipped sweep), written by
   ``python -m model.counts --ship``. The file records a digest of ``model/simulate.py``'s source and
   of the sm_90 compiler facts (which set the shared-load widths, ``plan="sass"``); when either has
   changed the file is **stale**: it is not used (a warning says so once) and the counts are
   recomputed;
2. the **closed form** (:func:`closed_form_counts`) for any other config: the same index maps as the
   simulator's kernel descriptions, but per config only the interior class of the probe is counted,
   and every address-dependent count (sectors, 128-byte lines, shared wavefronts) is computed with the
   simulator's own warp-level primitives on the smallest set of addresses it depends on (a tile-load
   pattern is shared by every config with the same tile shape and thread count; a shared-load pattern
   by every config with the same lane-to-address map), memoised, so a space of 10,000 configs costs a
   few hundred small enumerations. Everything else (requests, instructions, FFMAs, barriers, the
   integer estimate) is arithmetic over the config's geometry. ``tests/test_counts.py`` checks that
   the closed form equals the simulator exactly for every shipped config; the cache records the
   simulator digest the closed form was checked against, and when the simulator has changed since,
   the closed form is not trusted either: counts then come from the simulator itself (slow, exact)
   until ``python -m model.counts --ship`` has re-checked and rewritten the cache.

    >>> from model.counts import steady_counts
    >>> steady_counts(cfg).lds_wavefronts
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import json
import operator
import sys
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import numpy as np

from .registry import WARP_SIZE, KernelConfig, geometry

__all__ = ["COUNTS_FILE", "CountsCache", "probe_size", "steady_counts", "closed_form_counts",
           "simulated_counts", "simulator_digest", "shipped_configs", "ship"]

DATA_DIR = Path(__file__).resolve().parent / "data"
COUNTS_FILE = DATA_DIR / "counts" / "counts.json"
SIMULATOR_FILE = Path(__file__).resolve().parent / "simulate.py"
PLAN_FACTS_FILE = DATA_DIR / "compiler_facts" / "sm_90.json"   # sass_plan() reads sm_90 facts
SCHEMA = "gemmscope.counts"
SCHEMA_VERSION = 1
SECTOR_WORDS = 8
LINE_WORDS = 32
CLOSED_FORM_RUNGS = frozenset({1, 2, 3, 4, 5, 6})
WARP_TILED_RUNGS = frozenset({7, 8})
"""Rungs whose global-load patterns :func:`global_load_wavefronts` mirrors beside the closed form's (the
simulator's ``_warp_tiled`` index maps)."""
"""Rungs whose index maps the closed form mirrors; any other rung is counted by the simulator itself."""


def probe_size(cfg: KernelConfig) -> tuple[int, int, int]:
    """The size whose interior block gives the steady-state counts: two tiles per dimension and a K
    long enough that rows of A lie in different 128-byte lines (as at any real size)."""
    g = geometry(cfg)
    return (2 * g.BM, 2 * g.BN, max(64, 4 * g.BK))


def simulated_counts(cfg: KernelConfig):
    """The simulator's counts (the reference; ~5 ms a config)."""
    from .simulate import simulate
    return simulate(cfg, *probe_size(cfg), plan="sass").per_block_iteration


def simulated_extras(cfg: KernelConfig) -> dict:
    """The other size-independent simulator facts the timing model uses: the K depth of one iteration
    (``k_tile``, from the probe's iteration count) and the 128-byte lines of one block's C stores."""
    from .simulate import block_store_lines, block_store_sectors, simulate
    K = probe_size(cfg)[2]
    T = simulate(cfg, *probe_size(cfg), plan="sass").k_iterations
    return {"k_tile": max(1, -(-K // max(T, 1))), "store_lines": int(block_store_lines(cfg)),
            "store_lines_element": int(block_store_lines(cfg, True)),
            "store_sectors_element": int(block_store_sectors(cfg, True)), "gld_wf": wavefront_key(cfg)}


# ==================================================================================================
# Versioning and the cache file
# ==================================================================================================


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.exists() else "missing"


@functools.lru_cache(maxsize=None)
def simulator_digest() -> str:
    """Digest of what the counts are a function of: model/simulate.py and the sm_90 compiler facts."""
    return f"sim-{_digest(SIMULATOR_FILE)}-facts-{_digest(PLAN_FACTS_FILE)}"


class _LazyCounts(Mapping):
    """{config key: BlockIteration}, each built from the file's JSON on first use."""

    def __init__(self, raw: dict) -> None:
        self._raw, self._done = raw, {}

    def __getitem__(self, key: str):
        hit = self._done.get(key)
        if hit is None:
            from .simulate import BlockIteration
            hit = self._done[key] = BlockIteration(**self._raw[key])
        return hit

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def raw(self, key: str) -> Mapping[str, int] | None:
        """The file's JSON of ``key`` (field -> count) without building the dataclass, or None."""
        return self._raw.get(key)


class CountsCache:
    """The counts of a cache file, usable only when its digest equals :func:`simulator_digest`."""

    def __init__(self, path: Path = COUNTS_FILE) -> None:
        self.path = Path(path)
        self.counts: Mapping[str, object] = {}
        self.extras: Mapping[str, dict] = {}
        self.wavefronts: Mapping[str, list] = {}
        self.digest: str | None = None
        self.closed_form_checked = False
        self.stale_reason: str | None = None
        if not self.path.exists():
            self.stale_reason = f"{self.path} not found"
            return
        d = json.loads(self.path.read_text())
        if d.get("schema") != SCHEMA or d.get("schema_version") != SCHEMA_VERSION:
            self.stale_reason = f"{self.path}: schema {d.get('schema')!r} v{d.get('schema_version')} not {SCHEMA} v{SCHEMA_VERSION}"
            return
        self.digest = d.get("digest")
        if self.digest != simulator_digest():
            self.stale_reason = (f"{self.path} was made for {self.digest}, the simulator / sm_90 facts are now "
                                 f"{simulator_digest()}")
            return
        self.counts = _LazyCounts(d["counts"])
        self.wavefronts: Mapping[str, list] = d.get("wavefronts", {})
        self.extras: Mapping[str, dict] = d.get("extras", {})
        self.closed_form_checked = bool(d.get("closed_form_checked"))

    @property
    def fresh(self) -> bool:
        return self.stale_reason is None


@functools.lru_cache(maxsize=None)
def _cache(path: str = str(COUNTS_FILE)) -> CountsCache:
    c = CountsCache(Path(path))
    if not c.fresh:
        warnings.warn(f"counts cache not used: {c.stale_reason}; counts are recomputed "
                      "(refresh with: python -m model.counts --ship)", stacklevel=3)
    return c


def steady_counts(cfg: KernelConfig, cache_path: str | Path | None = None):
    """The :class:`~model.simulate.BlockIteration` of ``cfg`` (one interior block, one steady K tile,
    ``plan="sass"``): from the fresh cache, else the closed form when it was checked against the
    current simulator, else the simulator itself."""
    c = _cache(str(cache_path or COUNTS_FILE))
    key = cfg.key
    if key in c.counts:
        return c.counts[key]
    if c.fresh and c.closed_form_checked and cfg.rung in CLOSED_FORM_RUNGS:
        return closed_form_counts(cfg)
    return simulated_counts(cfg)


def steady_extras(cfg: KernelConfig, cache_path: str | Path | None = None) -> dict:
    """:func:`simulated_extras` of ``cfg``: from the fresh cache, else simulated."""
    c = _cache(str(cache_path or COUNTS_FILE))
    hit = c.extras.get(cfg.key)
    if hit is not None:
        return dict(hit)
    if c.fresh and c.closed_form_checked and cfg.rung in CLOSED_FORM_RUNGS:
        return closed_form_extras(cfg)
    return simulated_extras(cfg)


def clear_caches() -> None:
    """Forget the loaded cache file and memoised patterns (tests, benchmarks)."""
    _cache.cache_clear()
    simulator_digest.cache_clear()
    for f in (_tile_load, _c_store, _sts_linear, _sts_transposed, _residues, closed_form_counts):
        f.cache_clear()
    _LDS_CONF.clear()
    for name in ("_data_wavefronts", "_warp_tile_table", "_load_wavefronts", "exit_block_counts"):
        globals()[name].cache_clear()


# ==================================================================================================
# Closed form
# ==================================================================================================


def _lanes(threads: int):
    tpad = -(-threads // WARP_SIZE) * WARP_SIZE
    tid = np.arange(tpad, dtype=np.int64)
    return tid, tid < threads, tpad


def _mode_residue(dims: Sequence[Sequence[tuple[int, int]]]) -> int:
    """The most common tile-origin residue mod 8 over the interior (block, tile) pairs, ties to the
    smallest (as :func:`model.simulate.simulate` picks its interior representative). ``dims``: per
    dimension, (residue, count) of the tiles that count as interior."""
    hist = np.zeros(SECTOR_WORDS, dtype=np.int64)
    acc = {0: 1}
    for d in dims:
        nxt: dict[int, int] = {}
        for r0, c0 in acc.items():
            for r, c in d:
                k = (r0 + r) % SECTOR_WORDS
                nxt[k] = nxt.get(k, 0) + c0 * c
        acc = nxt
    for k, v in acc.items():
        hist[k] += v
    return int(np.argmax(hist))     # argmax returns the first (smallest residue) of equal counts


def _dim(starts: Sequence[int], coef: int, full: Sequence[bool] | None = None) -> list[tuple[int, int]]:
    out: dict[int, int] = {}
    for i, s in enumerate(starts):
        if full is not None and not full[i]:
            continue
        r = (s % SECTOR_WORDS) * (coef % SECTOR_WORDS) % SECTOR_WORDS
        out[r] = out.get(r, 0) + 1
    return list(out.items())


@functools.lru_cache(maxsize=None)
def _residues(naive: bool, BM: int, BN: int, BK: int) -> dict[str, int]:
    """Interior residue of the A, B (per K tile) and C (per block) origins at the probe size."""
    N, K = 2 * BN, max(64, 4 * BK)      # probe_size: M = 2 BM (its residues do not depend on M)
    kt = 1 if naive else BK
    T = -(-K // kt)
    ms, ns = [0, BM], [0, BN]
    ks = [t * kt for t in range(T)]
    kfull = [s + kt <= K for s in ks]
    if naive:   # A and B depend on m, n only: every k step counts as interior
        a = _mode_residue([_dim(ms, K), _dim(ns, 0), _dim(ks, 1)])
        b = _mode_residue([_dim(ms, 0), _dim(ns, 1), _dim(ks, N)])
    else:
        a = _mode_residue([_dim(ms, K), _dim(ns, 0), _dim(ks, 1, kfull)])
        b = _mode_residue([_dim(ms, 0), _dim(ns, 1), _dim(ks, N, kfull)])
    c = _mode_residue([_dim(ms, N), _dim(ns, 1)])
    return {"A": a, "B": b, "C": c}


def _global_counts(off: np.ndarray, act: np.ndarray, width: int) -> tuple[int, int, int, int]:
    from .simulate import global_lines, global_requests_sectors
    off = off.reshape(-1, WARP_SIZE)
    act = act.reshape(-1, WARP_SIZE)
    req, sec = global_requests_sectors(off, act)
    return int(req.sum()), int(sec.sum()), int(global_lines(off, act).sum()), int(act.sum()) * width * 4


@functools.lru_cache(maxsize=None)
def _tile_load(threads: int, rows: int, row_len: int, vec: int, ld: int, rho: int) -> tuple[int, int, int, int]:
    """(requests, sectors, lines, bytes) of one interior tile load ``for i = tid; i < rows*row_len;
    i += threads``: element i at ``(i // row_len) * ld + vec * (i % row_len) + rho`` (floats), ``vec``
    floats per lane (1: LDG, 4: LDG.128)."""
    tid, real, tpad = _lanes(threads)
    n = rows * row_len
    i = tid[None, :] + threads * np.arange(-(-n // threads), dtype=np.int64)[:, None]
    act = real[None, :] & (i < n)
    off = (i // row_len) * ld + vec * (i % row_len) + rho
    return _global_counts(off, act, vec)


@functools.lru_cache(maxsize=None)
def _c_store(rung: int, BM: int, BN: int, TM: int, TN: int, threads: int, N: int, rho: int, bx: int,
             coalesced: int, element: bool = False) -> tuple[int, int, int]:
    """(requests, sectors, 128-byte line wavefronts) of one interior block's C stores; ``element``: its
    16-byte stores as four 4-byte ones each (C's rows not 16-byte aligned)."""
    tid, real, tpad = _lanes(threads)
    if rung == 1:
        tx, ty = tid % bx, tid // bx
        row, col = (ty, tx) if coalesced else (tx, ty)
        off, act, w = (row * N + col)[None], real[None], 1
    elif rung == 2:
        ty, tx = tid // BN, tid % BN
        off, act, w = (ty * N + tx)[None], real[None], 1
    elif rung == 3:
        tc, tr = tid % BN, tid // BN
        i = np.arange(TM, dtype=np.int64)[:, None]
        off, act, w = (tr[None] * TM + i) * N + tc[None], np.broadcast_to(real[None], (TM, tpad)), 1
    elif rung == 4:
        tx, ty = tid % (BN // TN), tid // (BN // TN)
        i = np.repeat(np.arange(TM, dtype=np.int64), TN)[:, None]
        j = np.tile(np.arange(TN, dtype=np.int64), TM)[:, None]
        off = (ty[None] * TM + i) * N + tx[None] * TN + j
        act, w = np.broadcast_to(real[None], off.shape), 1
    else:
        tx, ty = tid % (BN // TN), tid // (BN // TN)
        i = np.repeat(np.arange(TM, dtype=np.int64), TN // 4)[:, None]
        j = np.tile(np.arange(0, TN, 4, dtype=np.int64), TM)[:, None]
        off = (ty[None] * TM + i) * N + tx[None] * TN + j
        act, w = np.broadcast_to(real[None], off.shape), 4
        if element:
            off = np.concatenate([off + e for e in range(4)])
            act, w = np.broadcast_to(real[None], off.shape), 1
    r, s, lines, _ = _global_counts(off + rho, act, w)
    return r, s, lines


def _sts_rows(width: int, addr: np.ndarray, act: np.ndarray) -> tuple[int, int, int]:
    from .simulate import shared_wavefronts
    a, m = addr.reshape(-1, WARP_SIZE), act.reshape(-1, WARP_SIZE)
    wf, ideal = shared_wavefronts(a, m, width, "st")
    return int(m.any(axis=1).sum()), int(wf.sum()), int((wf - ideal).sum())


@functools.lru_cache(maxsize=None)
def _sts_linear(threads: int, n: int, width: int, base: int) -> tuple[int, int, int]:
    """(instructions, wavefronts, conflicts) of a linear tile store ``S[base + width*i] = ..`` for
    ``i = tid; i < n; i += threads`` (scalar As/Bs of rungs 02-04, the STS.128 of Bs in rungs 05/06)."""
    tid, real, tpad = _lanes(threads)
    i = tid[None, :] + threads * np.arange(-(-n // threads), dtype=np.int64)[:, None]
    return _sts_rows(width, base + width * i, real[None, :] & (i < n))


@functools.lru_cache(maxsize=None)
def _sts_transposed(threads: int, BM: int, BK: int) -> tuple[int, int, int]:
    """The same for rungs 05/06's transposed A store: AsT[(c+e)*BM + r] = v.e, 4 scalar STS per slot."""
    tid, real, tpad = _lanes(threads)
    A4 = BM * BK // 4
    ia = tid[None, :] + threads * np.arange(-(-A4 // threads), dtype=np.int64)[:, None]
    in_a = real[None, :] & (ia < A4)
    ra, ca = ia // (BK // 4), 4 * (ia % (BK // 4))
    e4 = np.arange(4, dtype=np.int64)
    sts_a = ((ca[:, None, :] + e4[None, :, None]) * BM + ra[:, None, :]).reshape(-1, tpad)
    act_a = np.broadcast_to(in_a[:, None, :], (in_a.shape[0], 4, tpad)).reshape(-1, tpad)
    return _sts_rows(1, sts_a, act_a)


def _sts_pattern(kind: str, threads: int, BM: int, BK: int, BN: int) -> tuple[int, int, int]:
    """(instructions, wavefronts, bank conflicts) of one block's shared stores of a K tile."""
    if kind == "scalar":     # As[i] = ..., Bs[BM*BK + i] = ... (linear loops, scalar STS)
        parts = (_sts_linear(threads, BM * BK, 1, 0), _sts_linear(threads, BK * BN, 1, (BM * BK) % LINE_WORDS))
    else:                    # AsT transposed (scalar STS); Bs[BM*BK + 4i] = v (STS.128)
        parts = (_sts_transposed(threads, BM, BK),
                 _sts_linear(threads, BK * BN // 4, 4, (BM * BK) % LINE_WORDS))
    return tuple(a + b for a, b in zip(*parts))


def _lds_bank(threads: int, div: int, mul_q: int, mul_r: int, off: int, width: int) -> tuple[int, int, int]:
    """(instructions, wavefronts, conflicts) of one shared load pattern (see :func:`_lds_pattern`)."""
    from .simulate import shared_wavefronts
    key = (threads, div, mul_q, mul_r, off % LINE_WORDS, width)
    hit = _LDS_CONF.get(key)
    if hit is None:
        tid, real, tpad = _lanes(threads)
        addr = off % LINE_WORDS + mul_q * (tid // div) + mul_r * (tid % div)
        a, m = addr.reshape(-1, WARP_SIZE), real.reshape(-1, WARP_SIZE)
        wf, ideal = shared_wavefronts(a, m, width, "ld")
        hit = (int(m.any(axis=1).sum()), int(wf.sum()), int((wf - ideal).sum()))
        _LDS_CONF[key] = hit
    return hit


_LDS_CONF: dict[tuple, tuple[int, int, int]] = {}


def closed_form_extras(cfg: KernelConfig) -> dict:
    """:func:`simulated_extras` without the simulator (rungs of :data:`CLOSED_FORM_RUNGS`): one iteration
    covers the block's K depth ``BK`` of the geometry, and the C-store lines come from the same interior
    store pattern as the closed-form counts."""
    g = geometry(cfg)
    N = 2 * g.BN
    rho = _residues(cfg.rung == 1, g.BM, g.BN, g.BK)
    if cfg.rung == 1:
        p = cfg.p
        gst = gse = _c_store(1, g.BM, g.BN, 1, 1, g.threads, N, rho["C"], p["BX"], p["COALESCED"])
    else:
        gst = _c_store(cfg.rung, g.BM, g.BN, g.TM, g.TN, g.threads, N, rho["C"], 0, 0)
        gse = _c_store(cfg.rung, g.BM, g.BN, g.TM, g.TN, g.threads, N, rho["C"], 0, 0, True)
    return {"k_tile": int(g.BK), "store_lines": int(gst[2]), "store_lines_element": int(gse[2]),
            "store_sectors_element": int(gse[1]), "gld_wf": wavefront_key(cfg)}


@functools.lru_cache(maxsize=None)
def closed_form_counts(cfg: KernelConfig):
    """The simulator's :class:`~model.simulate.BlockIteration` of ``cfg`` at :func:`probe_size` with
    ``plan="sass"``, without simulating every warp (see the module doc). Equal to
    :func:`simulated_counts` for every shipped config (``tests/test_counts.py``)."""
    from .errors import ConfigError
    from .simulate import BlockIteration, _runs, resolve_plan

    r = cfg.rung
    if r not in CLOSED_FORM_RUNGS:
        raise ConfigError(f"no closed form for rung {r:02d} (rungs {sorted(CLOSED_FORM_RUNGS)}): "
                          "model.counts.simulated_counts counts it", limit="rung")
    g = geometry(cfg)
    N, K = 2 * g.BN, max(64, 4 * g.BK)     # probe_size(cfg) (M = 2 BM)
    NT = g.threads
    warps = -(-NT // WARP_SIZE)
    rho = _residues(r == 1, g.BM, g.BN, g.BK)
    BM, BN, BK, TM, TN = g.BM, g.BN, g.BK, g.TM, g.TN
    if r == 1:
        p = cfg.p
        bx, co = p["BX"], p["COALESCED"]
        tid, real, tpad = _lanes(NT)
        tx, ty = tid % bx, tid // bx
        row, col = (ty, tx) if co else (tx, ty)
        a = _global_counts(row * K + rho["A"], real, 1)
        b = _global_counts(col + rho["B"], real, 1)
        gst = _c_store(1, BM, BN, 1, 1, NT, N, rho["C"], bx, co)
        return BlockIteration(
            warps=warps, threads=NT, gld_requests=a[0] + b[0], gld_sectors=a[1] + b[1],
            global_load_bytes_requested=a[3] + b[3], gld_lines=a[2] + b[2],
            lds_instructions=0, lds_wavefronts=0, lds_bank_conflicts=0,
            sts_instructions=0, sts_wavefronts=0, sts_bank_conflicts=0,
            ffma_thread=NT, ffma_warp=warps, bar_warp=0, int_warp_est=warps * 4,
            gst_requests=gst[0], gst_sectors=gst[1])
    plan = resolve_plan(cfg, "sass")
    ru = _runs(cfg)
    per = plan.per_tile(ru)
    if r in (2, 3, 4):
        a = _tile_load(NT, BM, BK, 1, K, rho["A"])
        b = _tile_load(NT, BK, BN, 1, N, rho["B"])
        sts = _sts_pattern("scalar", NT, BM, BK, BN)
        a_it, b_it = -(-BM * BK // NT), -(-BK * BN // NT)
        ldg_slots, sts_slots = a_it + b_it, a_it + b_it
        if r == 2:      # As[ty*BK + kk], Bs[BM*BK + kk*BN + tx], ty = tid // BN
            pa, pb = (BN, BK, 0, 0), (BN, 0, 1, BM * BK)
        elif r == 3:    # As[(tr*TM + i)*BK + kk], Bs[BM*BK + kk*BN + tc], tr = tid // BN
            pa, pb = (BN, TM * BK, 0, 0), (BN, 0, 1, BM * BK)
        else:           # As[(ty*TM + i)*BK + kk], Bs[BM*BK + kk*BN + tx*TN + j], ty = tid // (BN/TN)
            pa, pb = (BN // TN, TM * BK, 0, 0), (BN // TN, 0, TN, BM * BK)
        bars = warps * 2
    else:
        a = _tile_load(NT, BM, BK // 4, 4, K, rho["A"])
        b = _tile_load(NT, BK, BN // 4, 4, N, rho["B"])
        sts = _sts_pattern("float4", NT, BM, BK, BN)
        A4, B4 = BM * BK // 4, BK * BN // 4
        slots = -(-A4 // NT) + -(-B4 // NT)
        ldg_slots, sts_slots = 5 * slots, 4 * -(-A4 // NT) + -(-B4 // NT)
        # AsT[kk*BM + ty*TM + i], Bs[BM*BK + kk*BN + tx*TN + j], ty = tid // (BN/TN)
        pa, pb = (BN // TN, TM, 0, 0), (BN // TN, 0, TN, BM * BK)
        bars = warps * 2 if r == 5 else warps
    lds_i = lds_w = lds_c = 0
    for (div, mq, mr, off), h in ((pa, per["A"]), (pb, per["B"])):
        for w, n in sorted(h.items()):
            if not n:
                continue
            i_, w_, c_ = _lds_bank(NT, div, mq, mr, off, w)
            lds_i += n * i_
            lds_w += n * w_
            lds_c += n * c_
    gst = _c_store(r, BM, BN, TM, TN, NT, N, rho["C"], 0, 0)
    ffma = BK * TM * TN
    return BlockIteration(
        warps=warps, threads=NT, gld_requests=a[0] + b[0], gld_sectors=a[1] + b[1],
        global_load_bytes_requested=a[3] + b[3], gld_lines=a[2] + b[2],
        lds_instructions=lds_i, lds_wavefronts=lds_w, lds_bank_conflicts=lds_c,
        sts_instructions=sts[0], sts_wavefronts=sts[1], sts_bank_conflicts=sts[2],
        ffma_thread=NT * ffma, ffma_warp=warps * ffma, bar_warp=bars,
        int_warp_est=warps * (5 + 3 * ldg_slots + sts_slots),
        gst_requests=gst[0], gst_sectors=gst[1])


# ==================================================================================================
# L1 data-stage wavefronts of the global loads, by leading-dimension residue
# ==================================================================================================

BANK_RESIDUES = 32
"""Banks of the L1 data array (32 x 4 bytes, the array shared memory uses): a global load's data-stage
wavefronts depend on the leading dimension only through its residue mod 32 words."""


@functools.lru_cache(maxsize=None)
def _data_wavefronts(kind: str, threads: int, a: int, b: int, vec: int) -> np.ndarray:
    """Data-stage wavefronts (bank conflicts included) of one block's warp-level global loads of one
    operand in one iteration, at a leading dimension of each residue mod 32 words (an array of 32).
    ``kind``: "tile" (``_tile_load``'s pattern: ``a`` rows of ``b`` vectors of ``vec`` floats; "tile_sc":
    the same vectors each read as ``vec`` scalar loads, the float4 kernels' path when the leading dimension
    is not a multiple of 4), "pairs" / "pairs_sc" (rung 07's A: float4s in lane pairs, ``a`` = BM, ``b`` =
    BK), "elem8" (rung 08's A: 4-byte cp.async copies, 8 consecutive k per row), "rows"
    (the naive kernel's lane rows: lane -> row ``tid % a`` when ``b`` = 0 (threadIdx.x walks the rows),
    else ``tid // a``; one float each; ``a`` = BX), "cols" (the naive kernel's other operand, lane ->
    column ``tid % a`` when ``b`` = 1, else ``tid // a``: one row, so no dependence on the residue)."""
    from .simulate import shared_wavefronts
    tid, real, tpad = _lanes(threads)
    if kind in ("tile", "tile_sc"):
        # warp by warp: a warp's lanes hold elements i0 .. i0 + lanes - 1 (rows of b vectors); its
        # wavefronts depend only on i0 mod b and its active lanes (a shift of whole rows rotates every bank)
        n = a * b
        w0 = np.arange(0, threads, WARP_SIZE, dtype=np.int64)[None, :]
        i0 = (w0 + threads * np.arange(-(-n // threads), dtype=np.int64)[:, None]).ravel()
        lanes = np.minimum(np.minimum(WARP_SIZE, threads - np.broadcast_to(w0, (len(i0) // w0.shape[1], w0.shape[1])).ravel()),
                           n - i0)
        sc = kind == "tile_sc"
        full = lanes == WARP_SIZE
        out = np.bincount(i0[full] % b, minlength=b).astype(np.float64) @ _warp_tile_table(b, vec, WARP_SIZE, sc)
        part = np.flatnonzero((lanes > 0) & ~full)
        for st, ln in zip((i0[part] % b).tolist(), lanes[part].tolist()):
            out = out + _warp_tile_wavefronts(b, vec, st, ln, sc)
        out.flags.writeable = False
        return out
    expand = 1
    if kind in ("pairs", "pairs_sc"):
        n4 = a * b // 4
        i = tid[None, :] + threads * np.arange(-(-n4 // threads), dtype=np.int64)[:, None]
        act = real[None, :] & (i < n4)
        h = i >> 1
        row, col = h % a, 4 * (2 * (h // a) + (i & 1))
        if kind == "pairs_sc":
            expand, vec = 4, 1
    elif kind == "elem8":
        n = a * b
        e = tid[None, :] + threads * np.arange(-(-n // threads), dtype=np.int64)[:, None]
        act = real[None, :] & (e < n)
        row, col = (e // 8) % a, 8 * (e // (8 * a)) + e % 8
    elif kind == "rows":
        row = (tid % a if b == 0 else tid // a)[None]
        col, act = np.zeros_like(row), real[None]
    else:
        col = (tid % a if b else tid // a)[None]
        row, act = np.zeros_like(col), real[None]
    if expand > 1:     # each vector read as scalar loads: one warp instruction per element
        e4 = np.arange(expand, dtype=np.int64)[None, :, None]
        row = np.broadcast_to(row[:, None, :], (row.shape[0], expand, row.shape[1])).reshape(-1, row.shape[-1])
        col = (col[:, None, :] + e4).reshape(-1, col.shape[-1])
        act = np.broadcast_to(act[:, None, :], (act.shape[0], expand, act.shape[1])).reshape(-1, act.shape[-1])
    keep = act.reshape(-1, WARP_SIZE).any(axis=1)
    row, col, act = (x.reshape(-1, WARP_SIZE)[keep] for x in (row, col, act))
    # A warp's wavefronts do not change when all its rows shift by one (every bank rotates alike): count
    # each distinct warp pattern (rows relative to its first lane's, columns, active lanes) once.
    rel = np.where(act, row - row[:, :1], -1)
    key = np.concatenate([rel, np.where(act, col, -1)], axis=1)
    _, first, mult = np.unique(key, axis=0, return_index=True, return_counts=True)
    row, col, act = rel[first], col[first], act[first]
    # any leading dimension with the residue (rows in different lines): one row of warps per residue
    ld = 64 * BANK_RESIDUES + np.arange(BANK_RESIDUES, dtype=np.int64)
    off = (np.maximum(row, 0)[None] * ld[:, None, None] + col[None]).reshape(-1, WARP_SIZE)
    wf, _ = shared_wavefronts(off, np.broadcast_to(act[None], (BANK_RESIDUES,) + act.shape).reshape(-1, WARP_SIZE),
                              vec, "ld")
    out = (wf.reshape(BANK_RESIDUES, -1) * mult[None]).sum(axis=1).astype(np.float64)
    out.flags.writeable = False
    return out


def _warp_tile_wavefronts(b: int, vec: int, start: int, lanes: int, scalar: bool = False) -> np.ndarray:
    """Data-stage wavefronts of one warp of a tile load whose active lanes read elements start ..
    start + lanes - 1 of rows of ``b`` vectors of ``vec`` floats, at each leading-dimension residue
    (``scalar``: each vector as ``vec`` scalar loads)."""
    return _warp_tile_table(b, vec, lanes, scalar)[start]


@functools.lru_cache(maxsize=None)
def _warp_tile_table(b: int, vec: int, lanes: int, scalar: bool) -> np.ndarray:
    """:func:`_warp_tile_wavefronts` for every start 0 .. b-1 at once: a (b, 32) array."""
    from .simulate import shared_wavefronts
    i = np.arange(b, dtype=np.int64)[:, None] + np.arange(WARP_SIZE, dtype=np.int64)[None, :]   # (start, lane)
    act = np.broadcast_to(np.arange(WARP_SIZE) < lanes, (BANK_RESIDUES, b, WARP_SIZE))
    ld = 64 * BANK_RESIDUES + np.arange(BANK_RESIDUES, dtype=np.int64)
    off = (i // b)[None] * ld[:, None, None] + vec * (i % b)[None]                              # (res, start, lane)
    if not scalar:
        wf = shared_wavefronts(off.reshape(-1, WARP_SIZE), act.reshape(-1, WARP_SIZE), vec, "ld")[0]
    else:
        wf = sum(shared_wavefronts((off + e).reshape(-1, WARP_SIZE), act.reshape(-1, WARP_SIZE), 1, "ld")[0]
                 for e in range(vec))
    out = np.ascontiguousarray(wf.reshape(BANK_RESIDUES, b).T.astype(np.float64))
    out.flags.writeable = False
    return out


def _wavefront_args(cfg: KernelConfig) -> tuple | None:
    r = cfg.rung
    if r not in CLOSED_FORM_RUNGS and r not in WARP_TILED_RUNGS:
        return None
    g = geometry(cfg)
    if r == 1:
        p = cfg.p
        return (r, g.threads, 0, 0, 0, p["BX"], p["COALESCED"], False)
    return (r, g.threads, g.BM, g.BN, g.BK, 0, 0, bool(r in WARP_TILED_RUNGS and g.async_copy))


def wavefront_key(cfg: KernelConfig) -> str | None:
    """What :func:`global_load_wavefronts` of ``cfg`` depends on, as text (``"4/256/128/128/8/0/0/0"``), or None.
    The extras store this key (``gld_wf``) and the cache file each distinct table once (``"wavefronts"``), so
    that ranking a cached space reads the tables instead of rebuilding them."""
    a = _wavefront_args(cfg)
    return None if a is None else "/".join(str(int(x)) for x in a)


def wavefront_table(key: str) -> np.ndarray:
    """The table of a :func:`wavefront_key`."""
    r, nt, bm, bn, bk, bx, co, asy = (int(x) for x in key.split("/"))
    return _load_wavefronts(r, nt, bm, bn, bk, bx, co, bool(asy))


def global_load_wavefronts(cfg: KernelConfig) -> np.ndarray | None:
    """(2, 32) array: L1 data-stage wavefronts of one block's global loads in one iteration, of A by the
    residue of K mod 32 (row 0) and of B by the residue of N mod 32 (row 1); None for a rung whose
    load pattern the closed form does not mirror (the timing model then takes the 128-byte lines).

    The L1 data array has 32 banks of 4 bytes (the array shared memory uses); a global load whose lanes
    read words of different lines in one bank is split into that many wavefronts - Nsight Compute counts
    them as ``l1tex__data_bank_conflicts_pipe_lsu_mem_global_op_ld``. Rows of a matrix whose leading
    dimension is a multiple of 32 words start in the same bank: the naive kernel's column walk over 32
    rows costs 32 wavefronts; at an odd leading dimension the 32 rows fall in 32 banks: one."""
    a = _wavefront_args(cfg)
    return None if a is None else _load_wavefronts(*a)


@functools.lru_cache(maxsize=None)
def _load_wavefronts(r: int, NT: int, BM: int, BN: int, BK: int, bx: int, co: int, async_copy: bool) -> np.ndarray:
    """:func:`global_load_wavefronts` by what it depends on (configs differing in TM, TN only share it)."""
    vec4 = np.arange(BANK_RESIDUES) % 4 == 0      # float4 kernels: vector loads only at a multiple of 4
    if r in WARP_TILED_RUNGS:
        a_sc = _data_wavefronts("elem8", NT, BM, BK, 1) if async_copy else \
            np.where(vec4, _data_wavefronts("pairs", NT, BM, BK, 4), _data_wavefronts("pairs_sc", NT, BM, BK, 4))
        b_t = np.where(vec4, _data_wavefronts("tile", NT, BK, BN // 4, 4), _data_wavefronts("tile_sc", NT, BK, BN // 4, 4))
        return _frozen(np.stack([a_sc, b_t]))
    if r == 1:
        # COALESCED: row = tid // BX (A: rows by lane), B by columns; else row = tid % BX
        a_key = ("rows", NT, bx, 1 if co else 0, 1)
        b_key = ("cols", NT, bx, 1 if co else 0, 1)
    elif r in (2, 3, 4):
        a_key = ("tile", NT, BM, BK, 1)
        b_key = ("tile", NT, BK, BN, 1)
    else:
        return _frozen(np.stack([np.where(vec4, _data_wavefronts("tile", NT, BM, BK // 4, 4),
                                          _data_wavefronts("tile_sc", NT, BM, BK // 4, 4)),
                                 np.where(vec4, _data_wavefronts("tile", NT, BK, BN // 4, 4),
                                          _data_wavefronts("tile_sc", NT, BK, BN // 4, 4))]))
    return _frozen(np.stack([_data_wavefronts(*a_key), _data_wavefronts(*b_key)]))


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


# ==================================================================================================
# Blocks whose tile is partly outside C, in kernels whose outside threads return
# ==================================================================================================


def exit_pattern(cfg: KernelConfig) -> tuple[int, int, int] | None:
    """(threads, BX, COALESCED) of a kernel whose threads outside C return before the loop (the
    simulator's ``thread_active``: the naive kernel's ``if (row >= M || col >= N) return;``), or None when
    every thread of a block takes part (tile loads, barriers) whatever part of its tile lies outside C."""
    if cfg.rung != 1:
        return None
    p = cfg.p
    return geometry(cfg).threads, int(p["BX"]), int(p["COALESCED"])


@functools.lru_cache(maxsize=None)
def exit_block_counts(threads: int, bx: int, coalesced: int, rv: int, cv: int) -> tuple[int, int, int]:
    """(active warps, global-load 128-byte lines, warp-level global loads) of one block of
    :func:`exit_pattern` ``(threads, bx, coalesced)`` in one iteration, when ``rv`` rows and ``cv``
    columns of its tile lie inside C: a warp none of whose threads is inside has returned; an active
    warp's loads touch the lines of its active lanes only (the simulator's ``_naive`` index map)."""
    tid, real, tpad = _lanes(threads)
    tx, ty = tid % bx, tid // bx
    row, col = (ty, tx) if coalesced else (tx, ty)
    act = real & (row < rv) & (col < cv)
    K = 64 * LINE_WORDS                    # rows of A in different lines, as at any real size
    a = _global_counts(row * K, act, 1)
    b = _global_counts(col, act, 1)
    warps = int(act.reshape(-1, WARP_SIZE).any(axis=1).sum())
    return warps, a[2] + b[2], a[0] + b[0]


def load_wavefronts_array(cfgs: Sequence[KernelConfig], keys: Sequence[str] | None = None,
                          cache_path: str | Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """((n, 2, 32) array, (n,) bool): :func:`global_load_wavefronts` of every config and whether it has
    one, read from the cache's extras where it holds them (else computed)."""
    c = _cache(str(cache_path or COUNTS_FILE))
    keys = [cfg.key for cfg in cfgs] if keys is None else keys
    out = np.zeros((len(cfgs), 2, BANK_RESIDUES))
    has = np.zeros(len(cfgs), dtype=bool)
    extras, stored = (c.extras, c.wavefronts) if c.fresh else ({}, {})
    tables: dict[str, np.ndarray] = {}
    for i, (cfg, key) in enumerate(zip(cfgs, keys)):
        e = extras.get(key)
        wk = e["gld_wf"] if e is not None and "gld_wf" in e else wavefront_key(cfg)
        if wk is None:
            continue
        t = tables.get(wk)
        if t is None:
            t = tables[wk] = np.asarray(stored[wk]) if wk in stored else wavefront_table(wk)
        out[i], has[i] = t, True
    return out, has


def wavefront_tables(extras: Mapping[str, dict]) -> dict[str, list]:
    """``{key: table}`` of every distinct :func:`wavefront_key` in ``extras`` (the cache file's
    ``"wavefronts"``)."""
    ks = sorted({e["gld_wf"] for e in extras.values() if e.get("gld_wf")})
    return {k: wavefront_table(k).tolist() for k in ks}


EXTRA_FIELDS = ("k_tile", "store_lines", "store_lines_element", "store_sectors_element")
"""The :func:`steady_extras` fields :func:`counts_array` serves beside the counts."""


def _getter(names: Sequence[str]):
    """mapping -> tuple of its values at ``names`` (operator.itemgetter, a tuple also for one name)."""
    if len(names) == 1:
        one = operator.itemgetter(names[0])
        return lambda d: (one(d),)
    return operator.itemgetter(*names) if names else (lambda d: ())


def counts_array(cfgs: Sequence[KernelConfig], fields_: Sequence[str] = ("warps", "gld_lines", "lds_wavefronts",
                                                                          "sts_wavefronts"),
                 cache_path: str | Path | None = None, keys: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """{field: float64 array over ``cfgs``} of :func:`steady_counts` (and of :func:`steady_extras` for the
    fields in :data:`EXTRA_FIELDS`): numpy columns for the vectorised timing model.

    The same answers as :func:`steady_counts` / :func:`steady_extras` config by config, but a config
    in the cache is read from the file's JSON directly (no dataclass per config): ranking a space whose
    counts are cached costs a dictionary look-up per config. ``keys``: the configs' keys, when the caller
    has them already."""
    c = _cache(str(cache_path or COUNTS_FILE))
    keys = [cfg.key for cfg in cfgs] if keys is None else keys
    cf = [f for f in fields_ if f not in EXTRA_FIELDS]
    ef = [f for f in fields_ if f in EXTRA_FIELDS]
    raw = c.counts.raw if isinstance(c.counts, _LazyCounts) else (lambda key: None)
    extras = c.extras
    get_c, get_e = _getter(cf), _getter(ef)
    rows = []
    for cfg, key in zip(cfgs, keys):
        d = raw(key)
        if d is None:
            b = steady_counts(cfg, cache_path)
            row = tuple(getattr(b, f) for f in cf)
        else:
            row = get_c(d)
        if ef:
            e = extras.get(key)
            row += get_e(steady_extras(cfg, cache_path) if e is None else e)
        rows.append(row)
    arr = np.array(rows, dtype=np.float64).reshape(len(rows), len(cf) + len(ef))
    return {f: arr[:, j] for j, f in enumerate(cf + ef)}


# ==================================================================================================
# Shipping the cache
# ==================================================================================================


def shipped_configs() -> list[KernelConfig]:
    """Every config the project ships data for: the sm_90 compiler facts, the configs of every shipped
    sweep (on the H200) and of every shipped results file (rung 00 excluded)."""
    from .facts import available_archs, load_facts
    keys: dict[str, None] = {}
    for arch in available_archs():
        keys.update(dict.fromkeys(load_facts(arch)))
    root = Path(__file__).resolve().parent.parent
    for p in sorted((root / "experiments" / "results").glob("*/*.jsonl")):
        for line in p.read_text().splitlines():
            if '"config_key"' in line:
                try:
                    keys.setdefault(json.loads(line)["config_key"], None)
                except (ValueError, KeyError):
                    pass
    try:
        from experiments.sweep import load_sweep, sweep_names
        from .spec import load_gpu
        h200 = load_gpu("h200")
        for name in sweep_names():
            for t in load_sweep(name).tasks(h200)[0]:
                keys.setdefault(t.config.key, None)
    except ImportError:     # the model alone, without experiments/
        pass
    out = []
    for k in keys:
        try:
            c = KernelConfig.parse(k)
        except Exception:  # noqa: BLE001 - a foreign key in some file: not ours to count
            continue
        if c.rung != 0:
            out.append(c)
    return out


def ship(path: Path = COUNTS_FILE, cfgs: Sequence[KernelConfig] | None = None,
         log=lambda s: print(s, file=sys.stderr)) -> dict:
    """Simulate every shipped config, check the closed form against it, write the cache file."""
    cfgs = list(cfgs if cfgs is not None else shipped_configs())
    counts, extras, mismatch = {}, {}, []
    for i, c in enumerate(cfgs):
        sim = simulated_counts(c)
        counts[c.key] = asdict(sim)
        extras[c.key] = simulated_extras(c)
        if c.rung in CLOSED_FORM_RUNGS and (closed_form_counts(c) != sim or closed_form_extras(c) != extras[c.key]):
            mismatch.append(c.key)
        if (i + 1) % 200 == 0:
            log(f"{i + 1}/{len(cfgs)} configs simulated")
    doc = {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "digest": simulator_digest(),
           "probe": "M = 2 BM, N = 2 BN, K = max(64, 4 BK); plan = 'sass'",
           "generator": "python -m model.counts --ship",
           "closed_form_checked": not mismatch, "closed_form_mismatches": mismatch,
           "counts": dict(sorted(counts.items())), "extras": dict(sorted(extras.items())),
           "wavefronts": wavefront_tables(extras)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, separators=(",", ":"), sort_keys=False) + "\n")
    log(f"wrote {path}: {len(counts)} configs, digest {doc['digest']}, closed form "
        + ("equals the simulator on all" if not mismatch else f"DIFFERS on {len(mismatch)}: {mismatch[:5]}"))
    return doc


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m model.counts", description=__doc__.splitlines()[0])
    ap.add_argument("--ship", action="store_true", help="simulate every shipped config and write the cache")
    ap.add_argument("--check", action="store_true", help="say whether the shipped cache is fresh")
    ap.add_argument("--out", type=Path, default=COUNTS_FILE)
    a = ap.parse_args(argv)
    if a.ship:
        doc = ship(a.out)
        return 0 if doc["closed_form_checked"] else 1
    c = CountsCache(a.out)
    print(f"{a.out}: " + ("fresh" if c.fresh else f"STALE ({c.stale_reason})")
          + (f", {len(c.counts)} configs, closed form checked: {c.closed_form_checked}" if c.fresh else ""))
    return 0 if c.fresh else 1


if __name__ == "__main__":
    sys.exit(main())
