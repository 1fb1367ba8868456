"""The ceiling holds against what running attempts really cost: an attempt that outruns its launch's
estimate (a slow host, a stalled worker that still beats) has its reservation grown before it costs more
than the guard holds, and is stopped when the guard will hold no more (actual spend had reached $0.0821
under a $0.07 ceiling)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from coordinator.job.loop.spend_watch import SpendWatch
from inference.heartbeat import Heartbeat
from inference.layout import heartbeat_key
from tests.coordinator.job.loop.live_loop import LiveLoop, live_loop

HOUR = 3600.0


def _running(tmp_path: Path, ceiling: float) -> tuple[LiveLoop, SpendWatch]:
    loop = live_loop(tmp_path, segments=1, policy="on-demand", ceiling=ceiling)
    watch = SpendWatch(loop.table, loop.guard, loop.quotes, loop.clock, lead_seconds=10.0)
    loop.launch()
    return loop, watch


def test_an_attempt_that_outruns_its_estimate_has_its_reservation_grown_first(tmp_path: Path) -> None:
    loop, watch = _running(tmp_path, ceiling=1.0)
    estimate = loop.guard.state().reserved
    watch.check()
    assert loop.guard.state().reserved == pytest.approx(estimate)  # within its estimate: nothing to do
    loop.wall.advance(HOUR)  # an hour on: the 61-s estimate is long spent
    watch.check()
    rate = loop.quotes.of("on-demand", "c7i.xlarge").rate_usd_per_hour
    assert loop.guard.state().reserved == pytest.approx(rate * (HOUR + 10) / HOUR, rel=0.01)
    assert loop.fleet.terminated == []
    loop.book.end(loop.attempt(), "interrupted", None)
    assert loop.guard.state().reservations == {}  # the actual settled the launch's, the growth at nothing
    assert loop.guard.state().spent == pytest.approx(rate, rel=0.01)


def test_an_attempt_the_guard_will_hold_no_more_for_is_stopped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    loop, watch = _running(tmp_path, ceiling=0.01)  # the launch's estimate fits, an hour does not
    loop.wall.advance(HOUR)
    watch.check()
    instance = loop.attempt().instance_id
    assert loop.fleet.terminated == [[instance]]  # told to stop: its worker drains, its bill ends
    assert "will not hold" in caplog.text and "would pass the ceiling $0.01" in caplog.text
    watch.check()
    assert loop.fleet.terminated == [[instance]]  # once
    assert loop.guard.state().reserved < 0.01


def test_a_restart_between_an_attempts_actual_and_its_growth_settles_the_growth_at_nothing(
    tmp_path: Path,
) -> None:
    """A kill after the actual of a grown attempt and before its growth was settled: the restart settles
    what is left at $0, not at the attempt's cost again (the spend log said twice the ledger)."""
    loop, watch = _running(tmp_path, ceiling=1.0)
    loop.wall.advance(HOUR)
    watch.check()  # grown: two reservations under one label
    ended = loop.book.end(loop.attempt(), "interrupted", None)
    label = ended.budget_label
    assert ended.cost_usd is not None and loop.guard.state().reservations == {}
    spent = loop.guard.state().spent
    loop.guard.authorize(label, 0.05)  # as if the growth had been left open by a kill
    loop.book.settle(label, ended.cost_usd)
    assert loop.guard.state().spent == pytest.approx(spent) and loop.guard.state().reservations == {}


def test_a_warned_attempt_still_leaving_is_watched_and_stopped_alike(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A rebalanced attempt works on until its replacement beats, and was watched by nobody: a replacement
    that never booted left it billing past the ceiling."""
    loop = live_loop(tmp_path, segments=1, policy="spot-only", ceiling=0.01)
    watch = SpendWatch(loop.table, loop.guard, loop.quotes, loop.clock, lead_seconds=10.0)
    loop.launch()
    attempt = loop.attempt()
    assert attempt.instance_id is not None
    beat = Heartbeat("seg-0000", attempt.instance_id, "spot", attempt.attempt_id, 10, rows_done=1)
    loop.store.put(heartbeat_key("seg-0000"), json.dumps(asdict(beat)).encode())
    (view,) = loop.monitor.observe([attempt])
    loop.table.first_beat(view)
    assert loop.table.warn("seg-0000", "EC2 rebalance recommendation", rebalance=True)
    assert loop.table.is_leaving(attempt)
    loop.wall.advance(HOUR)
    watch.check()
    assert loop.fleet.terminated == [[attempt.instance_id]]
    assert "will not hold" in caplog.text
