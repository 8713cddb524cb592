"""GPU tests: every test marked ``gpu`` is skipped, with the reason, where cupy or a CUDA GPU is missing."""
from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU and cupy (skipped with the reason otherwise)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from gpu import gpu_available

    ok, reason = gpu_available()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA GPU and cupy: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
