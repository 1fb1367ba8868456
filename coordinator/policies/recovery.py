"""Recovery policies, SkyPilot's shape: `launch()` picks a segment's first market, `recover()` what next.

`recover()` is asked after an interruption or a failed launch: relaunch on spot, fall back to on-demand,
or give up. Policies are pure decisions over a small history, so the live coordinator and the what-if
simulator run the same code.

Usage::

    policy = make_policy("hybrid", spot_share=0.9, max_spot_retries=0)     # registry.py
    market = policy.launch(segment_index=3, segment_count=10)             # "spot" or "on-demand"
    decision = policy.recover(SegmentHistory(...), cause="interrupted")
"""

from __future__ import annotations

import math

from coordinator.cost.pricing import Market
from coordinator.errors import ConfigError
from coordinator.policies.base import Cause, Decision, SegmentHistory, beyond_retry


class RecoveryPolicy:
    """Base class: subclasses set `name` and override `launch` and, where they differ, `recover`."""

    name = ""

    def __init__(self, *, spot_share: float = 1.0, max_spot_retries: int = 3) -> None:
        if not 0.0 <= spot_share <= 1.0:
            raise ConfigError(f"spot_share must be between 0 and 1, got {spot_share}")
        if max_spot_retries < 0:
            raise ConfigError(f"max_spot_retries must be >= 0, got {max_spot_retries}")
        self.spot_share = spot_share
        self.max_spot_retries = max_spot_retries

    def launch(self, segment_index: int, segment_count: int) -> Market:
        raise NotImplementedError

    def recover(self, history: SegmentHistory, cause: Cause) -> Decision:
        """1. on-demand failures past the limit give up; 2. an on-demand launch that failed tries on-demand
        again (a segment placed on on-demand is not moved to spot); 3. spot within its retries stays on
        spot; 4. otherwise fall back to on-demand."""
        exhausted = beyond_retry(history)
        if exhausted is not None:
            return exhausted
        if cause == "failed-launch" and history.last_market == "on-demand":
            return Decision("on-demand", f"{cause}: on-demand again")
        spot_attempts_lost = history.spot_interruptions + history.spot_launch_failures
        if spot_attempts_lost <= self.max_spot_retries:
            return Decision(
                "spot", f"{cause}: spot again ({spot_attempts_lost} of {self.max_spot_retries} retries)"
            )
        return Decision("on-demand", f"{cause}: spot retries used up, on-demand from the checkpoint")


class OnDemand(RecoveryPolicy):
    """Every segment on on-demand: the baseline."""

    name = "on-demand"

    def launch(self, segment_index: int, segment_count: int) -> Market:
        return "on-demand"

    def recover(self, history: SegmentHistory, cause: Cause) -> Decision:
        return beyond_retry(history) or Decision("on-demand", f"{cause}: on-demand again")


class SpotOnly(RecoveryPolicy):
    """Every segment on spot, relaunched on spot after each interruption, up to `max_spot_retries`."""

    name = "spot-only"

    def launch(self, segment_index: int, segment_count: int) -> Market:
        return "spot"

    def recover(self, history: SegmentHistory, cause: Cause) -> Decision:
        given_up = beyond_retry(history)
        if given_up is not None:
            return given_up
        lost = history.spot_interruptions + history.spot_launch_failures
        if lost > self.max_spot_retries:
            return Decision(
                None, f"{cause}: {lost} spot attempts lost, past max_spot_retries={self.max_spot_retries}"
            )
        return Decision("spot", f"{cause}: spot again ({lost} of {self.max_spot_retries} retries)")


class Hybrid(RecoveryPolicy):
    """The original plan: `spot_share` of segments start on spot, spread evenly; an interrupted spot segment
    continues on on-demand from its checkpoint (after `max_spot_retries` spot retries, 0 by default)."""

    name = "hybrid"

    def __init__(self, *, spot_share: float = 0.9, max_spot_retries: int = 0) -> None:
        super().__init__(spot_share=spot_share, max_spot_retries=max_spot_retries)

    def launch(self, segment_index: int, segment_count: int) -> Market:
        # segment i is on-demand when the running count of on-demand segments steps up at i: evenly spread
        on_demand_share = 1.0 - self.spot_share
        before = math.floor(segment_index * on_demand_share + 1e-9)
        steps_up = math.floor((segment_index + 1) * on_demand_share + 1e-9) > before
        return "on-demand" if steps_up else "spot"
