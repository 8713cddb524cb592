"""Model versus measured: join each measured row with the model's prediction and score the model.

Conventions (all statistics are fractions, 0.1 = 10 %):

* **signed error** ``e = (predicted - measured) / measured`` of FLOP/s: positive means the model is
  optimistic (it predicts a faster kernel than was measured), negative that it is pessimistic;
* **APE** (absolute percentage error) ``|e|``; ``mape`` its mean, ``median_ape`` its median, ``max_ape``
  its maximum;
* ``within_10`` / ``within_25``: share of rows with ``|e| <= 0.10`` / ``<= 0.25`` - the boundary is
  **inclusive** (a prediction exactly 10 % off counts as within 10 %);
* ``spearman``: Spearman rank correlation of predicted and measured FLOP/s (``scipy.stats.spearmanr``):
  1 = the model orders the configs exactly as the GPU does. ``None`` when undefined (fewer than two
  rows, or either side constant);
* **pick cost** at a size: ``1 - measured(model's best) / measured(measured best)``, what taking the
  config the model ranks first would have lost against the fastest measured config.

Only rows with status ``ok``, ``verified`` true and rung >= 1 are scored (cuBLAS, rung 00, is a
measured reference, not modelled). The plain roofline (:func:`model.roofline.plain_roofline`) is
scored the same way as a baseline. Everything model-specific goes through :func:`predict_rows`, so a
better model can replace the roofline there without touching the statistics or the plots.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .data import Measurement, NoDataError, DataError, latest, load, resolve_gpu, scored, status_counts

__all__ = [
    "STAT_KEYS", "REGISTER_RUNGS", "ALL_RUNGS", "signed_errors", "summary", "pick", "Predicted", "predict_rows",
    "Comparison", "compare", "format_text", "format_markdown", "main",
]

STAT_KEYS = ("mape", "median_ape", "max_ape", "spearman", "within_10", "within_25")
ALL_RUNGS = (1, 2, 3, 4, 5, 6)
REGISTER_RUNGS = (4, 5, 6)
SCOPES = (("01-06", ALL_RUNGS), ("04-06", REGISTER_RUNGS))
_EPS = 1e-12   # float slack on the inclusive within-X boundaries (0.9 - 1 is not exactly -0.1)


# --------------------------------------------------------------------------------------------------
# Pure statistics over arrays
# --------------------------------------------------------------------------------------------------


def signed_errors(pred, meas) -> np.ndarray:
    """``(pred - meas) / meas`` element-wise (fractions; + = model optimistic)."""
    pred = np.asarray(pred, dtype=float)
    meas = np.asarray(meas, dtype=float)
    return (pred - meas) / meas


def rankdata(x) -> np.ndarray:
    """Ranks 1..n with ties given their average rank (``scipy.stats.rankdata(method="average")``, the same
    algorithm; numpy only, because importing scipy.stats costs about a second)."""
    x = np.asarray(x, dtype=float).ravel()
    n = x.size
    sorter = np.argsort(x, kind="mergesort")
    inv = np.empty(n, dtype=np.intp)
    inv[sorter] = np.arange(n, dtype=np.intp)
    xs = x[sorter]
    obs = np.r_[True, xs[1:] != xs[:-1]]
    dense = obs.cumsum()[inv]
    count = np.r_[np.nonzero(obs)[0], n]
    return 0.5 * (count[dense] + count[dense - 1] + 1)


def _spearman(pred: np.ndarray, meas: np.ndarray) -> float | None:
    """Spearman's rank correlation: Pearson's correlation of the average ranks (as scipy.stats.spearmanr)."""
    if pred.size < 2 or np.ptp(pred) == 0 or np.ptp(meas) == 0:
        return None
    rp, rm = rankdata(pred), rankdata(meas)
    rp -= rp.mean()
    rm -= rm.mean()
    rho = float(np.dot(rp, rm) / np.sqrt(np.dot(rp, rp) * np.dot(rm, rm)))
    return None if np.isnan(rho) else max(-1.0, min(1.0, rho))


def summary(pred, meas) -> dict:
    """Accuracy of ``pred`` against ``meas`` (same length, positive): the :data:`STAT_KEYS` and ``n``.

    All values are fractions (0.1 = 10 %) or None where undefined (no rows; Spearman of constant input)."""
    pred = np.asarray(pred, dtype=float)
    meas = np.asarray(meas, dtype=float)
    if pred.shape != meas.shape:
        raise ValueError(f"pred and meas differ in shape: {pred.shape} vs {meas.shape}")
    n = int(pred.size)
    if n == 0:
        return {**{k: None for k in STAT_KEYS}, "n": 0}
    ape = np.abs(signed_errors(pred, meas))
    return {
        "mape": float(ape.mean()),
        "median_ape": float(np.median(ape)),
        "max_ape": float(ape.max()),
        "spearman": _spearman(pred, meas),
        "within_10": float(np.mean(ape <= 0.10 + _EPS)),
        "within_25": float(np.mean(ape <= 0.25 + _EPS)),
        "n": n,
    }


def pick(pred, meas, rel_tie: float = 1e-9) -> dict:
    """The model's pick against the measured best among configs measured at one size.

    ``pred`` and ``meas`` are FLOP/s of the same configs, in ladder order. The model's pick is the
    highest prediction; configs predicted within ``rel_tie`` of it are tied and the first (lowest rung)
    is taken. Returns indices ``model`` and ``best``, ``cost = 1 - meas[model] / meas[best]`` (0 = the
    model picked the fastest), ``rank`` (1 = the model's pick is the fastest measured), ``ties`` and
    ``cost_range`` (the cost over all tied picks: min, max)."""
    pred = np.asarray(pred, dtype=float)
    meas = np.asarray(meas, dtype=float)
    if pred.size == 0 or pred.shape != meas.shape:
        raise ValueError("pick needs equal-length, non-empty pred and meas")
    top = pred.max()
    tied = np.flatnonzero(pred >= top * (1 - rel_tie))
    m = int(tied[0])
    b = int(np.argmax(meas))
    costs = 1.0 - meas[tied] / meas[b]
    return {"model": m, "best": b, "cost": float(1.0 - meas[m] / meas[b]),
            "rank": int(1 + np.sum(meas > meas[m])), "ties": int(tied.size),
            "cost_range": [float(costs.min()), float(costs.max())]}


# --------------------------------------------------------------------------------------------------
# The prediction step (the one place the model is called)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Predicted:
    """Predictions for a list of rows, one entry per row (SI units)."""

    model: str                       # what predicted them
    flop_per_s: np.ndarray           # the model
    time_s: np.ndarray
    bound: np.ndarray                # name of the binding roof (str)
    intensity_dram: np.ndarray       # FLOP per DRAM byte, as the model counts traffic
    blocks_per_sm: np.ndarray        # 0 = the model thinks the block cannot launch
    baseline_flop_per_s: np.ndarray  # the plain roofline


MODEL_NAME = "roofline + occupancy (model.roofline.predict_many, measured registers)"
BASELINE_NAME = "plain roofline (min(FP32 peak, DRAM bandwidth x tile intensity))"


def _roofline_predictions(gpu, rows: Sequence[Measurement]) -> dict[str, np.ndarray]:
    """model.roofline over ``rows`` of one GPU: one vectorised predict_many call over the distinct
    (config, registers) pairs x distinct sizes, then each row picks its cell."""
    from model.roofline import ROOFS, plain_roofline, predict_many
    pairs: dict[tuple, int] = {}
    sizes: dict[tuple, int] = {}
    for r in rows:
        pairs.setdefault((r.config, r.num_regs), len(pairs))
        sizes.setdefault(r.size, len(sizes))
    cfgs = [c for c, _ in pairs]
    regs = [g for _, g in pairs]
    res = predict_many(gpu, cfgs, list(sizes), registers=regs)
    ci = np.array([pairs[(r.config, r.num_regs)] for r in rows], dtype=np.int64)
    si = np.array([sizes[r.size] for r in rows], dtype=np.int64)
    cell = lambda k: np.broadcast_to(np.asarray(res[k]), (len(cfgs), len(sizes)))[ci, si]  # noqa: E731
    flops = cell("flops")
    return {
        "flop_per_s": cell("flop_per_s"), "time_s": cell("time_s"),
        "bound": np.array([ROOFS[int(b)] for b in cell("bound")], dtype=object),
        "intensity_dram": flops / cell("dram_bytes"), "blocks_per_sm": cell("blocks_per_sm"),
        "baseline_flop_per_s": np.array([plain_roofline(gpu, r.config, r.M, r.N, r.K) for r in rows]),
    }


TIMING_NAME = ("timing model (model.timing: simulator counts, compiler facts, measured rates; each rung predicted "
               "with parameters calibrated on the other rungs)")


def _timing_predictions(gpu, rows: Sequence[Measurement]) -> dict[str, np.ndarray]:
    """model.timing over ``rows`` of one GPU, leave-one-rung-out cross-validated (see tools/calibrate.py)."""
    from model.roofline import plain_roofline
    from model.timing import LIMITS, predict_rows as timing_rows
    res = timing_rows(gpu, [r.config for r in rows], [r.size for r in rows], [r.num_regs for r in rows],
                      cross_validated=True)
    return {
        "flop_per_s": res["flop_per_s"], "time_s": res["time_s"],
        "bound": np.array([LIMITS[int(b)] for b in res["bound"]], dtype=object),
        "intensity_dram": res["flops"] / res["dram_bytes"], "blocks_per_sm": res["blocks_per_sm"],
        "baseline_flop_per_s": np.array([plain_roofline(gpu, r.config, r.M, r.N, r.K) for r in rows]),
    }


_timing_predictions.__name__ = TIMING_NAME

PREDICTOR: Callable[[object, Sequence[Measurement]], dict[str, np.ndarray]] = _timing_predictions
"""The model :func:`predict_rows` calls: ``(gpu spec, rows of that GPU) -> dict of per-row arrays`` with the
fields of :class:`Predicted` (less ``model``). Replace it (or pass ``predictor=``) to score another model."""


def predict_rows(rows: Sequence[Measurement], predictor=None, model_name: str | None = None) -> Predicted:
    """Predict every row (rung >= 1) on its own GPU, with the row's measured registers per thread
    (``attributes.num_regs``) so occupancy uses the real register count."""
    predictor = predictor or PREDICTOR
    n = len(rows)
    fields = ("flop_per_s", "time_s", "intensity_dram", "blocks_per_sm", "baseline_flop_per_s")
    out = {k: np.full(n, np.nan) for k in fields}
    out["bound"] = np.full(n, "", dtype=object)
    by_gpu: dict = {}
    for i, r in enumerate(rows):
        if r.rung < 1:
            raise DataError(f"{r.source}: cuBLAS (rung 00) is measured, not modelled")
        by_gpu.setdefault(resolve_gpu(r.device), []).append(i)
    for gpu, idx in by_gpu.items():
        res = predictor(gpu, [rows[i] for i in idx])
        for k in out:
            out[k][idx] = res[k]
    return Predicted(model=model_name or (MODEL_NAME if predictor is _roofline_predictions else
                                          getattr(predictor, "__name__", "model")),
                     bound=out.pop("bound"), **out)


# --------------------------------------------------------------------------------------------------
# The comparison object
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """Scored rows of one GPU with their predictions, and what was left out."""

    gpu: object                          # model.spec.GPUSpec
    rows: tuple[Measurement, ...]        # scored rows, one per (config, size), ladder order
    measured: np.ndarray                 # FLOP/s
    predicted: Predicted
    cublas: tuple[Measurement, ...]      # ok cuBLAS rows (reference, not scored)
    statuses: dict                       # status -> count over all loaded rows (after de-duplication)
    n_loaded: int
    n_duplicates: int                    # older repeats of a (config, size) that were replaced

    @property
    def errors(self) -> np.ndarray:
        return signed_errors(self.predicted.flop_per_s, self.measured)

    @property
    def baseline_errors(self) -> np.ndarray:
        return signed_errors(self.predicted.baseline_flop_per_s, self.measured)

    @property
    def rungs(self) -> np.ndarray:
        return np.array([r.rung for r in self.rows], dtype=np.int64)

    @property
    def sizes(self) -> list[tuple[int, int, int]]:
        return sorted({r.size for r in self.rows})

    def _stats(self, pred: np.ndarray) -> dict:
        out = summary(pred, self.measured)
        rungs = self.rungs
        out["by_rung"] = {f"{k:02d}": summary(pred[rungs == k], self.measured[rungs == k])
                          for k in sorted(set(rungs.tolist()))}
        return out

    def best_config(self) -> list[dict]:
        """Per size and scope (rungs 01-06, rungs 04-06): the model's pick against the measured best."""
        out = []
        rungs = self.rungs
        pred = self.predicted.flop_per_s
        for size in self.sizes:
            at = np.array([r.size == size for r in self.rows])
            for scope, allowed in SCOPES:
                idx = np.flatnonzero(at & np.isin(rungs, allowed))
                if idx.size < 2:
                    continue
                p = pick(pred[idx], self.measured[idx])
                entry = lambda j: {"config_key": self.rows[j].key, "label": self.rows[j].label,  # noqa: E731
                                   "predicted_flop_per_s": float(pred[j]),
                                   "measured_flop_per_s": float(self.measured[j])}
                out.append({"M": size[0], "N": size[1], "K": size[2], "scope": scope, "n": int(idx.size),
                            "model_pick": entry(idx[p["model"]]), "measured_best": entry(idx[p["best"]]),
                            "cost": p["cost"], "rank": p["rank"], "ties": p["ties"], "cost_range": p["cost_range"]})
        return out

    def to_json(self) -> dict:
        """The summary: statistic keys, ``by_rung``, ``baseline`` (same keys, plain roofline), ``n``,
        ``best_config`` and ``gpu``. Fractions throughout (0.1 = 10 %). Computed once per Comparison."""
        import copy
        cached = self.__dict__.get("_json")
        if cached is None:
            cached = self._to_json()
            object.__setattr__(self, "_json", cached)
        return copy.deepcopy(cached)

    def _to_json(self) -> dict:
        model = self._stats(self.predicted.flop_per_s)
        baseline = self._stats(self.predicted.baseline_flop_per_s)
        out = {k: model[k] for k in STAT_KEYS}
        out["by_rung"] = model["by_rung"]
        out["baseline"] = baseline
        out["n"] = model["n"]
        out["best_config"] = self.best_config()
        dev = self.rows[0].device
        out["gpu"] = {"key": self.gpu.key, "name": self.gpu.name, "device": dev.name,
                      "cc": f"{dev.cc_major}.{dev.cc_minor}" if dev.cc_major is not None else None,
                      "sm_count": dev.sm_count}
        return out


def compare(rows: Sequence[Measurement], predictor=None) -> Comparison:
    """Score the model on ``rows`` (all of one GPU). Raises :class:`NoDataError` when nothing is scorable
    and :class:`DataError` when the rows come from several GPUs."""
    n_loaded = len(rows)
    uniq = latest(rows)
    specs = {}
    for r in uniq:
        specs.setdefault(resolve_gpu(r.device).key, resolve_gpu(r.device))
    if len(specs) > 1:
        raise DataError(f"the data holds rows of several GPUs ({', '.join(sorted(specs))}); compare one at a "
                        "time (pass one GPU's folder, e.g. experiments/results/h200)")
    keep = sorted(scored(uniq), key=lambda r: (r.size, r.rung, r.key))
    statuses = status_counts(uniq)
    if not keep:
        what = ", ".join(f"{v} {k}" for k, v in sorted(statuses.items())) or "no rows"
        raise NoDataError(f"no scorable measurements (status ok, verified, rung 01-06) in the data ({what})")
    pred = predict_rows(keep, predictor)
    cub = tuple(r for r in uniq if r.ok and r.rung == 0)
    return Comparison(gpu=next(iter(specs.values())), rows=tuple(keep),
                      measured=np.array([r.flop_per_s for r in keep], dtype=float), predicted=pred,
                      cublas=cub, statuses=statuses, n_loaded=n_loaded, n_duplicates=n_loaded - len(uniq))


# --------------------------------------------------------------------------------------------------
# Rendering (text and Markdown); pure functions of the Comparison
# --------------------------------------------------------------------------------------------------


def _pct(x, signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "-"
    return f"{100 * x:+.1f} %" if signed else f"{100 * x:.1f} %"


def _rho(x) -> str:
    return "-" if x is None else f"{x:.2f}"


def _gf(x: float) -> str:
    return f"{x / 1e9:,.0f}"


def _size(M: int, N: int, K: int) -> str:
    return f"{M}^3" if M == N == K else f"{M}x{N}x{K}"


STAT_LABELS = (("mape", "MAPE (mean absolute error)", _pct), ("median_ape", "median absolute error", _pct),
               ("max_ape", "max absolute error", _pct), ("spearman", "Spearman rank correlation", _rho),
               ("within_10", "share within +-10 %", _pct), ("within_25", "share within +-25 %", _pct))


def _header(c: Comparison) -> str:
    st = ", ".join(f"{v} {k}" for k, v in sorted(c.statuses.items()))
    dup = f"; {c.n_duplicates} older repeats replaced" if c.n_duplicates else ""
    cannot = int(np.sum(c.predicted.blocks_per_sm == 0))
    cannot = (f"; {cannot} measured rows the model thinks cannot launch (0 blocks/SM: its occupancy limits "
              "disagree with the driver)") if cannot else ""
    return (f"{len(c.rows)} scored rows of {c.n_loaded} loaded on {c.gpu.name} ({c.gpu.key}); statuses: {st}; "
            f"{len(c.cublas)} cuBLAS rows kept as reference{dup}{cannot}.")


def _rung_name(key: str) -> str:
    from model.registry import RUNGS
    return RUNGS[int(key)].label


def format_text(c: Comparison, rows: bool = False) -> str:
    """The readable table `analyze.py compare` prints (``rows``: every row too)."""
    j = c.to_json()
    b = j["baseline"]
    L = [f"Model versus measured: {_header(c)}",
         "signed error = (predicted - measured) / measured of FLOP/s; + = the model is optimistic.",
         "", f"{'':28s} {'model':>10s} {'plain roofline':>15s}"]
    for k, name, f in STAT_LABELS:
        L.append(f"{name:28s} {f(j[k]):>10s} {f(b[k]):>15s}")
    L.append(f"{'rows':28s} {j['n']:>10d} {b['n']:>15d}")
    L += ["", "By rung (model | plain roofline):",
          f"{'rung':28s} {'n':>3s} {'MAPE':>8s} {'median':>8s} {'max':>8s} {'rho':>6s} {'<=10%':>7s} {'<=25%':>7s}"
          f" | {'MAPE':>8s} {'rho':>6s}"]
    for key, s in j["by_rung"].items():
        bs = b["by_rung"][key]
        L.append(f"{_rung_name(key):28s} {s['n']:3d} {_pct(s['mape']):>8s} {_pct(s['median_ape']):>8s} "
                 f"{_pct(s['max_ape']):>8s} {_rho(s['spearman']):>6s} {_pct(s['within_10']):>7s} "
                 f"{_pct(s['within_25']):>7s} | {_pct(bs['mape']):>8s} {_rho(bs['spearman']):>6s}")
    L += ["", "Best config per size: the model's pick against the fastest measured config, GFLOP/s "
              "(cost = 1 - measured(pick) / measured(fastest); rank 1 = the pick is the fastest):"]
    if not j["best_config"]:
        L.append("  (no size has two or more configs measured)")
    else:
        L.append(f"{'size':>10s} {'rungs':12s} {'n':>4s}  {'model pick':26s} {'pred':>7s} {'meas':>7s} {'rank':>4s}  "
                 f"{'fastest measured':26s} {'meas':>7s} {'cost':>7s}  ties (cost range)")
    for e in _merge_scopes(j["best_config"]):
        mp, mb = e["model_pick"], e["measured_best"]
        tie = f"{e['ties']} ({_pct(e['cost_range'][0])} to {_pct(e['cost_range'][1])})" if e["ties"] > 1 else "-"
        L.append(f"{_size(e['M'], e['N'], e['K']):>10s} {e['scope']:12s} {e['n']:4d}  {mp['label']:26s} "
                 f"{_gf(mp['predicted_flop_per_s']):>7s} {_gf(mp['measured_flop_per_s']):>7s} {e['rank']:4d}  "
                 f"{mb['label']:26s} {_gf(mb['measured_flop_per_s']):>7s} {_pct(e['cost']):>7s}  {tie}")
    if rows:
        L += ["", _rows_text(c)]
    return "\n".join(L)


def _rows_text(c: Comparison) -> str:
    p = c.predicted
    cub = {r.size: r.flop_per_s for r in c.cublas}
    L = ["Every scored row (GFLOP/s; error = (predicted - measured)/measured; vs cuBLAS = measured / cuBLAS):",
         f"{'config':34s} {'size':>10s} {'regs':>4s} {'measured':>9s} {'model':>9s} {'bound':>6s} {'error':>8s} "
         f"{'plain':>9s} {'error':>8s} {'vs cuBLAS':>9s}"]
    eb, e = c.baseline_errors, c.errors
    for i, r in enumerate(c.rows):
        ref = r.cublas_flop_per_s or cub.get(r.size)
        L.append(f"{r.label:34s} {_size(*r.size):>10s} {r.num_regs or '-':>4} {_gf(c.measured[i]):>9s} "
                 f"{_gf(p.flop_per_s[i]):>9s} {p.bound[i]:>6s} {_pct(e[i], True):>8s} "
                 f"{_gf(p.baseline_flop_per_s[i]):>9s} {_pct(eb[i], True):>8s} "
                 f"{_pct(c.measured[i] / ref) if ref else '-':>9s}")
    return "\n".join(L)


def _merge_scopes(entries: list[dict]) -> list[dict]:
    """One row where the 01-06 and 04-06 picks at a size are the same configs (the fastest config is a
    register-tiling one, so both scopes pick alike): scope shown as "01-06, 04-06", the larger n kept."""
    out: list[dict] = []
    for e in entries:
        prev = out[-1] if out else None
        if (prev is not None and (prev["M"], prev["N"], prev["K"]) == (e["M"], e["N"], e["K"])
                and prev["model_pick"]["config_key"] == e["model_pick"]["config_key"]
                and prev["measured_best"]["config_key"] == e["measured_best"]["config_key"]
                and prev["rank"] == e["rank"]):
            out[-1] = {**prev, "scope": f"{prev['scope']}, {e['scope']}"}
            continue
        out.append(e)
    return out


def format_markdown(c: Comparison) -> str:
    """The comparison as Markdown tables (summary, by rung, best-config picks) for the report."""
    j = c.to_json()
    b = j["baseline"]
    L = [_header(c), "",
         "Signed error = (predicted - measured) / measured of FLOP/s: positive means the model is optimistic. "
         "Within +-10 % / +-25 % include the boundary.", "",
         "| statistic | model | plain roofline |", "|---|---:|---:|"]
    for k, name, f in STAT_LABELS:
        L.append(f"| {name} | {f(j[k])} | {f(b[k])} |")
    L.append(f"| rows | {j['n']} | {b['n']} |")
    L += ["", "**By rung** (model; the plain roofline's MAPE and Spearman beside):", "",
          "| rung | n | MAPE | median | max | Spearman | within 10 % | within 25 % | plain MAPE | plain Spearman |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for key, s in j["by_rung"].items():
        bs = b["by_rung"][key]
        L.append(f"| {_rung_name(key)} | {s['n']} | {_pct(s['mape'])} | {_pct(s['median_ape'])} | "
                 f"{_pct(s['max_ape'])} | {_rho(s['spearman'])} | {_pct(s['within_10'])} | {_pct(s['within_25'])} | "
                 f"{_pct(bs['mape'])} | {_rho(bs['spearman'])} |")
    L += ["", "**Best config per size**: the config the model ranks first against the fastest measured one; "
              "cost = 1 - measured(model's pick) / measured(fastest). Ties: configs the model predicts equal; "
              "the lowest rung is taken and the cost range over all tied picks is shown.", ""]
    if not j["best_config"]:
        L.append("(no size has two or more configs measured)")
    else:
        L += ["| size | rungs | configs | model's pick | predicted / measured GFLOP/s | measured rank | "
              "fastest measured | GFLOP/s | cost | ties (cost range) |",
              "|---|---|---:|---|---:|---:|---|---:|---:|---|"]
        for e in _merge_scopes(j["best_config"]):
            mp, mb = e["model_pick"], e["measured_best"]
            ties = (f"{e['ties']} ({_pct(e['cost_range'][0])} to {_pct(e['cost_range'][1])})"
                    if e["ties"] > 1 else "-")
            L.append(f"| {_size(e['M'], e['N'], e['K'])} | {e['scope']} | {e['n']} | {mp['label']} | "
                     f"{_gf(mp['predicted_flop_per_s'])} / {_gf(mp['measured_flop_per_s'])} | {e['rank']} | "
                     f"{mb['label']} | {_gf(mb['measured_flop_per_s'])} | {_pct(e['cost'])} | {ties} |")
    return "\n".join(L)


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------


def _no_data_message(paths) -> str:
    from .data import DEFAULT_DATA, ROOT, describe_files
    if paths:
        return (f"no measurement rows (schema gemmscope.measurement) in {', '.join(map(str, paths))}: "
                f"{describe_files(paths)}")
    where = DEFAULT_DATA.relative_to(ROOT).as_posix()
    return (f"no measurements found in {where} (the default data set is missing from this checkout); pass "
            "JSON Lines files or folders, e.g. `python analyze.py compare tests/fixtures/mini_h200.jsonl`")


def score_predictions(preds: Sequence[dict], rows: Sequence[Measurement]) -> dict:
    """Score predictions committed before measuring (``experiments/predict.py`` rows) against measured rows.

    A prediction matches the latest ok, verified measurement with the same config key, M, N, K and GPU
    key. Returns the :data:`STAT_KEYS` (fractions), ``n`` matched, ``n_predictions``, ``unmatched`` (no
    measurement yet), ``no_prediction`` (the model refused the config), the models and commits that made
    them, and ``by_rung``."""
    measured: dict[tuple, Measurement] = {}
    for r in scored(latest(rows)):
        gkey = r.device.key or resolve_gpu(r.device).key
        measured[(r.key, r.M, r.N, r.K, gkey)] = r
    pred, meas, rungs = [], [], []
    unmatched = refused = 0
    for p in preds:
        if p.get("flop_per_s") is None:
            refused += 1
            continue
        m = measured.get((p.get("config"), p.get("M"), p.get("N"), p.get("K"), p.get("gpu_key")))
        if m is None:
            unmatched += 1
            continue
        pred.append(float(p["flop_per_s"]))
        meas.append(float(m.flop_per_s))
        rungs.append(m.rung)
    if not pred:
        raise NoDataError(f"none of the {len(preds)} predictions matches a measured row (same config key, "
                          "M, N, K and GPU key, status ok and verified): measure the sweep first")
    out = summary(pred, meas)
    pa, ma, ra = np.array(pred), np.array(meas), np.array(rungs)
    out["by_rung"] = {f"{q:02d}": summary(pa[ra == q], ma[ra == q]) for q in sorted(set(rungs))}
    out.update(n_predictions=len(preds), unmatched=unmatched, no_prediction=refused,
               models=sorted({str(p.get("model")) for p in preds}),
               model_commits=sorted({str(p.get("model_commit")) for p in preds}),
               sweeps=sorted({str(p.get("sweep")) for p in preds}))
    return out


def format_prediction_score(j: dict, path) -> str:
    L = [f"Predictions in {path} (sweeps {', '.join(j['sweeps'])}; model {', '.join(j['models'])} at commit "
         f"{', '.join(j['model_commits'])}), committed before the measurement, against the measured rows:",
         f"{j['n']} matched of {j['n_predictions']} predictions ({j['unmatched']} not measured yet, "
         f"{j['no_prediction']} the model refused)", ""]
    for k, name, f in STAT_LABELS:
        L.append(f"{name:28s} {f(j[k]):>10s}")
    L += ["", f"{'rung':28s} {'n':>4s} {'MAPE':>8s} {'median':>8s} {'max':>8s} {'rho':>6s} {'<=10%':>7s} {'<=25%':>7s}"]
    for key, s in j["by_rung"].items():
        L.append(f"{_rung_name(key):28s} {s['n']:4d} {_pct(s['mape']):>8s} {_pct(s['median_ape']):>8s} "
                 f"{_pct(s['max_ape']):>8s} {_rho(s['spearman']):>6s} {_pct(s['within_10']):>7s} "
                 f"{_pct(s['within_25']):>7s}")
    return "\n".join(L)


def score_traffic_predictions(preds: Sequence[dict], ncu_rows: Sequence[dict]) -> dict:
    """Score traffic predictions committed before an ncu run (rows with ``l2_bytes`` and ``dram_bytes``,
    e.g. ``experiments/predictions/ncu_traffic.jsonl``) against Nsight Compute rows (``gemmscope.ncu``):
    L2 bytes against ``lts__t_bytes.sum``, DRAM bytes against ``dram__bytes_read.sum +
    dram__bytes_write.sum``, matched on config key, M, N, K (the latest ncu row of each). Returns per-row
    signed errors (fractions: (predicted - measured) / measured) and, per level, the count within 10 % and
    15 %, the mean absolute and the largest absolute error."""
    meas: dict[tuple, dict] = {}
    for r in ncu_rows:
        m = r.get("metrics") or {}
        if r.get("rung") == 0 or "lts__t_bytes.sum" not in m:
            continue
        meas[(r.get("config_key"), r.get("M"), r.get("N"), r.get("K"))] = m
    out_rows, unmatched = [], 0
    for p in preds:
        if p.get("l2_bytes") is None or p.get("dram_bytes") is None:
            continue
        m = meas.get((p.get("config"), p.get("M"), p.get("N"), p.get("K")))
        if m is None:
            unmatched += 1
            continue
        l2 = float(m["lts__t_bytes.sum"])
        dram = float(m.get("dram__bytes_read.sum", 0.0)) + float(m.get("dram__bytes_write.sum", 0.0))
        out_rows.append({"config": p["config"], "label": p.get("label", p["config"]), "M": p["M"], "N": p["N"],
                         "K": p["K"], "l2_measured": l2, "l2_predicted": float(p["l2_bytes"]),
                         "dram_measured": dram, "dram_predicted": float(p["dram_bytes"]),
                         "l2_error": float(p["l2_bytes"]) / l2 - 1 if l2 else None,
                         "dram_error": float(p["dram_bytes"]) / dram - 1 if dram else None})
    if not out_rows:
        raise NoDataError(f"none of the {len(preds)} traffic predictions matches an ncu row (same config key, "
                          "M, N, K): run experiments.ncu_run at those sizes first")
    levels = {}
    for lvl in ("l2", "dram"):
        e = np.array([abs(r[f"{lvl}_error"]) for r in out_rows if r[f"{lvl}_error"] is not None])
        levels[lvl] = {"n": int(len(e)), "within_10": int(np.sum(e <= 0.10)), "within_15": int(np.sum(e <= 0.15)),
                       "mean_abs": float(e.mean()), "max_abs": float(e.max())}
    return {"rows": out_rows, "levels": levels, "n": len(out_rows), "unmatched": unmatched,
            "model_commits": sorted({str(p.get("model_commit")) for p in preds})}


def format_traffic_score(j: dict, path) -> str:
    L = [f"Traffic predictions in {path} (model at commit {', '.join(j['model_commits'])}), committed before the "
         f"ncu run, against Nsight Compute: {j['n']} rows matched ({j['unmatched']} predictions not measured)", "",
         f"{'config':44s} {'size':>16s} {'L2 meas GB':>10s} {'pred':>8s} {'err':>8s} {'DRAM meas GB':>12s} "
         f"{'pred':>8s} {'err':>8s}"]
    for r in j["rows"]:
        L.append(f"{r['label'][:44]:44s} {_size(r['M'], r['N'], r['K']):>16s} {r['l2_measured'] / 1e9:10.3f} "
                 f"{r['l2_predicted'] / 1e9:8.3f} {_pct(r['l2_error'], signed=True):>8s} {r['dram_measured'] / 1e9:12.3f} "
                 f"{r['dram_predicted'] / 1e9:8.3f} {_pct(r['dram_error'], signed=True):>8s}")
    for lvl, s in j["levels"].items():
        L.append(f"{lvl.upper():4s}: {s['within_10']}/{s['n']} within 10 %, {s['within_15']}/{s['n']} within 15 %; "
                 f"mean |error| {_pct(s['mean_abs'])}, max {_pct(s['max_abs'])}")
    return "\n".join(L)


def main(args) -> int:
    """``analyze.py compare [DATA...] [--json] [--rows] [--model timing|roofline] [--predictions FILE]``."""
    from .cli import stages
    paths = list(getattr(args, "data", None) or [])
    bar = stages(2, "compare: loading")
    rows = load(paths)
    bar.update()
    pfile = getattr(args, "predictions", None)
    if pfile:
        from experiments.predict import read_predictions
        from .data import load_ncu
        try:
            preds = read_predictions(pfile)
        except ValueError as e:
            raise DataError(str(e)) from None
        # measurement rows: score the committed times; ncu rows only: the committed traffic (L2, DRAM bytes)
        ncu = [] if rows or not paths else [r for p in paths for r in load_ncu(p)]
        if rows or ncu:
            j = score_predictions(preds, rows) if rows else score_traffic_predictions(preds, ncu)
            fmt = format_prediction_score if rows else format_traffic_score
            bar.close()
            print(json.dumps(j, indent=2) if getattr(args, "json", False) else fmt(j, pfile))
            return 0
    if not rows:
        bar.close()
        raise NoDataError(_no_data_message(paths))
    bar.set_description_str(f"compare: predicting {len(rows)} rows")
    model = getattr(args, "model", "timing")
    c = compare(rows, predictor=_roofline_predictions if model == "roofline" else None)
    bar.close()
    if getattr(args, "json", False):
        print(json.dumps(c.to_json(), indent=2))
    else:
        print(format_text(c, rows=getattr(args, "rows", False)))
    return 0
