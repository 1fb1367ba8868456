"""One segment's run in the what-if engine: the instance it holds, its progress and what it has cost."""

from __future__ import annotations

from coordinator.cost.pricing import Market
from coordinator.whatif.job import MIN_BILLED_SECONDS, Outcome, WhatIfJob


class Segment:
    """One segment's run: the instance it holds, its progress and what it has cost."""

    __slots__ = (
        "billed",
        "boot_left",
        "changeovers",
        "checkpoint",
        "cost",
        "gap_seconds",
        "interruptions",
        "job",
        "launched",
        "progress",
        "redone",
        "running",
    )

    def __init__(self, job: WhatIfJob, gap_seconds: int) -> None:
        self.job = job
        self.gap_seconds = gap_seconds
        self.running: Market | None = None
        self.boot_left = 0
        self.launched = 0
        self.progress = 0
        self.checkpoint = 0
        self.cost = 0.0
        self.billed = {"spot": 0, "on-demand": 0}
        self.interruptions = 0
        self.redone = 0
        self.changeovers = 0

    def stop(self, at: int) -> None:
        assert self.running is not None
        seconds = max(MIN_BILLED_SECONDS, at - self.launched)
        self.billed[self.running] += seconds
        self.cost += self.job.price(self.running) * seconds / 3600
        self.running = None
        self.boot_left = 0

    def start(self, market: Market, at: int) -> None:
        self.running = market
        self.launched = at
        self.boot_left = self.job.changeover_seconds
        self.changeovers += 1

    def reclaim(self, at: int) -> None:
        self.stop(at)
        self.interruptions += 1
        self.redone += self.progress - self.checkpoint
        self.progress = self.checkpoint

    def work(self, now: int, seconds: int, total: int) -> int | None:
        """Run one tick; returns the finish time if the segment's work is done within it."""
        boot = min(self.boot_left, seconds)
        self.boot_left -= boot
        worked = seconds - boot
        if self.progress + worked >= total:
            finish = now + boot + (total - self.progress)
            self.progress = total
            self.stop(finish)
            return finish
        self.progress += worked
        every = self.job.checkpoint_seconds
        self.checkpoint = self.progress if every == 0 else self.progress // every * every
        return None

    def outcome(self, finish: int | None) -> Outcome:
        total = self.job.segment_work_seconds
        return Outcome(
            cost_usd=self.cost,
            finish_seconds=finish,
            deadline_met=finish is not None and finish <= self.job.deadline_seconds,
            interruptions=self.interruptions,
            redone_seconds=self.redone,
            spot_seconds=self.billed["spot"],
            on_demand_seconds=self.billed["on-demand"],
            changeovers=self.changeovers,
            work_left_seconds=total - self.progress,
        )
