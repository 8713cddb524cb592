"""Typed exceptions shared by the model, the launcher and the sweeps.

Library code raises these and never exits; the command-line edges turn them into messages.
"""
from __future__ import annotations


class GemmscopeError(Exception):
    """Base class of every error gemmscope raises on purpose."""


class ConfigError(GemmscopeError, ValueError):
    """A kernel configuration or problem size breaks a rule.

    ``limit`` names the violated rule or hardware limit (for example ``"threads_per_block"``,
    ``"BM % TM == 0"``, ``"shared_memory_per_block"``), so that a sweep can record why a
    configuration was skipped and a test can check which rule fired.
    """

    def __init__(self, message: str, limit: str = "") -> None:
        super().__init__(message)
        self.limit = limit
