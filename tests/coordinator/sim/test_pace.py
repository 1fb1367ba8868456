"""A paced worker's time is the instance type's, whatever the host: it waits when the host is fast, catches
up when the host left it behind, and counts as lag what it could not make up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coordinator.sim.pace import Pace


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.waits.append(round(seconds, 6))
        self.now += seconds
        return False


def test_a_fast_host_waits_until_the_pace_allows_the_next_batch() -> None:
    clock = FakeClock()
    pace = Pace(rows_per_second=100.0, clock=clock, sleep=clock.wait)
    for batch in range(1, 4):
        clock.now += 0.1  # the host computes 50 rows in 0.1 s; the instance type needs 0.5 s
        pace.after(50 * batch)
    assert clock.waits == [0.4, 0.4, 0.4]
    assert clock.now == pytest.approx(101.5)  # 150 rows at 100 rows/s, to the millisecond
    assert pace.lag_share == 0.0


def test_a_slow_batch_is_made_up_by_the_next_ones_without_waiting() -> None:
    clock = FakeClock()
    pace = Pace(rows_per_second=100.0, clock=clock, sleep=clock.wait)
    clock.now += 0.8  # 50 rows took 0.8 s where the type takes 0.5: 0.3 s behind
    pace.after(50)
    assert clock.waits == [] and pace.lag_seconds == pytest.approx(0.3)
    clock.now += 0.3  # 100 rows at 1.1 s: still 0.1 s behind the schedule, so no wait
    pace.after(100)
    assert clock.waits == [] and pace.lag_seconds == pytest.approx(0.1)
    clock.now += 0.1  # back on the schedule (150 rows at 1.2 s, 1.5 s allowed): waits for the rest
    pace.after(150)
    assert clock.waits == [pytest.approx(0.3)] and clock.now == pytest.approx(101.5)
    assert pace.lag_share == 0.0  # the instance would have ended here too: nothing distorted
    assert pace.report()["worst_lag_seconds"] == pytest.approx(0.3)


def test_what_the_host_could_not_make_up_by_the_end_is_lag() -> None:
    clock = FakeClock()
    pace = Pace(rows_per_second=100.0, clock=clock, sleep=clock.wait)
    for batch in range(1, 3):
        clock.now += 0.7  # every batch slower than the type: the lag grows
        pace.after(50 * batch)
    assert clock.waits == [] and pace.lag_seconds == pytest.approx(0.4)
    assert pace.lag_share == pytest.approx(0.4 / 1.0)


def test_the_first_row_waits_for_the_modelled_launch_and_a_late_start_is_lag(tmp_path: Path) -> None:
    clock = FakeClock()
    pace = Pace(rows_per_second=100.0, ready_at=103.0, clock=clock, sleep=clock.wait)
    pace.until_ready(clock.wait)  # the model loaded at 100.0, the modelled launch ends at 103.0
    assert clock.waits == [3.0]
    clock.now += 0.1
    pace.after(50)
    assert clock.now == pytest.approx(103.5) and pace.lag_seconds == 0.0  # rows counted from the ready time

    late = FakeClock()
    late.now = 104.0  # the host took a second longer to start the worker than the model allows
    behind = Pace(rows_per_second=100.0, ready_at=103.0, clock=late, sleep=late.wait)
    behind.until_ready(late.wait)
    late.now += 0.1
    behind.after(50)  # 50 rows 1.1 s after the ready time: 0.6 s behind, no wait
    assert late.waits == [] and behind.lag_seconds == pytest.approx(0.6)
    behind.save(str(tmp_path / "pace.json"))
    assert json.loads((tmp_path / "pace.json").read_text()) == {
        "rows_per_second": 100.0,
        "lag_seconds": 0.6,
        "worst_lag_seconds": 1.0,
        "late_start_seconds": 1.0,
        "planned_seconds": 0.5,
    }


@pytest.mark.parametrize("rate", [0.0, -1.0, float("nan")])
def test_a_pace_that_is_not_a_positive_rate_is_refused(rate: float) -> None:
    with pytest.raises(ValueError, match="positive number of rows per second"):
        Pace(rows_per_second=rate)
