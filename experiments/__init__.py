"""Sweeps on the real GPU (``python -m experiments.sweep``), ncu counter collection and their data files.

Result rows (JSON Lines under ``experiments/results/<gpu key>/``) follow ``experiments/SCHEMA.md``.
"""
