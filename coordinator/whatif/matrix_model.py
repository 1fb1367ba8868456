"""The matrix model: what a live simulated run should cost and take, predicted without running it.

The live simulator (`coordinator/sim/`) runs real workers paced at their instance type's speed, boots
drawn from the boot model, and spot interruptions from the random model; this module follows the same
rules on a virtual clock, many times over, so that its mean is the expectation the live matrix's runs
are samples of. The same policies answer (`launch`/`recover`, or `choose(DeadlineView)`), the same boot
model draws each launch, the same billing rule prices each instance, and each step the live path takes
has its delay here:

- a launch is seen by the machine after up to one runtime poll, then ready after a draw of the boot model;
  its first heartbeat then tells the coordinator the changeover (the deadline policy plans with the
  median of those, and with the boot model's worst case before it has seen any);
- a spot instance's notice comes after its drawn time to interruption, counted from the machine's start;
  the worker sees it within a notice poll, finishes the batch in hand, checkpoints and exits (nothing is
  lost); the coordinator has the warning from EventBridge at the notice and launches the replacement at
  once, while the worker drains (the replacement resumes from the drained checkpoint, a boot later);
- an instance bills from the launch call to the worker's exit (EC2 per-second rule, 60 s minimum), plus
  half a cycle on average for the coordinator's terminate;
- a segment is done when the coordinator sees its last heartbeat, within a cycle of the worker's end.

Usage::

    setup = LiveSetup(segment_rows=(1000,) * 10, cloud_seconds_per_row=1.42, ...)
    prediction = predict(setup, "spot-only", {"max_spot_retries": 10}, samples=2000, seed=0)
    prediction.mean_cost_usd, prediction.mean_job_seconds
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

from coordinator.cost.billing import BillingRule, billed_seconds, cost_usd
from coordinator.cost.pricing import Market
from coordinator.policies.base import SegmentHistory
from coordinator.policies.deadline import DeadlineView
from coordinator.policies.drivers import Driver
from coordinator.policies.registry import driver_for, make_policy
from coordinator.whatif.boot_model import BootModel


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveSetup:
    segment_rows: tuple[int, ...]
    cloud_seconds_per_row: float
    batch_size: int
    boot: BootModel
    time_to_interruption: Callable[[random.Random], float]  # cloud seconds, from a spot machine's start
    spot_usd_per_hour: float
    on_demand_usd_per_hour: float
    billing: BillingRule
    cycle_seconds: float  # cloud: the coordinator's look interval
    notice_poll_seconds: float  # cloud
    discover_seconds: float  # cloud: the instance runtime's poll (a launch is seen within it)
    reclaim_overhead_seconds: float  # cloud: the deadline policy's loss per reclaim (the live spec's)
    deadline_seconds: float | None = None
    # the coordinator's own start: its first launch this long after the job's start, then one launch call
    # after another (0 a priori; `spotbatch simulate` measures both and predicts again with them)
    start_seconds: float = 0.0
    launch_gap_seconds: float = 0.0
    end_seconds: float = 0.0  # from the last instance's end to the job's (terminate, confirm, re-list)
    # from a warning to the replacement's launch call (the event's way to the coordinator, its hand-over)
    reaction_seconds: float = 0.0

    def price(self, market: Market) -> float:
        return self.spot_usd_per_hour if market == "spot" else self.on_demand_usd_per_hour


@dataclass(slots=True)
class _Segment:
    setup: LiveSetup
    rows: int
    rng: random.Random
    done: int = 0
    cost: float = 0.0
    interruptions: int = 0
    spot_seconds: float = 0.0
    history: SegmentHistory = field(default_factory=lambda: SegmentHistory(0, 0, 0, None))

    def attempt(self, market: Market, launched: float) -> tuple[float, bool]:
        """One instance from its launch: (when the coordinator can act next, whether the segment is done)."""
        s, rng = self.setup, self.rng
        started = launched + rng.uniform(0.0, s.discover_seconds)
        ready = started + s.boot.draw(market, rng)
        finish = ready + (self.rows - self.done) * s.cloud_seconds_per_row
        notice = started + s.time_to_interruption(rng) if market == "spot" else math.inf
        if notice >= finish:
            self._bill(market, launched, finish)
            return finish + rng.uniform(0.0, s.cycle_seconds), True
        seen = notice + rng.uniform(0.0, s.notice_poll_seconds)
        ended = seen
        if seen > ready:  # the batch in hand is finished and checkpointed
            batch_seconds = s.batch_size * s.cloud_seconds_per_row
            ended = ready + math.ceil((seen - ready) / batch_seconds) * batch_seconds
            self.done = min(self.rows, self.done + round((ended - ready) / s.cloud_seconds_per_row))
        self._bill(market, launched, ended)
        self.interruptions += 1
        h = self.history
        self.history = SegmentHistory(h.spot_interruptions + 1, h.spot_launch_failures, 0, "spot")
        if self.done >= self.rows:  # its drain finished the segment: seen within a cycle of its last beat
            return ended + rng.uniform(0.0, s.cycle_seconds), True
        # the coordinator has EC2's warning at the notice (EventBridge) and launches the replacement at
        # once (its reaction), while the worker drains; the replacement resumes from the drained checkpoint
        return notice + s.reaction_seconds, False

    def _bill(self, market: Market, launched: float, ended: float) -> None:
        s = self.setup
        end = ended + self.rng.uniform(0.0, s.cycle_seconds)  # the coordinator's terminate, or the last beat
        seconds = billed_seconds(s.billing, launched, end)
        self.cost += cost_usd(s.price(market), seconds)
        if market == "spot":
            self.spot_seconds += seconds


@dataclass(frozen=True, slots=True)
class RunSample:
    cost_usd: float
    job_seconds: float | None  # None: a segment gave up
    interruptions: int
    spot_share: float  # of billed seconds
    deadline_met: bool | None


class _ModelSegment:
    """A sampled segment as a driver sees it (`policies/drivers.py`, the live loop's own)."""

    def __init__(self, segment: _Segment, index: int, count: int) -> None:
        self.segment, self.index, self.count = segment, index, count
        self.now, self.attempts = 0.0, 0

    def launched_before(self) -> bool:
        return self.attempts > 0

    def history(self) -> SegmentHistory:
        return self.segment.history

    def refused_lately(self, market: Market | None) -> bool:
        return False  # the random model never refuses capacity

    def view(self, running: Market | None) -> DeadlineView:
        s, segment = self.segment.setup, self.segment
        assert s.deadline_seconds is not None
        # the live policy plans with the median boot it has seen (launch to first heartbeat, noticed within
        # a cycle), and with the boot model's worst case before the job has seen one
        seen = s.boot.mean("spot") + (s.discover_seconds + s.cycle_seconds) / 2
        return DeadlineView(
            now_s=self.now,
            deadline_s=s.deadline_seconds,
            work_left_s=(segment.rows - segment.done) * s.cloud_seconds_per_row,
            changeover_s=seen if self.attempts else s.boot.worst("on-demand"),
            tick_s=s.cycle_seconds,
            spot_available=True,  # the random model never refuses capacity
            running=running,
            loss_s=s.reclaim_overhead_seconds,
            total_work_s=segment.rows * s.cloud_seconds_per_row,
        )


def _segment_finish(segment: _Segment, driver: Driver, index: int, count: int, now: float) -> float | None:
    """When the segment is done (None: its policy gave up), asking the driver as the live loop does: after
    each attempt that did not finish it, and every cycle while the driver waits."""
    world = _ModelSegment(segment, index, count)
    while True:
        world.now = now
        decision = driver.place(world, "interrupted")
        if decision is None:
            now += segment.setup.cycle_seconds
            continue
        if decision.market is None:
            return None
        now, done = segment.attempt(decision.market, now)
        world.attempts += 1
        if done:
            return now


def sample_run(setup: LiveSetup, config: str, options: dict[str, float], rng: random.Random) -> RunSample:
    """One run of the job: every segment from the job's start, the job done when its last segment is."""
    driver = driver_for(make_policy(config, **options))
    segments = [_Segment(setup, rows, rng) for rows in setup.segment_rows]
    finishes: list[float | None] = []
    for index, segment in enumerate(segments):
        start = setup.start_seconds + index * setup.launch_gap_seconds
        finishes.append(_segment_finish(segment, driver, index, len(segments), start))
    finished = [f for f in finishes if f is not None]
    job = None if len(finished) < len(finishes) else max(finished) + setup.end_seconds
    billed = sum(s.cost for s in segments)
    spot_cost = sum(cost_usd(setup.spot_usd_per_hour, s.spot_seconds) for s in segments)
    met = None if setup.deadline_seconds is None else job is not None and job <= setup.deadline_seconds
    return RunSample(
        cost_usd=billed,
        job_seconds=job,
        interruptions=sum(s.interruptions for s in segments),
        spot_share=spot_cost / billed if billed else 0.0,
        deadline_met=met,
    )


@dataclass(frozen=True, slots=True)
class Prediction:
    configuration: str
    samples: int
    mean_cost_usd: float
    mean_job_seconds: float
    mean_interruptions: float
    completed_share: float
    deadline_met_share: float | None
    cost_range_usd: tuple[float, float]  # 2.5% and 97.5% of one run's cost: where a single run should land
    # 0.1% and 99.9%: one run of a right model lands outside it once in 500, so one that does says the model
    # is wrong (outside the 95% range is one run in 20: three runs checked against it miss one run in seven)
    cost_bounds_usd: tuple[float, float]
    job_range_seconds: tuple[float, float]


def predict(
    setup: LiveSetup, config: str, options: dict[str, float], *, samples: int = 2_000, seed: int = 0
) -> Prediction:
    rng = random.Random(f"matrix-model/{seed}/{config}")
    runs = [sample_run(setup, config, options, rng) for _ in range(samples)]
    finished = [r.job_seconds for r in runs if r.job_seconds is not None]
    met = [r.deadline_met for r in runs if r.deadline_met is not None]
    return Prediction(
        configuration=config,
        samples=samples,
        mean_cost_usd=statistics.fmean(r.cost_usd for r in runs),
        mean_job_seconds=statistics.fmean(finished) if finished else math.inf,
        mean_interruptions=statistics.fmean(r.interruptions for r in runs),
        completed_share=len(finished) / samples,
        deadline_met_share=sum(met) / len(met) if met else None,
        cost_range_usd=_range([r.cost_usd for r in runs]),
        cost_bounds_usd=_range([r.cost_usd for r in runs], outside=0.001),
        job_range_seconds=_range(finished) if finished else (math.inf, math.inf),
    )


def _range(values: list[float], outside: float = 0.025) -> tuple[float, float]:
    """The values' `outside` and `1 - outside` quantiles."""
    cuts = statistics.quantiles(values, n=round(1 / outside), method="inclusive")
    return cuts[0], cuts[-1]
