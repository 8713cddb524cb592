"""Score the timing model against a published SGEMM ladder on a GPU we cannot measure.

    python3 analyze.py compare --published [FILE] [--json]

``FILE`` (default ``experiments/published/rtxa6000_siboehm.toml``, the development set of
``shared/reference/published-a6000.md``) lists the published kernels, each with its GFLOP/s, the
source, and a mapping to one of our configs: ``exact``, ``close`` or ``none`` (with why). The model
predicts each mapped config on the file's GPU at the file's size with the shipped calibration (fitted on
H200 data only; the published numbers are never calibrated on). Published kernels with ``beta != 0``
also read C once: its bytes are added at the GPU's DRAM read bandwidth (their epilogue; ours writes C
only). Reported: the signed error per kernel, the MAPE over the exact and close mappings, and whether
the model orders the mapped kernels as published (every pair in the same order; Kendall's tau).
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILE = ROOT / "experiments" / "published" / "rtxa6000_siboehm.toml"
MAPPINGS = ("exact", "close", "none")


class PublishedError(ValueError):
    """A published-data file that cannot be read."""


@dataclass(frozen=True)
class Scored:
    number: int
    name: str
    mapping: str
    config: str | None
    published_gflop_per_s: float
    predicted_gflop_per_s: float | None
    bound: str | None
    why: str

    @property
    def error(self) -> float | None:
        if self.predicted_gflop_per_s is None:
            return None
        return self.predicted_gflop_per_s / self.published_gflop_per_s - 1.0


def load_published(path: str | Path = DEFAULT_FILE) -> dict:
    try:
        import tomllib
    except ImportError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore
    p = Path(path)
    try:
        d = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PublishedError(f"{p}: cannot read ({type(exc).__name__}: {exc})") from exc
    if d.get("schema") != "gemmscope.published":
        raise PublishedError(f"{p}: not a gemmscope.published file")
    for k in d.get("kernel", []):
        if k.get("mapping") not in MAPPINGS:
            raise PublishedError(f"{p}: kernel {k.get('number')}: mapping must be one of {', '.join(MAPPINGS)}")
        if k["mapping"] != "none" and not k.get("config"):
            raise PublishedError(f"{p}: kernel {k.get('number')}: an {k['mapping']} mapping needs a config")
        if not k.get("why"):
            raise PublishedError(f"{p}: kernel {k.get('number')}: say why the mapping holds")
    return d


def score(path: str | Path = DEFAULT_FILE, prm=None) -> dict:
    """The published ladder scored by the timing model (see the module doc)."""
    import numpy as np
    from scipy.stats import kendalltau

    from model.registry import KernelConfig
    from model.spec import load_gpu
    from model.timing import predict, rates

    d = load_published(path)
    gpu = load_gpu(d["gpu"])
    M, N, K = d["size"]
    beta = float(d.get("beta", 0.0))
    c_read_s = (4.0 * M * N / rates(gpu).dram_bytes_per_s) if beta else 0.0
    out = []
    for k in d["kernel"]:
        pred = bound = None
        if k["mapping"] != "none":
            p = predict(gpu, KernelConfig.parse(k["config"]), M, N, K, prm=prm)
            t = p.time_s + c_read_s
            pred, bound = 2.0 * M * N * K / t / 1e9, p.bound
        out.append(Scored(int(k["number"]), k["name"], k["mapping"], k.get("config"), float(k["gflop_per_s"]),
                          pred, bound, k["why"]))
    scored = [s for s in out if s.mapping in ("exact", "close")]
    ape = np.array([abs(s.error) for s in scored])
    pub = np.array([s.published_gflop_per_s for s in scored])
    prd = np.array([s.predicted_gflop_per_s for s in scored])
    pairs = [(i, j) for i in range(len(scored)) for j in range(i + 1, len(scored))]
    wrong = [(scored[i].number, scored[j].number) for i, j in pairs
             if np.sign(pub[i] - pub[j]) != np.sign(prd[i] - prd[j])]
    return {"gpu": gpu.key, "size": [M, N, K], "file": str(path), "kernels": out,
            "mape": float(ape.mean()) if len(ape) else None, "n": len(scored),
            "kendall_tau": float(kendalltau(pub, prd).statistic) if len(scored) > 1 else None,
            "order_reproduced": not wrong, "pairs_out_of_order": wrong,
            "notes": list(rates(gpu).notes) + ([f"beta = {beta:g}: C read once more, {c_read_s * 1e3:.3f} ms added"]
                                               if beta else [])}


def format_text(r: dict) -> str:
    M, N, K = r["size"]
    lines = [f"Published ladder on {r['gpu']} at {M}x{N}x{K} ({r['file']}), the timing model's predictions:",
             f"{'#':>3} {'kernel':<52} {'mapping':<7} {'published':>10} {'predicted':>10} {'error':>8}  bound"]
    for s in r["kernels"]:
        pred = "-" if s.predicted_gflop_per_s is None else f"{s.predicted_gflop_per_s:10.0f}"
        err = "" if s.error is None else f"{100 * s.error:+7.1f}%"
        lines.append(f"{s.number:>3} {s.name[:52]:<52} {s.mapping:<7} {s.published_gflop_per_s:10.0f} {pred:>10} "
                     f"{err:>8}  {s.bound or ''}")
    mape = "-" if r["mape"] is None else f"{100 * r['mape']:.1f} %"
    lines.append(f"MAPE over {r['n']} exact/close mappings: {mape}; Kendall tau {r['kendall_tau']:.2f}; published "
                 f"order {'reproduced' if r['order_reproduced'] else 'NOT reproduced: pairs ' + str(r['pairs_out_of_order'])}")
    for n in r["notes"]:
        lines.append(f"note: {n}")
    return "\n".join(lines)


def to_json(r: dict) -> dict:
    return {**{k: v for k, v in r.items() if k != "kernels"},
            "kernels": [{**s.__dict__, "error": s.error} for s in r["kernels"]]}


def main(path=None, as_json: bool = False) -> int:
    from model.errors import ConfigError
    from model.spec import SpecError
    try:
        r = score(path or DEFAULT_FILE)
    except (PublishedError, SpecError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(to_json(r), indent=2) if as_json else format_text(r))
    return 0
