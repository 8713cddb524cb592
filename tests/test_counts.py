"""model.counts: the closed form equals the simulator, the cache is versioned and never used stale."""
from __future__ import annotations

import json
import random
import pytest

from model import counts
from model.registry import KernelConfig, grid_configs
from model.spec import load_gpu

H200 = load_gpu("h200")


@pytest.fixture(autouse=True)
def _fresh():
    counts.clear_caches()
    yield
    counts.clear_caches()


def test_shipped_cache_is_fresh_and_covers_every_shipped_config() -> None:
    c = counts.CountsCache()
    assert c.fresh, f"{c.stale_reason}: run python -m model.counts --ship"
    assert c.closed_form_checked
    missing = [cfg.key for cfg in counts.shipped_configs() if cfg.key not in c.counts]
    assert not missing, f"configs without shipped counts (run python -m model.counts --ship): {missing[:5]}"


def test_closed_form_equals_the_cache_for_every_shipped_config() -> None:
    # the cache holds the simulator's own counts (written by --ship); equality is exact, field by field
    c = counts.CountsCache()
    cfgs = counts.shipped_configs()
    assert len(cfgs) >= 1290 and {x.rung for x in cfgs} >= {1, 2, 3, 4, 5, 6}
    bad = [x.key for x in cfgs if x.rung in counts.CLOSED_FORM_RUNGS and counts.closed_form_counts(x) != c.counts[x.key]]
    assert not bad, bad[:5]
    # and the other size-independent facts the timing model reads (k_tile, C-store lines)
    bad = [x.key for x in cfgs if x.rung in counts.CLOSED_FORM_RUNGS and counts.closed_form_extras(x) != c.extras[x.key]]
    assert not bad, bad[:5]


def test_cached_extras_equal_the_simulator_on_a_sample() -> None:
    c = counts.CountsCache()
    for k in random.Random(5).sample(sorted(c.extras), 25):
        assert c.extras[k] == counts.simulated_extras(KernelConfig.parse(k)), k


def test_cache_equals_the_simulator_on_a_sample_of_shipped_configs() -> None:
    c = counts.CountsCache()
    keys = sorted(c.counts)
    for k in random.Random(3).sample(keys, 40) + [x.key for x in __import__("model.registry").registry.classic_configs()
                                                 if x.rung]:
        assert c.counts[k] == counts.simulated_counts(KernelConfig.parse(k)), k


def test_closed_form_equals_the_simulator_on_new_configs() -> None:
    # odd shapes no sweep has: BK 12/24/48, TM/TN 1/3/6/12, tiles of 48/96/192
    grid = {"BM": (16, 48, 96, 192), "BN": (16, 48, 96, 192), "BK": (4, 12, 24, 48),
            "TM": (1, 3, 4, 6, 12), "TN": (1, 3, 4, 6, 12)}
    pool = [cfg for r in (3, 4, 5, 6) for cfg in grid_configs(r, H200, **grid)]
    pool += [KernelConfig.make(1, BX=bx, BY=by, COALESCED=co) for bx in (4, 24) for by in (8, 12) for co in (0, 1)]
    pool += [KernelConfig.make(2, BM=bm, BN=bn, BK=bk) for bm, bn, bk in ((12, 24, 4), (24, 12, 20), (8, 40, 12))]
    for cfg in random.Random(11).sample(pool[:-11], 40) + pool[-11:]:
        assert counts.closed_form_counts(cfg) == counts.simulated_counts(cfg), cfg.key


def test_a_planted_bug_in_the_cache_is_caught(tmp_path) -> None:
    doc = json.loads(counts.COUNTS_FILE.read_text())
    k = "06:BM=128,BN=128,BK=8,TM=8,TN=8"
    doc["counts"][k]["lds_wavefronts"] += 1
    p = tmp_path / "c.json"
    p.write_text(json.dumps(doc))
    cfg = KernelConfig.parse(k)
    assert counts.steady_counts(cfg, p) != counts.simulated_counts(cfg)   # served as written ...
    assert counts.CountsCache(p).counts[k] != counts.closed_form_counts(cfg)   # ... and the equality test sees it


def test_stale_cache_is_not_used(tmp_path) -> None:
    doc = json.loads(counts.COUNTS_FILE.read_text())
    k = "04:BM=128,BN=128,BK=8,TM=8,TN=8"
    doc["digest"] = "sim-0000-facts-0000"            # made by another simulator
    doc["counts"][k]["gld_lines"] = 10 ** 9
    p = tmp_path / "stale.json"
    p.write_text(json.dumps(doc))
    c = counts.CountsCache(p)
    assert not c.fresh and "simulator" in c.stale_reason and not c.counts
    cfg = KernelConfig.parse(k)
    with pytest.warns(UserWarning, match="counts cache not used"):
        got = counts.steady_counts(cfg, p)
    assert got == counts.simulated_counts(cfg)        # recomputed by the simulator itself


def test_closed_form_not_trusted_unless_checked(tmp_path, monkeypatch) -> None:
    doc = {"schema": counts.SCHEMA, "schema_version": counts.SCHEMA_VERSION, "digest": counts.simulator_digest(),
           "closed_form_checked": False, "counts": {}}
    p = tmp_path / "c.json"
    p.write_text(json.dumps(doc))
    called = []
    monkeypatch.setattr(counts, "closed_form_counts", lambda c: called.append(c))
    cfg = KernelConfig.parse("05:BM=64,BN=64,BK=16,TM=8,TN=8")
    assert counts.steady_counts(cfg, p) == counts.simulated_counts(cfg) and not called


def test_digest_changes_with_the_simulator_source(tmp_path, monkeypatch) -> None:
    src = tmp_path / "simulate.py"
    src.write_text(counts.SIMULATOR_FILE.read_text())
    monkeypatch.setattr(counts, "SIMULATOR_FILE", src)
    counts.simulator_digest.cache_clear()
    a = counts.simulator_digest()
    src.write_text(src.read_text() + "\n# changed\n")
    counts.simulator_digest.cache_clear()
    assert counts.simulator_digest() != a


def test_timing_model_uses_the_counts() -> None:
    from model import timing
    cfg = KernelConfig.parse("06:BM=128,BN=128,BK=8,TM=8,TN=8")
    timing.profile.cache_clear()
    prof = timing.profile(cfg, "sm_90")
    b = counts.simulated_counts(cfg)
    assert prof.l1_lines == b.gld_lines and prof.shared_wavefronts == b.lds_wavefronts + b.sts_wavefronts


def test_shipped_wavefront_tables_equal_the_computed_ones() -> None:
    """The counts file stores each distinct L1 data-stage wavefront table once (the digest covers the simulator
    and the facts, not model/counts.py): every stored table and every config's key must equal what the code
    computes now, and ranking reads the same arrays from the file as without it."""
    import numpy as np

    from model import counts as cn
    c = cn.CountsCache(cn.COUNTS_FILE)
    assert c.fresh and c.wavefronts
    for key, table in c.wavefronts.items():
        assert np.array_equal(np.asarray(table), cn.wavefront_table(key)), key
    cfgs = cn.shipped_configs()
    assert all(c.extras[x.key].get("gld_wf") == cn.wavefront_key(x) for x in cfgs)
    sample = cfgs[:: max(1, len(cfgs) // 200)]
    cached, has = cn.load_wavefronts_array(sample)
    for i, x in enumerate(sample):
        t = cn.global_load_wavefronts(x)
        assert has[i] == (t is not None) and (t is None or np.array_equal(cached[i], t)), x.key
