"""No measurement is lost: the results writer flushes and fsyncs each row, holds an exclusive lock, never
cuts a file that is not a results file, and completes (not cuts) a complete last row without newline."""
from __future__ import annotations

import dataclasses
import fcntl
import json
import os

import pytest

from experiments import sweep as sw
from tests.test_sweep_cpu import OPTS, SMALL, FakeBackend, rows_of


def _quiet(s: str) -> None:
    pass


def test_out_that_is_not_a_results_file_is_refused_and_untouched(tmp_path) -> None:
    out = tmp_path / "notes.txt"
    out.write_text("my notes about the H200\nsecond line without newline")
    before = out.read_bytes()
    with pytest.raises(sw.SweepError, match="not a results file"):
        sw.run_sweep(SMALL, FakeBackend(), out, OPTS, log=_quiet)
    assert out.read_bytes() == before


def test_single_line_non_json_file_is_not_cut(tmp_path) -> None:
    out = tmp_path / "x.jsonl"
    out.write_text("hello")                          # no newline: formerly cut as "an incomplete last line"
    with pytest.raises(sw.SweepError):
        sw.run_sweep(SMALL, FakeBackend(), out, OPTS, log=_quiet)
    assert out.read_text() == "hello"


def test_binary_file_is_refused(tmp_path) -> None:
    out = tmp_path / "x.jsonl"
    out.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    with pytest.raises(sw.SweepError, match="binary"):
        sw.read_results(out)


def test_complete_last_row_without_newline_is_completed_not_cut(tmp_path) -> None:
    out = tmp_path / "r.jsonl"
    sw.run_sweep(SMALL, FakeBackend(), out, dataclasses.replace(OPTS, limit=3), log=_quiet)
    first = rows_of(out)
    out.write_bytes(out.read_bytes().rstrip(b"\n"))  # the newline of the last row lost
    res = sw.read_results(out)
    assert res.unterminated and len(res.rows) == 3 and not res.truncated
    logs: list[str] = []
    backend = FakeBackend()
    counts = sw.run_sweep(SMALL, backend, out, OPTS, log=logs.append)
    assert counts["skipped"] == 3                    # the last row was not re-measured
    assert any("completed the last row" in s for s in logs)
    rows = rows_of(out)
    assert rows[:3] == first and len(rows) == 10
    assert (first[2]["config_key"], (first[2]["M"], first[2]["N"], first[2]["K"])) not in backend.runs


def test_a_second_writer_is_refused_while_the_file_is_locked(tmp_path) -> None:
    out = tmp_path / "r.jsonl"
    out.write_text("")
    with open(out, "ab") as other:                   # another process's lock (a separate open file)
        fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(sw.SweepError, match="locked by another process"):
            sw.run_sweep(SMALL, FakeBackend(), out, OPTS, log=_quiet)
        with pytest.raises(sw.SweepError, match="locked"):
            sw.RowWriter(out)
    assert out.read_text() == ""
    sw.run_sweep(SMALL, FakeBackend(), out, OPTS, log=_quiet)   # lock released: runs
    assert len(rows_of(out)) == 10


def test_the_writer_holds_the_lock_while_it_writes(tmp_path) -> None:
    out = tmp_path / "r.jsonl"
    with sw.RowWriter(out):
        with open(out, "ab") as other, pytest.raises(BlockingIOError):
            fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(out, "ab") as other:                   # released on close
        fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_writer_flushes_and_fsyncs_every_row(tmp_path, monkeypatch) -> None:
    out = tmp_path / "r.jsonl"
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(sw.os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    with sw.RowWriter(out) as w:
        for i in range(3):
            w.write({"schema": sw.SCHEMA, "i": i})
            # visible to another reader before the next row is written (flushed, not buffered)
            assert len(out.read_text().splitlines()) == i + 1
            assert len(synced) == i + 1
    assert [json.loads(x)["i"] for x in out.read_text().splitlines()] == [0, 1, 2]


def test_run_sweep_fsyncs_once_per_row(tmp_path, monkeypatch) -> None:
    out = tmp_path / "r.jsonl"
    synced: list[int] = []
    monkeypatch.setattr(sw.os, "fsync", lambda fd: synced.append(fd))
    sw.run_sweep(SMALL, FakeBackend(), out, OPTS, log=_quiet)
    assert len(synced) >= 10


def test_truncated_row_is_still_cut(tmp_path) -> None:
    out = tmp_path / "r.jsonl"
    sw.run_sweep(SMALL, FakeBackend(), out, dataclasses.replace(OPTS, limit=2), log=_quiet)
    good = out.read_bytes()
    with out.open("ab") as fh:
        fh.write(b'{"schema":"gemmscope.measurement","sw')
    assert sw.read_results(out).truncated
    sw.run_sweep(SMALL, FakeBackend(), out, OPTS, log=_quiet)
    assert out.read_bytes().startswith(good) and len(rows_of(out)) == 10


def test_summary_of_wrong_files_exits_2(tmp_path, capsys) -> None:
    empty = tmp_path / "e.jsonl"
    empty.write_text("")
    assert sw.main(["--summary", str(empty)]) == 2
    assert sw.main(["--summary", str(tmp_path / "missing.jsonl")]) == 2
    assert "error:" in capsys.readouterr().err
