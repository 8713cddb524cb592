"""Tests for analysis/plots.py: every plot from the fixture is a valid PNG with the expected labels (no GPU)."""
from __future__ import annotations

from argparse import Namespace
from pathlib import Path

import pytest

from analysis import plots
from analysis.compare import compare
from analysis.data import load
from model.registry import RUNGS
from model.spec import load_gpu

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "mini_h200.jsonl"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def cmp():
    return compare(load([FIXTURE]))


@pytest.fixture(scope="module")
def full():
    """The shipped H200 data set, scored once for the tests that need a dense data set."""
    return compare(load(None))


def is_png(path: Path) -> bool:
    return path.is_file() and path.read_bytes()[:8] == PNG_MAGIC and path.stat().st_size > 5000


def legend_texts(ax) -> list[str]:
    leg = ax.get_legend()
    return [t.get_text() for t in leg.get_texts()] if leg else []


def test_roofline(cmp, tmp_path: Path) -> None:
    pts, size = plots._roofline_points(cmp)
    assert size == (2048, 2048, 2048) and len(pts) == 6       # the classic configs at the size with most of them
    assert len(plots._roofline_points(cmp, classic_only=False)[0]) == 7
    fig = plots.build_roofline(cmp.gpu, pts, "test")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "FLOP per DRAM byte" in ax.get_xlabel() and "FLOP/s" in ax.get_ylabel()
    assert "Roofline" in ax.get_title() and "H200" in ax.get_title()
    legend = " | ".join(legend_texts(ax))
    for text in ("FP32 peak 66.9 TFLOP/s", "DRAM 4.8 TB/s (datasheet)", "DRAM 4.24 TB/s (measured copy)",
                 "filled: measured", "hollow: predicted"):
        assert text in legend, text
    # L2 and shared ceilings do not belong on a DRAM-intensity axis
    assert "L2" not in legend and "shared memory 33.5" not in legend
    for r in sorted({p.rung for p in pts}):
        assert RUNGS[r].label in legend
    # the naive kernel's no-reuse intensity of section 1 is marked and explained
    notes = " ".join(t.get_text() for t in ax.texts)
    assert "0.25 FLOP/B" in notes and "L1 and L2" in notes
    assert any(abs(line.get_xdata()[0] - 0.25) < 1e-3 for line in ax.lines if len(set(line.get_xdata())) == 1)
    assert is_png(plots.roofline(cmp, tmp_path / "roofline.png"))


def test_roofline_without_data(tmp_path: Path) -> None:
    out = plots.roofline(None, tmp_path / "r.png", gpu=load_gpu("h200"))
    assert is_png(out)


def test_ceilings_l2_assumption_and_shared_rate() -> None:
    c = plots.ceilings(load_gpu("h200"))
    # shared: 132 SMs x 32 banks x 4 B x 1.98 GHz = 33.45 TB/s; L2 measured by the microbenchmark (7.842 TB/s)
    assert c["shared"][0] == pytest.approx(132 * 32 * 4 * 1.98e9)
    assert c["l2"][0] == pytest.approx(load_gpu("h200").timing["l2_bandwidth_bytes_per_s"]) and "assumed" not in c["l2"][1]
    # an RTX 4060 spec with no [timing] table: L2 is assumed 2.5 x 272 GB/s = 680 GB/s and labelled so
    from dataclasses import replace
    c = plots.ceilings(replace(load_gpu("rtx4060"), timing={}))
    assert c["l2"][0] == pytest.approx(2.5 * 272e9) and "assumed" in c["l2"][1]
    # the shipped RTX 4060 spec has a published-figure [timing] table: its L2 bandwidth is used
    c = plots.ceilings(load_gpu("rtx4060"))
    assert c["l2"][0] == pytest.approx(load_gpu("rtx4060").timing["l2_bandwidth_bytes_per_s"])


def test_scatter(cmp, tmp_path: Path) -> None:
    fig = plots.build_scatter(cmp)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "measured (GFLOP/s)" and ax.get_ylabel() == "predicted (GFLOP/s)"
    assert ax.get_xscale() == "log" and "Model vs measured" in ax.get_title()
    legend = legend_texts(ax)
    assert "within +-10 %" in legend and "y = x (exact)" in legend and "plain roofline" in legend
    assert any(t.startswith(RUNGS[4].label) for t in legend)
    assert not ax.texts                                     # no caption drawn over the data
    assert is_png(plots.scatter(cmp, tmp_path / "scatter.png"))


def test_scatter_shows_density_when_dense(full) -> None:
    fig = plots.build_scatter(full)
    ax = fig.axes[0]
    assert any(type(c).__name__ == "PolyCollection" for c in ax.collections)   # the hexbin density layer
    assert len(fig.axes) == 2 and "per hexagon" in fig.axes[1].get_ylabel()


def test_sizes(cmp, tmp_path: Path) -> None:
    fig = plots.build_sizes(cmp)
    ax = fig.axes[0]
    assert "matrix size" in ax.get_xlabel() and ax.get_ylabel().startswith("GFLOP/s")
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    legend = legend_texts(ax)
    assert "00 cuBLAS (measured)" in legend and "04 reg2d 128x128x8 8x8" in legend
    assert "measured" in legend and "predicted (model)" in legend
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1024", "2048"]
    assert is_png(plots.sizes(cmp, tmp_path / "sizes.png"))


