"""How the what-if engine asks a policy: through the same driver the live loop asks (`policies/drivers.py`),
shown a segment of a trace (`TraceSegment`): its counters, the clock of the tick, whether spot is up.

What the engine adds is the trace's: a decision for spot while no zone has spot capacity is a failed spot
launch (counted, and asked again at the next tick), and a recovery policy that gives up ends the segment.
"""

from __future__ import annotations

from coordinator.cost.pricing import Market
from coordinator.policies.base import Cause, SegmentHistory
from coordinator.policies.deadline import DeadlineView
from coordinator.policies.drivers import Driver
from coordinator.whatif.job import WhatIfJob
from coordinator.whatif.segment import Segment


class TraceSegment:
    """A segment of the what-if engine as a driver sees it, and what the engine does with the answers."""

    def __init__(self, driver: Driver, segment: Segment, index: int, count: int) -> None:
        self.driver, self.segment = driver, segment
        self.index, self.count = index, count
        self.launched = False
        self.interruptions = self.spot_failures = self.on_demand_failures = 0
        self.last: Market | None = None
        self.gave_up = False
        self._now, self._spot_available = 0, True

    @property
    def job(self) -> WhatIfJob:
        return self.segment.job

    # -- the world a driver sees ------------------------------------------------------------------------

    def launched_before(self) -> bool:
        return self.launched

    def history(self) -> SegmentHistory:
        return SegmentHistory(self.interruptions, self.spot_failures, self.on_demand_failures, self.last)

    def refused_lately(self, market: Market | None) -> bool:
        return False  # a trace has no launch backoff: spot is up at a tick or it is not

    def view(self, running: Market | None) -> DeadlineView:
        job, total = self.job, self.job.segment_work_seconds
        return DeadlineView(
            now_s=self._now,
            deadline_s=job.deadline_seconds,
            work_left_s=total - self.segment.progress,
            changeover_s=job.changeover_seconds,
            tick_s=self.segment.gap_seconds,
            spot_available=self._spot_available,
            running=running,
            boot_left_s=self.segment.boot_left if running else 0,
            loss_s=job.checkpoint_seconds,
            total_work_s=total,
        )

    # -- the engine's questions -------------------------------------------------------------------------

    def decide(self, now: int, spot_available: bool, reclaimed: bool) -> Market | None:
        """The market the segment runs on from this tick (None: none)."""
        self._now, self._spot_available = now, spot_available
        running = self.segment.running
        if running is not None:
            return self._available(self.driver.keep(self, running))
        cause: Cause = "interrupted" if reclaimed else "failed-launch"
        decision = self.driver.place(self, cause)
        self.launched = True
        if decision is None:
            return None
        if decision.market is None:
            self.gave_up = True
            return None
        self.last = decision.market
        if decision.market == "spot" and not spot_available:
            self.spot_failures += 1
            return None
        return decision.market

    def _available(self, market: Market | None) -> Market | None:
        return None if market == "spot" and not self._spot_available else market

    def reclaimed(self) -> None:
        self.interruptions += 1
        self.last = "spot"

    def replace(self, now: int, spot_available: bool) -> Market | None:
        """A rebalance recommendation for the segment's spot instance: the market of a replacement started
        now (None: the policy would wait, so nothing starts early). Acting on it counts the interruption
        that is coming."""
        self._now, self._spot_available = now, spot_available
        market = self._available(self.driver.replacement(self))
        if market is None:
            return None
        self.reclaimed()
        self.last = market
        return market
