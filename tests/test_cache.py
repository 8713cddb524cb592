"""The derivation memo (analysis/cache.py): the same result as SymPy, keyed by the source's contents."""
from __future__ import annotations

from analysis import cache


def test_memo_equals_the_derivation_and_follows_the_source(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GEMMSCOPE_CACHE", str(tmp_path))
    from model.intensity import derive
    d = derive()
    first = cache.derivation()
    assert first == {"text": d.text(), "markdown": d.markdown(), "json": d.to_json()}
    assert len(list(tmp_path.glob("derive-*.json"))) == 1
    assert cache.derivation() == first                       # read back from disk
    calls = []
    src = tmp_path / "src.py"
    src.write_text("a = 1\n")
    f = lambda: (calls.append(1), {"v": len(calls)})[1]     # noqa: E731
    assert cache.memo("x", [src], f) == {"v": 1}
    assert cache.memo("x", [src], f) == {"v": 1} and len(calls) == 1
    src.write_text("a = 2\n")                                 # the source changed: recomputed
    assert cache.memo("x", [src], f) == {"v": 2}
    monkeypatch.setenv("GEMMSCOPE_NO_CACHE", "1")
    assert cache.memo("x", [src], f) == {"v": 3}
