"""The live loop and the what-if engine ask a policy through the same driver (`policies/drivers.py`), so one
scripted situation fed to both gets the same decisions: a segment's first launch, then an interruption of
every spot attempt until the policy goes on-demand or gives up. For the deadline policies the script is
the clock too: each reclaim comes later in the job, until the slack left says on-demand."""

from __future__ import annotations

from pathlib import Path

import pytest

from coordinator.cost.pricing import Market
from coordinator.job.core.segment_states import SegmentState
from coordinator.job.loop.monitor import SPOT_TERMINATION, AttemptView
from coordinator.policies.registry import driver_for, make_policy
from coordinator.whatif.job import WhatIfJob
from coordinator.whatif.segment import Segment
from coordinator.whatif.trace_segment import TraceSegment
from tests.coordinator.job.loop.live_loop import LiveLoop, live_loop

SEGMENTS = 4
POLICIES: dict[str, dict[str, float]] = {
    "on-demand": {},
    "spot-only": {"max_spot_retries": 2},
    "hybrid": {"spot_share": 0.5, "max_spot_retries": 1},
}
Step = Market | None  # None: the segment gave up


def reclaim(loop: LiveLoop, segment: str) -> None:
    """Spot took its instance back, as the controller records it (before a first heartbeat: no boot is
    measured, so the deadline policies keep the planned changeover, as the what-if job does)."""
    attempt = loop.attempt(segment)
    loop.table.lose(AttemptView(attempt, "lost", "reclaimed", "terminated", None, SPOT_TERMINATION))


def live_decisions(tmp_path: Path, name: str, index: int) -> list[Step]:
    """The live pass over the loop's real parts: launch, then interrupt its spot attempt as the controller
    records a reclaim, and run the pass again, until the segment is on on-demand or has failed."""
    loop = live_loop(tmp_path, segments=SEGMENTS, policy=name, policy_options=POLICIES[name])
    segment, steps = f"seg-{index:04d}", list[Step]()
    while True:
        loop.launch()
        row = loop.table.segment(segment)
        if row.state == SegmentState.FAILED:
            return [*steps, None]
        market = loop.table.attempts(segment)[-1].market
        steps.append(market)
        if market != "spot" or len(steps) > 10:
            return steps
        reclaim(loop, segment)


def whatif_decisions(name: str, index: int) -> list[Step]:
    """The what-if engine's segment, told of the same reclaims."""
    job = WhatIfJob(
        work_seconds=3600,
        deadline_seconds=36_000,
        changeover_seconds=120,
        spot_usd_per_hour=0.07,
        on_demand_usd_per_hour=0.18,
        instances=SEGMENTS,
    )
    world = TraceSegment(driver_for(make_policy(name, **POLICIES[name])), Segment(job, 60), index, SEGMENTS)
    steps, reclaimed = list[Step](), False
    while True:
        market = world.decide(len(steps) * 60, True, reclaimed)
        if world.gave_up:
            return [*steps, None]
        steps.append(market)
        if market != "spot" or len(steps) > 10:
            return steps
        world.reclaimed()
        reclaimed = True


@pytest.mark.parametrize("name", sorted(POLICIES))
@pytest.mark.parametrize("index", range(SEGMENTS))
def test_the_live_pass_and_the_whatif_engine_decide_alike(tmp_path: Path, name: str, index: int) -> None:
    live = live_decisions(tmp_path, name, index)
    assert live == whatif_decisions(name, index)
    assert live[0] in ("spot", "on-demand") and len(live) <= 4  # launched, then the policy's retries


# one segment of 3,000 s of work (30 rows at 0.01 rows/s), due 7,200 s from the start, with a 300-s
# changeover; the two worlds told the same figures (the live loop's cycle is the trace's tick)
WORK, DEADLINE, CHANGEOVER, TICK, LOSS = 3_000, 7_200, 300, 60, 10
RECLAIMS_AT = range(0, 7_200, 600)  # cloud seconds from the job's start: a reclaim at each


def live_deadline_decisions(tmp_path: Path, name: str) -> list[Step]:
    loop = live_loop(
        tmp_path,
        policy=name,
        deadline_seconds=DEADLINE,
        changeover_seconds=CHANGEOVER,
        cycle_seconds=TICK,
        reclaim_overhead_seconds=LOSS,
        planned_rows_per_s=10 / WORK,  # the live loop's segments hold 10 rows
    )
    steps = list[Step]()
    for now in RECLAIMS_AT:
        loop.wall.now = now  # the script's time is the job's clock (its origin is 0)
        loop.launch()
        attempts = loop.table.attempts("seg-0000")
        if loop.table.segment("seg-0000").state == SegmentState.FAILED:
            return [*steps, None]
        if not attempts or not attempts[-1].is_open:
            steps.append(None)  # it waits
            continue
        steps.append(attempts[-1].market)
        if attempts[-1].market != "spot":
            return steps
        reclaim(loop, "seg-0000")
    return steps


def whatif_deadline_decisions(name: str) -> list[Step]:
    job = WhatIfJob(
        work_seconds=WORK,
        deadline_seconds=DEADLINE,
        changeover_seconds=CHANGEOVER,
        spot_usd_per_hour=0.07,
        on_demand_usd_per_hour=0.18,
        checkpoint_seconds=LOSS,
    )
    world = TraceSegment(driver_for(make_policy(name)), Segment(job, TICK), 0, 1)
    steps, reclaimed = list[Step](), False
    for now in RECLAIMS_AT:
        market = world.decide(now, True, reclaimed)
        if world.gave_up:
            return [*steps, None]
        steps.append(market)
        if market is None:
            continue
        if market != "spot":
            return steps
        world.reclaimed()
        reclaimed = True
    return steps


@pytest.mark.parametrize("name", ["deadline", "greedy", "safety-greedy", "uniform-progress"])
def test_the_deadline_policies_decide_alike_live_and_in_the_whatif_engine(tmp_path: Path, name: str) -> None:
    live = live_deadline_decisions(tmp_path, name)
    assert live == whatif_deadline_decisions(name)
    assert live[0] == "spot" and len(live) > 1  # spot while the slack allows, then ...
    # ... on-demand once it does not (greedy never leaves spot: its last safe moment falls between reclaims)
    assert (live[-1] == "on-demand") is (name != "greedy")
