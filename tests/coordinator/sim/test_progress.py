"""`make simulate` is never silent when its output is not a terminal: a heartbeat line a minute."""

from __future__ import annotations

import io
import time

import pytest

from coordinator.job.loop.progress import SegmentStatus
from coordinator.sim.progress import ProgressView


def test_without_a_terminal_a_heartbeat_line_comes_every_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    out = io.StringIO()
    view = ProgressView(total_runs=3, plain=out)
    assert not view.enabled  # a StringIO console is no terminal
    view.start_run("hybrid-01", 2)
    statuses = [
        SegmentStatus("seg-0000", "RUNNING", "spot", 200, 500, 1.5, 1, 0.25),
        SegmentStatus("seg-0001", "DONE", "on-demand", 500, 500, 2.0, 2, 0.5),
    ]
    view.update(statuses)
    assert out.getvalue() == ""  # less than a minute since the last line
    now[0] += 61
    view.update(statuses)
    assert out.getvalue() == "run 2/3 hybrid-01: 700/1000 rows, $0.75 so far\n"
    now[0] += 30
    view.update(statuses)
    assert out.getvalue().count("\n") == 1
