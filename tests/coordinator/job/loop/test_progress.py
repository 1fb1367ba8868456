"""Thousands of segments in a few lines: the live table, the status log and `spotbatch status` summarize
(counts by state, rows, rows/s, cost, the slowest active segments) instead of printing a row each."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rich.console import Console

from coordinator.job.core.state_file import CoordinatorState
from coordinator.job.loop.progress import SUMMARY_ABOVE, SegmentStatus, summarize
from coordinator.sim.progress import status_table
from tests.host_load import scaled


def _statuses(count: int) -> list[SegmentStatus]:
    rows = []
    for i in range(count):
        state = "DONE" if i % 3 == 0 else "RUNNING" if i % 3 == 1 else "PENDING"
        done = 1_000 if state == "DONE" else (i % 97) * 10 if state == "RUNNING" else 0
        speed = 0.0 if state != "RUNNING" else 1.0 + (i % 89)
        rows.append(SegmentStatus(f"seg-{i:04d}", state, "spot", done, 1_000, speed, 1, 0.01))
    return rows


def test_a_thousand_segments_summarize_to_counts_rows_and_the_slowest() -> None:
    statuses = _statuses(1_000)
    summary = summarize(statuses)
    assert summary.by_state == {"DONE": 334, "RUNNING": 333, "PENDING": 333}
    assert summary.rows_done == sum(s.rows_done for s in statuses)
    running = [s for s in statuses if s.state == "RUNNING"]
    assert summary.rows_per_s == sum(s.rows_per_s for s in running)
    slowest = sorted(running, key=lambda s: (s.rows_per_s, s.rows_done, s.segment_id))[:5]
    assert list(summary.slowest) == slowest
    assert summary.line().startswith("1000 segments: DONE 334, RUNNING 333, PENDING 333; rows ")
    console = Console(width=200, record=True)
    console.print(status_table("run", statuses))
    text = console.export_text()
    assert text.count("seg-") == 5 and "the slowest 5 shown" in text
    small = Console(width=200, record=True)
    small.print(status_table("run", statuses[:SUMMARY_ABOVE]))
    assert small.export_text().count("seg-") == SUMMARY_ABOVE  # a small job: a row each, as before


def test_spotbatch_status_summarizes_a_big_job(tmp_path: Path) -> None:
    state = CoordinatorState(tmp_path / "state.db")
    state.create_job("big", config={}, segments=[(f"seg-{i:04d}", i, i + 1) for i in range(1_500)])
    state.close()
    shown = subprocess.run(
        [sys.executable, "-m", "coordinator", "status", str(tmp_path), "--events", "2"],
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert "  PENDING 1500" in lines and len(lines) < 30
    assert f"the {SUMMARY_ABOVE} with most attempts" in shown.stdout
