"""The ceiling holds against what running attempts really cost: an attempt that outruns its launch's
estimate (a slow host, a stalled worker that still beats) has its reservation grown before it costs more
than the guard holds, and is stopped when the guard will hold no more (actual spend had reached $0.0821
under a $0.07 ceiling)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from coordinator.cost.budget import BudgetGuard
from coordinator.job.core.cloud_clock import CloudClock
from coordinator.job.loop.attempt_book import AttemptBook
from coordinator.job.loop.policy_pass import LaunchPass
from coordinator.job.loop.spend_watch import SpendWatch
from coordinator.policies.registry import driver_for, make_policy
from tests.coordinator.job.loop.real_book import fake_fleet, real_book

HOUR = 3600.0


def _running(tmp_path: Path, ceiling: float) -> tuple[AttemptBook, SpendWatch]:
    book = real_book(tmp_path, segments=1, policy="on-demand")
    book.guard = BudgetGuard(ceiling, tmp_path / "tight.jsonl")
    watch = SpendWatch(book, lead_seconds=10.0)
    LaunchPass(book, driver_for(make_policy("on-demand"))).run()
    return book, watch


def _later(book: AttemptBook, seconds: float) -> None:
    """The job's clock, `seconds` on (scale 2 with this origin reads wall time + seconds)."""
    book.clock = CloudClock(scale=2.0, origin=time.time() - seconds)


def test_an_attempt_that_outruns_its_estimate_has_its_reservation_grown_first(tmp_path: Path) -> None:
    book, watch = _running(tmp_path, ceiling=1.0)
    estimate = book.guard.state().reserved
    watch.check()
    assert book.guard.state().reserved == pytest.approx(estimate)  # within its estimate: nothing to do
    _later(book, HOUR)  # an hour on: the 61-s estimate is long spent
    watch.check()
    rate = book.quotes.of("on-demand", "c7i.xlarge").rate_usd_per_hour
    assert book.guard.state().reserved == pytest.approx(rate * (HOUR + 10) / HOUR, rel=0.01)
    assert fake_fleet(book).terminated == []
    book.end("seg-0000", "interrupted", None)
    assert book.guard.state().reservations == {}  # the actual settled the launch's, the growth at nothing
    assert book.guard.state().spent == pytest.approx(rate, rel=0.01)


def test_an_attempt_the_guard_will_hold_no_more_for_is_stopped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    book, watch = _running(tmp_path, ceiling=0.01)  # the launch's estimate fits, an hour does not
    _later(book, HOUR)
    watch.check()
    instance = book.active["seg-0000"].active.instance_id
    assert fake_fleet(book).terminated == [[instance]]  # told to stop: its worker drains, its bill ends
    assert "will not hold" in caplog.text and "would pass the ceiling $0.01" in caplog.text
    watch.check()
    assert fake_fleet(book).terminated == [[instance]]  # once
    assert book.guard.state().reserved < 0.01
