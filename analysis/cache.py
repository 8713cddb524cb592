"""A small on-disk memo for pure, slow results that depend only on source files: the SymPy derivations
(importing SymPy and simplifying take about a second, on every ``derive`` and every report).

An entry is keyed by the SHA-256 of the named source files' contents and the SymPy version, so editing the
code that derives it (or upgrading SymPy) recomputes it; nothing is ever stale. The folder is
``$GEMMSCOPE_CACHE`` or ``~/.cache/gemmscope``; ``GEMMSCOPE_NO_CACHE=1`` turns it off. A cache that cannot be
read or written is ignored (the result is computed).
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Callable, Iterable

ROOT = Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    return Path(os.environ.get("GEMMSCOPE_CACHE") or Path.home() / ".cache" / "gemmscope")


def _key(name: str, sources: Iterable[Path]) -> str:
    from importlib.metadata import PackageNotFoundError, version
    h = hashlib.sha256(name.encode())
    try:
        h.update(version("sympy").encode())
    except PackageNotFoundError:  # pragma: no cover
        pass
    for p in sources:
        h.update(str(p).encode())
        h.update(Path(p).read_bytes())
    return h.hexdigest()[:20]


def memo(name: str, sources: Iterable[Path], compute: Callable[[], dict]) -> dict:
    """``compute()`` (a JSON-able dict), or its stored copy for the same source contents."""
    if os.environ.get("GEMMSCOPE_NO_CACHE"):
        return compute()
    try:
        path = cache_dir() / f"{name}-{_key(name, sources)}.json"
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    value = compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp", encoding="utf-8") as f:
            json.dump(value, f)
        os.replace(f.name, path)
    except (OSError, NameError):
        pass
    return value


def derivation() -> dict:
    """``model.intensity.derive()`` as ``{"text", "markdown", "json"}``."""
    def compute() -> dict:
        from model.intensity import derive
        d = derive()
        return {"text": d.text(), "markdown": d.markdown(), "json": d.to_json()}
    return memo("derive", [ROOT / "model" / "intensity.py"], compute)


def thread_limit_text(gpu) -> str:
    """``model.occupancy.derive_thread_limit(gpu).text()``."""
    def compute() -> dict:
        from model.occupancy import derive_thread_limit
        return {"text": derive_thread_limit(gpu).text()}
    srcs = [ROOT / "model" / "occupancy.py", ROOT / "model" / "spec.py"] + ([Path(gpu.path)] if gpu.path else [])
    return memo(f"thread_limit_{gpu.key}", srcs, compute)["text"]
