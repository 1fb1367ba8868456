"""How the what-if engine asks a policy, the way the live controller does: a recovery policy through
`launch()` once and `recover()` after each loss, a deadline policy through `choose(view)` whenever the
segment has no instance or runs on on-demand.
"""

from __future__ import annotations

from coordinator.cost.pricing import Market
from coordinator.policies.base import Cause, SegmentHistory
from coordinator.policies.deadline import DeadlinePolicy, DeadlineView
from coordinator.policies.recovery import RecoveryPolicy
from coordinator.whatif.job import WhatIfJob
from coordinator.whatif.segment import Segment


class RecoveryDriver:
    """Asks a recovery policy the way the live controller does: `launch()` once, `recover()` after losses."""

    def __init__(self, policy: RecoveryPolicy, index: int, count: int) -> None:
        self.policy = policy
        self.index = index
        self.count = count
        self.launched = False
        self.interruptions = 0
        self.spot_failures = 0
        self.on_demand_failures = 0
        self.last: Market | None = None
        self.gave_up = False

    def decide(self, segment: Segment, now: int, spot_available: bool, reclaimed: bool) -> Market | None:
        if segment.running is not None:
            return segment.running
        if not self.launched:
            market = self.policy.launch(self.index, self.count)
            self.launched = True
        else:
            cause: Cause = "interrupted" if reclaimed else "failed-launch"
            history = SegmentHistory(
                self.interruptions, self.spot_failures, self.on_demand_failures, self.last
            )
            decision = self.policy.recover(history, cause)
            if decision.market is None:
                self.gave_up = True
                return None
            market = decision.market
        self.last = market
        if market == "spot" and not spot_available:
            self.spot_failures += 1
            return None
        return market

    def reclaimed(self) -> None:
        self.interruptions += 1
        self.last = "spot"

    def replace(self, segment: Segment, now: int, spot_available: bool) -> Market | None:
        """A rebalance recommendation for the segment's spot instance: the market of a replacement started
        now, as after an interruption (None: the policy would wait, so nothing starts early). Acting on it
        counts the interruption that is coming."""
        history = SegmentHistory(self.interruptions + 1, self.spot_failures, self.on_demand_failures, "spot")
        market = self.policy.recover(history, "interrupted").market
        if market is None or (market == "spot" and not spot_available):
            return None
        self.reclaimed()
        self.last = market
        return market


class DeadlineDriver:
    """Asks a deadline policy `choose(view)` whenever the segment has no instance or runs on on-demand."""

    gave_up = False  # a deadline policy never gives up: on-demand always finishes

    def __init__(self, policy: DeadlinePolicy, job: WhatIfJob) -> None:
        self.policy = policy
        self.job = job

    def decide(
        self, segment: Segment, now: int, spot_available: bool, reclaimed: bool, *, replacing: bool = False
    ) -> Market | None:
        """`replacing`: asked for a replacement of the running instance (a rebalance recommendation)."""
        job, total = self.job, self.job.segment_work_seconds
        running = None if replacing else segment.running
        view = DeadlineView(
            now_s=now,
            deadline_s=job.deadline_seconds,
            work_left_s=total - segment.progress,
            changeover_s=job.changeover_seconds,
            tick_s=segment.gap_seconds,
            spot_available=spot_available,
            running=running,
            boot_left_s=segment.boot_left if running else 0,
            loss_s=job.checkpoint_seconds,
            total_work_s=total,
        )
        choice = self.policy.choose(view)
        return None if choice == "spot" and not spot_available else choice

    def reclaimed(self) -> None:
        pass

    def replace(self, segment: Segment, now: int, spot_available: bool) -> Market | None:
        return self.decide(segment, now, spot_available, True, replacing=True)
