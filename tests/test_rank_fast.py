"""The ranking fast path (issue 10) against the single-config path, config by config.

``model.timing._arrays_for`` builds the timing model's per-config arrays of a whole space at once: counts
read as columns from the counts cache's JSON (``model.counts.counts_array``), the compiler facts table looked
up once, the traffic scalars evaluated once per distinct row, and ``experiments.tune.rank`` evaluates one
size at a time. ``predict_rows``, ``calibrate``, the report and the tuner take it. ``predict`` (one config)
takes the other path: ``profile()`` per config (``steady_counts`` / ``steady_extras`` / ``facts_for``, the
dataclasses), one row at a time. The two must agree exactly (same floating-point operations), on every
rung, on sizes that are not multiples of anything, on GPUs with and without a ``[timing]`` table, with and
without compiler facts, and with registers given. A bug planted in the fast path (a count column read
from the wrong field, a facts row misaligned, a distinct-row index off, a size column swapped) fails here.
No GPU needed.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

from experiments.tune import rank
from model import counts
from model.registry import KernelConfig, is_valid
from model.spec import load_gpu
from model.timing import _arrays_for, _arrays_of_profiles, predict, predict_rows

GPUS = ("h200", "rtxa6000", "rtx4060")          # Hopper with a [timing] table, Ampere, Ada (estimates)
SIZES = [(1000, 1000, 1000), (777, 1531, 93), (4096, 130, 4097), (33, 65, 17), (3001, 2003, 1499),
         (8192, 8192, 128), (129, 8191, 4096)]
# Configs with no shipped counts or facts (the closed form, the estimated trace): odd tiles.
UNSHIPPED = ("03:BM=48,BN=96,BK=12,TM=3", "04:BM=96,BN=48,BK=24,TM=6,TN=3", "05:BM=192,BN=64,BK=12,TM=12,TN=4",
             "06:BM=48,BN=192,BK=24,TM=3,TN=12", "02:BM=16,BN=48,BK=8", "04:BM=64,BN=192,BK=4,TM=2,TN=6")


@functools.lru_cache(maxsize=None)
def _shipped() -> tuple[KernelConfig, ...]:
    """The configs of the shipped counts cache (every shipped config: compiler facts, sweeps, results)."""
    return tuple(KernelConfig.parse(k) for k in sorted(counts.CountsCache().counts))


def _mixed(gpu, n_per_rung: int = 14) -> list[KernelConfig]:
    """Shipped configs of every rung 01-12 the GPU runs (with counts in the cache and compiler facts) plus unshipped ones."""
    by_rung: dict[int, list[KernelConfig]] = {}
    for c in _shipped():
        by_rung.setdefault(c.rung, []).append(c)
    out = []
    for r in sorted(by_rung):
        cs = sorted(by_rung[r], key=lambda c: c.key)
        out += [c for c in cs[:: max(1, len(cs) // n_per_rung)] if is_valid(c, gpu)][:n_per_rung]
    out += [c for c in map(KernelConfig.parse, UNSHIPPED) if is_valid(c, gpu)]
    return out


@pytest.fixture(scope="module", params=GPUS)
def space(request):
    gpu = load_gpu(request.param)
    cfgs = _mixed(gpu)
    want = set(range(1, 13)) if gpu.cc_major >= 9 else set(range(1, 12))     # rung 12 needs Hopper
    assert {c.rung for c in cfgs} == want, "every rung the GPU runs is covered"
    return gpu, cfgs


def test_fast_arrays_equal_the_profiles_column_by_column(space) -> None:
    gpu, cfgs = space
    regs = [None if i % 3 else 40 + i % 64 for i in range(len(cfgs))]     # some with registers given
    for r in (None, regs):
        (fast,), _ = _arrays_for(gpu, cfgs, r)
        (ref,), _ = _arrays_of_profiles(gpu, cfgs, r)
        for name in fast.__dataclass_fields__:
            a, b = getattr(fast, name), getattr(ref, name)
            assert a.shape == b.shape and a.dtype == b.dtype, name
            bad = np.flatnonzero((a != b).reshape(len(cfgs), -1).any(axis=1))
            assert not len(bad), f"{gpu.key} {name}: {cfgs[bad[0]].key}: {a[bad[0]]} != {b[bad[0]]}"


def test_predict_rows_equals_predict_config_by_config(space) -> None:
    gpu, cfgs = space
    rows = [(c, SIZES[(i + j) % len(SIZES)]) for i, c in enumerate(cfgs) for j in range(2)]
    regs = [None if i % 5 else 64 for i in range(len(rows))]
    fast = predict_rows(gpu, [c for c, _ in rows], [s for _, s in rows], registers=regs)
    for i, ((c, s), r) in enumerate(zip(rows, regs)):
        p = predict(gpu, c, *s, registers=r)
        assert fast["time_s"][i] == p.time_s, f"{gpu.key} {c.key} at {s}: {fast['time_s'][i]} != {p.time_s}"
        assert int(fast["blocks"][i]) == p.blocks and int(fast["waves"][i]) == p.waves
        assert [float(x) for x in fast["limits"][:, i]] == [x.time_s for x in p.roofs], (c.key, s)
        assert ("issue", "shared", "l1", "latency", "l2", "dram")[int(fast["bound"][i])] == p.bound


def test_rank_equals_predict_rows_at_every_size(space) -> None:
    gpu, cfgs = space
    t = rank(gpu, cfgs, SIZES)
    assert t.shape == (len(cfgs), len(SIZES))
    for j, s in enumerate(SIZES):
        ref = predict_rows(gpu, cfgs, [s] * len(cfgs))["time_s"]
        assert np.array_equal(t[:, j], ref), f"{gpu.key} at {s}"
    # and one config at a time, the single-config path
    for i in range(0, len(cfgs), 7):
        assert t[i, i % len(SIZES)] == predict(gpu, cfgs[i], *SIZES[i % len(SIZES)]).time_s, cfgs[i].key


def test_rank_cross_validated_matches_predict_rows_cross_validated(space) -> None:
    gpu, cfgs = space
    t = rank(gpu, cfgs, SIZES[:3], cross_validated=True)
    for j, s in enumerate(SIZES[:3]):
        ref = predict_rows(gpu, cfgs, [s] * len(cfgs), cross_validated=True)["time_s"]
        assert np.array_equal(t[:, j], ref), f"{gpu.key} at {s}"


def test_counts_array_equals_steady_counts_and_extras() -> None:
    cfgs = list(_shipped()[::37]) + [KernelConfig.parse(k) for k in UNSHIPPED]
    fields = ("warps", "gld_requests", "gld_lines", "lds_wavefronts", "sts_instructions", "gst_sectors",
              "k_tile", "store_lines", "int_warp_est")
    col = counts.counts_array(cfgs, fields)
    for i, c in enumerate(cfgs):
        b, e = counts.steady_counts(c), counts.steady_extras(c)
        assert [col[f][i] for f in fields] == [e[f] if f in counts.EXTRA_FIELDS else getattr(b, f) for f in fields], c.key
    assert all(len(v) == 0 for v in counts.counts_array([], fields).values())
    assert rank(load_gpu("h200"), [], SIZES[:2]).shape == (0, 2)


def test_l1_sharing_counts_equal_the_distinct_pairs() -> None:
    """The L1-sharing fractions in closed form equal the distinct (SM, block row) and (SM, block column)
    pairs of the blocks resident together, counted one by one."""
    from model.timing import _l1_shared_fractions

    def counted(gm, gn, sms, b):
        n = min(gm * gn, sms * b)
        if b <= 1 or n <= sms:
            return 1.0, 1.0
        ids = range(n)
        return (len({(i % sms, i // gn) for i in ids}) / n, len({(i % sms, i % gn) for i in ids}) / n)
    for sms in (1, 3, 46, 132):
        for gm in (1, 2, 5, 33, 128):
            for gn in (1, 2, 3, 12, 31, 131, 132, 133, 256):
                for b in (1, 2, 3, 8, 32):
                    assert _l1_shared_fractions(gm, gn, sms, b) == counted(gm, gn, sms, b), (gm, gn, sms, b)