def test_occupancy(tmp_path: Path) -> None:
    fig = plots.build_occupancy()
    axes = fig.axes
    assert len(axes) == 4                                  # 2 rows x (RTX 4060, H200)
    assert "RTX 4060" in axes[0].get_title() and "H200" in axes[1].get_title()
    assert axes[0].get_ylabel() == "resident blocks per SM"
    assert axes[2].get_ylabel() == "active threads per SM" and axes[2].get_xlabel() == "threads per block"
    notes = " | ".join(t.get_text() for t in axes[2].texts)   # RTX 4060 threads panel
    assert "16x16 = 256 threads: 6 blocks/SM" in notes and "1536 threads active (full)" in notes
    assert "32x32 = 1024 threads: 1 block/SM" in notes and "512 idle" in notes
    assert any("binds" in t for t in legend_texts(axes[0]))
    # every line style drawn has a legend entry (the dash-dot marks where the binding limit changes)
    assert "the binding limit changes" in legend_texts(axes[0])
    assert is_png(plots.occupancy(tmp_path / "occ.png"))


def test_occupancy_notes_come_from_the_model() -> None:
    from analysis.report import block_predictions, block_size_notes
    g = load_gpu("rtx4060")
    note = block_size_notes([g])["rtx4060"]
    (_, p16, p32), *_ = block_predictions(g)
    assert p16.bound in note and p32.bound in note
    from model.units import fmt_time
    assert fmt_time(p16.time_s) in note and fmt_time(p32.time_s) in note
    fig = plots.build_occupancy([g], notes={"rtx4060": note})
    assert any(note == t.get_text() for t in fig.axes[1].texts)


def test_sizes_labels_every_measured_size(full) -> None:
    ax = plots.build_sizes(full).axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()] + [t.get_text() for t in ax.get_xticklabels(minor=True)]
    assert "1000" in labels and "1024" in labels


def test_errors(cmp, tmp_path: Path) -> None:
    fig = plots.build_errors(cmp)
    ax = fig.axes[0]
    assert "signed error" in ax.get_ylabel() and "(%)" in ax.get_ylabel()
    assert ax.get_xlabel() == "rung" and "error by rung" in ax.get_title()
    assert len(ax.get_xticklabels()) == 6
    assert any("plain roofline" in t for t in legend_texts(ax))
    assert is_png(plots.errors(cmp, tmp_path / "errors.png"))


def test_errors_marks_the_scale_change_and_draws_no_jitter(full) -> None:
    ax = plots.build_errors(full).axes[0]
    assert ax.get_yscale() == "symlog"
    assert "logarithmic above" in ax.get_ylabel() and any("scale changes" in t.get_text() for t in ax.texts)
    # legend patches: no patch pretends to be a rung colour
    from model.registry import RUNGS as R
    colours = {R[r].color for r in R}
    import matplotlib.colors as mc
    for h in ax.get_legend().legend_handles:
        assert mc.to_hex(h.get_facecolor()) not in colours


@pytest.mark.parametrize("kind", plots.KINDS)
def test_main_each_kind(kind: str, tmp_path: Path, capsys) -> None:
    out = tmp_path / f"{kind}.png"
    assert plots.main(Namespace(kind=kind, data=[str(FIXTURE)], gpu=None, out=str(out))) == 0
    assert is_png(out) and str(out) in capsys.readouterr().out


def test_size_ticks_skip_crowded_sizes() -> None:
    # 1000 sits within 15 % of 1024 and would print over it; 3001 is far enough from 2048 and 4096
    assert plots._size_ticks([128, 1000, 1024, 2048, 3001, 4096]) == [128, 1024, 2048, 3001, 4096]


def test_dodge_keeps_large_groups_local() -> None:
    xs = plots._dodge([10.0] * 200 + [1.0])
    assert max(xs[:200]) / min(xs[:200]) == pytest.approx(1.35)    # the whole group within a factor 1.35
    assert xs[200] == 1.0                                           # a lone point stays put
    two = plots._dodge([5.0, 5.0])
    assert two[1] / two[0] == pytest.approx(1.07)


def test_all_plots_reuses_a_figure_only_for_the_same_inputs_key(tmp_path: Path) -> None:
    drawn = []
    first = plots.all_plots(None, tmp_path, key="k1", workers=1)
    png = first["occupancy"]
    stamp = png.stat().st_mtime_ns
    png.write_bytes(png.read_bytes())            # a new mtime we can tell apart
    kept = png.stat().st_mtime_ns
    plots.all_plots(None, tmp_path, key="k1", workers=1, progress=drawn.append)
    assert png.stat().st_mtime_ns == kept and drawn == ["occupancy"], "same key: reused, not drawn"
    plots.all_plots(None, tmp_path, key="k2", workers=1)
    assert png.stat().st_mtime_ns != kept, "another key: drawn again"
    assert (tmp_path / ".occupancy.key").read_text().startswith("k2") and stamp


def test_inputs_key_changes_with_the_data(tmp_path: Path) -> None:
    from analysis.report import inputs_key
    f = tmp_path / "a.jsonl"
    f.write_text("{}\n")
    k1 = inputs_key([f])
    f.write_text("{} \n")
    assert inputs_key([f]) != k1 and len(k1) == 24
