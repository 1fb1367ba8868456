"""No clock but the coordinator's own is read for an age: a coordinator clock 60-90 s ahead of its workers'
took every attempt for lost at its first beat and relaunched it (99 attempts in 200 s, $1.06, 0 rows), and
one 310 s behind stopped a job as "the boot fails". Here the workers' clocks are 300 s (or a day) off the
coordinator's, either way: every verdict, and the bill of an attempt that ended, is the one of a worker in
step; and a segment whose workers keep going silent after they started is capped like a crash loop."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from coordinator.job.core import SegmentState
from coordinator.job.loop.monitor import INSTANCE_SHUTDOWN, AttemptView
from inference.heartbeat import Heartbeat
from inference.layout import heartbeat_key
from tests.coordinator.job.loop.live_loop import LiveLoop, live_loop

SKEWS = [-86_400.0, -300.0, 0.0, 300.0, 86_400.0]  # the worker's clock minus the coordinator's


def _beat(loop: LiveLoop, state: str, skew: float, beats: int) -> None:
    attempt = loop.attempt()
    assert attempt.instance_id is not None
    beat = Heartbeat("seg-0000", attempt.instance_id, attempt.market, attempt.attempt_id, 10, state=state)  # type: ignore[arg-type]
    beat.rows_done, beat.ts, beat.beats = 4, loop.wall() + skew, beats
    loop.store.put(heartbeat_key("seg-0000"), json.dumps(asdict(beat)).encode())


def _look(loop: LiveLoop) -> AttemptView:
    """One cycle's look at the segment's attempt, and the move the controller makes for a beating one."""
    (view,) = loop.monitor.observe([loop.attempt()])
    if view.verdict in ("running", "failed"):
        loop.table.first_beat(view)
    return view


def _verdict(loop: LiveLoop) -> tuple[str, str]:
    view = _look(loop)
    return view.verdict, view.reason


def _life_of_one_attempt(tmp_path: Path, skew: float) -> list[tuple[str, str]]:
    """What the monitor says of one attempt through its boot, its beats and its silence (timeout 60 s)."""
    loop = live_loop(tmp_path, policy="on-demand")
    loop.launch()
    said = [_verdict(loop)]  # just launched
    loop.wall.advance(40)
    _beat(loop, "running", skew, 1)
    said.append(_verdict(loop))
    loop.wall.advance(59)  # silent 59 s: still fresh
    said.append(_verdict(loop))
    loop.wall.advance(2)  # silent 61 s: lost
    said.append(_verdict(loop))
    return said


@pytest.mark.parametrize("skew", SKEWS)
def test_a_workers_clock_off_by_minutes_or_a_day_changes_no_verdict(tmp_path: Path, skew: float) -> None:
    assert _life_of_one_attempt(tmp_path / "skewed", skew) == _life_of_one_attempt(tmp_path / "in-step", 0.0)
    assert [v for v, _ in _life_of_one_attempt(tmp_path / "again", skew)] == [
        "booting",
        "running",
        "running",
        "lost",
    ]


def _bill_of_a_worker_that_stopped(tmp_path: Path, skew: float) -> tuple[int | None, float | None]:
    """A worker that says it failed 200 s into its attempt and powers its instance off; the coordinator
    notices 30 s later: billed from the launch to when it heard the last word."""
    loop = live_loop(tmp_path, policy="on-demand")
    loop.launch()
    _verdict(loop)
    loop.wall.advance(200)
    _beat(loop, "failed", skew, 5)
    assert _look(loop).verdict == "failed"
    loop.fleet.stopped[loop.attempt().instance_id or ""] = INSTANCE_SHUTDOWN
    loop.wall.advance(30)
    loop.table.worker_failed(_look(loop))
    (ended,) = loop.state.attempts("j", "seg-0000")
    return ended.billed_seconds, ended.cost_usd


@pytest.mark.parametrize("skew", SKEWS)
def test_the_bill_of_an_attempt_is_the_same_whatever_its_workers_clock_says(
    tmp_path: Path, skew: float
) -> None:
    in_step = _bill_of_a_worker_that_stopped(tmp_path / "in-step", 0.0)
    assert _bill_of_a_worker_that_stopped(tmp_path / "skewed", skew) == in_step
    assert in_step[0] == 200  # launch to the last word heard, not to when the end was noticed


def test_a_segment_whose_workers_keep_going_silent_after_they_started_fails_naming_why(
    tmp_path: Path,
) -> None:
    """Each attempt beats, then goes silent on a live instance: relaunched twice, then FAILED, not forever."""
    loop = live_loop(tmp_path, policy="on-demand")
    launched = 0
    while loop.table.segment("seg-0000").state != SegmentState.FAILED:
        assert launched < 10, "relaunched forever"
        loop.launch()
        if loop.table.active("seg-0000") is None:
            continue
        launched += 1
        _verdict(loop)
        loop.wall.advance(10)
        _beat(loop, "running", 0.0, 1)
        _verdict(loop)
        loop.wall.advance(61)
        view = _look(loop)
        assert view.verdict == "lost" and view.instance_state == "running"
        loop.table.lose(view)
    assert launched == 3
    cause = loop.table.segment("seg-0000").failure
    assert "3 attempts went silent after their worker had started" in cause
