"""A paced worker's time is the instance type's, whatever the host: it waits when the host is fast, catches
up when the host left it behind, and counts as lag what it could not make up."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from coordinator.cost.ledger import AttemptRecord
from coordinator.sim.machine import LAUNCH_REPORT, PACE_REPORT
from coordinator.sim.pace import Pace
from coordinator.sim.pace_record import pace_summary


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
        "held_seconds": 0.0,
    }


@pytest.mark.parametrize("rate", [0.0, -1.0, float("nan")])
def test_a_pace_that_is_not_a_positive_rate_is_refused(rate: float) -> None:
    with pytest.raises(ValueError, match="positive number of rows per second"):
        Pace(rows_per_second=rate)


LEDGER_ATTEMPT = AttemptRecord(
    job_id="j",
    segment_id="seg-0000",
    attempt_id="j/seg-0000/1",
    instance_id="i-0000",
    provider="aws",
    region="us-east-1",
    instance_type="c7i.xlarge",
    market="on-demand",
    gpus=0,
    rate_usd_per_hour=0.1785,
    price_source="test",
    billing="per-second-60s-min",
    launched_at=0.0,
    ended_at=0.0,
    billed_seconds=0,
    cost_usd=0.0,
    end_reason="done",
    rows_kept=0,
    rows_wasted=0,
    rows_per_s=0.0,
)


def a_run(tmp_path: Path, bills: list[tuple[str, int]]) -> Path:
    """A run folder: each finished attempt's machine drew a 120-s launch and worked 9 wall s (8.4 at the
    pace, 0.1 behind it, 0.5 held in a stall); at time scale 15 with a 0.5-s cycle the model bills it
    120 + (9 + 0.5) x 15 = 262.5 cloud s. One interrupted attempt besides, which is not weighed."""
    run = tmp_path / "run"
    lines = []
    for number, (reason, billed) in enumerate([*bills, ("interrupted", 400)]):
        instance = f"i-{number:04d}"
        home = run / "workers" / "machines" / instance
        home.mkdir(parents=True)
        (home / LAUNCH_REPORT).write_text(json.dumps({"launch_seconds": 120.0}))
        pace = {"planned_seconds": 8.4, "lag_seconds": 0.1, "held_seconds": 0.5, "worst_lag_seconds": 0.1}
        (home / PACE_REPORT).write_text(json.dumps({**pace, "late_start_seconds": 0.0}))
        attempt = replace(LEDGER_ATTEMPT, instance_id=instance, end_reason=reason, billed_seconds=billed)
        lines.append(json.dumps({"kind": "attempt", **asdict(attempt)}))
    (run / "ledger.jsonl").write_text("\n".join(lines) + "\n")
    return run


def test_a_bill_beyond_the_models_launch_pace_and_cycle_is_the_hosts_and_distorts_the_run(
    tmp_path: Path,
) -> None:
    """Workers that kept their pace (1% behind it), a run whose finished attempts were billed past what the
    model bills them (the coordinator's or the emulator's wall latency, at 15x) is distorted: 30 s past
    on two attempts of 292.5 s is 10% (more than 6%). A machine without its launch report (unpaced) is not
    weighed."""
    kept = pace_summary(a_run(tmp_path / "kept", [("done", 262), ("done", 250)]), 15.0, 0.5)
    assert kept["unmodelled_share"] == 0.0 and not kept["distorted"]
    late_run = a_run(tmp_path / "late", [("done", 292), ("done", 293)])
    late = pace_summary(late_run, 15.0, 0.5)
    assert late["unmodelled_share"] == pytest.approx((29.5 + 30.5) / 585, abs=1e-4)
    assert late["distorted"] and late["lag_share"] == pytest.approx(0.1 / 8.4, abs=1e-4)
    (late_run / "workers" / "machines" / "i-0001" / LAUNCH_REPORT).unlink()
    assert pace_summary(late_run, 15.0, 0.5)["unmodelled_share"] == pytest.approx(29.5 / 292, abs=1e-4)
