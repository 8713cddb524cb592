"""End-to-end tests of the default report and the compare CLI on the fixture (no GPU)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

from analysis import report

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "mini_h200.jsonl"


def image_links(md: str) -> list[str]:
    return re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", md)


def test_report_end_to_end(tmp_path: Path, capsys) -> None:
    assert report.main(Namespace(out=str(tmp_path), data=[str(FIXTURE)])) == 0
    out = capsys.readouterr().out
    md_path = tmp_path / "report.md"
    assert md_path.is_file() and out.strip().endswith(f"wrote {md_path}")
    md = md_path.read_text()
    for section in report.SECTIONS:
        assert f"## {section}" in md, section
    # derivation, seed limits, seed predictions table, comparison tables
    assert "I_{\\mathrm{tiled}}" in md and "1*4*1*12*32 = 1536" in md
    assert "| 04 reg2d 128x128x8 8x8 |" in md and "| config | time | GFLOP/s |" in md
    assert "**The seed**" in md and "## 5. The limits, defined" in md
    for limit in ("`issue`", "`l1`", "`shared`", "`latency`", "`dram`"):
        assert f"| {limit} |" in md, limit
    assert "| statistic | model | plain roofline |" in md and "**Best config per size**" in md
    assert "Spearman" in md and "No measured data" not in md
    links = image_links(md)
    assert len(links) >= 5
    for link in links:
        assert not Path(link).is_absolute()
        assert (tmp_path / link).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", link


def test_report_without_data(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    res = report.build(tmp_path / "out", [str(empty)])
    md = res["path"].read_text()
    assert "No measured data" in md and res["comparison"] is None
    for section in report.SECTIONS[:3]:
        assert f"## {section}" in md
    links = image_links(md)
    assert "figures/occupancy.png" in links
    assert all((tmp_path / "out" / link).is_file() for link in links)


def test_compare_json_cli() -> None:
    r = subprocess.run([sys.executable, "analyze.py", "compare", "--json", str(FIXTURE.relative_to(ROOT))],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert set(j) == {"mape", "median_ape", "max_ape", "spearman", "within_10", "within_25", "by_rung",
                      "baseline", "n", "best_config", "gpu"}
    stats = {"mape", "median_ape", "max_ape", "spearman", "within_10", "within_25", "n"}
    assert all(set(v) == stats for v in j["by_rung"].values())
    assert stats <= set(j["baseline"])
    assert 0 <= j["within_10"] <= 1 and j["n"] == 11


def test_compare_cli_without_data_is_a_message_not_a_crash(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "analyze.py", "compare", str(tmp_path)], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.startswith("error: no measurement rows") and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_report_reads_the_models_predictions(tmp_path: Path, monkeypatch) -> None:
    """The RTX 4060 section and the occupancy notes follow the model: change a prediction, the text follows."""
    import dataclasses

    from model import timing
    real = timing.predict

    def slow_32(gpu, cfg, M, N, K, **kw):
        p = real(gpu, cfg, M, N, K, **kw)
        if cfg.rung == 1 and cfg.p.get("BX") == 32 and cfg.p.get("COALESCED") == 1:
            p = dataclasses.replace(p, time_s=p.time_s * 10)      # a model in which 32x32 is much slower
        return p

    monkeypatch.setattr(timing, "predict", slow_32)
    from model.spec import load_gpu
    (_, p16, p32), *_ = report.block_predictions(load_gpu("rtx4060"))
    assert p32.time_s > p16.time_s
    assert report.why_blocks_differ(p16, p32).startswith("16x16 is predicted")


def test_identical_best_config_rows_are_merged() -> None:
    from analysis.compare import compare, format_markdown
    from analysis.data import load
    md = format_markdown(compare(load([FIXTURE])))
    rows = [ln for ln in md.splitlines() if ln.startswith("| 2048^3 |") or ln.startswith("| 1024^3 |")]
    assert len(rows) == len(set(ln.split("|", 3)[3] for ln in rows))


def test_residency_section_scores_committed_predictions_and_shows_the_current_model():
    # The seed's case on the forced-residency data: the committed predictions are scored as committed
    # (16x16 faster: the wrong direction, 15.8 %), and the current model's numbers stand beside them,
    # labelled not blind, with the direction read from them.
    from analysis.report import _residency_lines, _residency_now
    lines = "\n".join(_residency_lines())
    assert "MAPE 15.8 %" in lines and "not blind" in lines
    now = _residency_now([])
    a, b = now[("01 naive 32x32", 1)], now[("01 naive 16x16", 6)]
    want = "32x32 faster" if a > b else "16x16 faster"
    assert f"({want} by" in lines
