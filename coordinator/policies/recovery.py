"""Recovery policies, SkyPilot's shape: a registry of named strategies with `launch()` and `recover()`.

`launch()` picks the market of a segment's first attempt; `recover()` decides what happens after an
interruption or a failed launch: relaunch on spot, fall back to on-demand, or give up. Policies are pure
decisions over a small history, so the live coordinator and the what-if simulator run the same code.

Usage::

    policy = make_policy("hybrid", spot_share=0.9, max_spot_retries=0)
    market = policy.launch(segment_index=3, segment_count=10)        # "spot" or "on-demand"
    decision = policy.recover(SegmentHistory(...), cause="interrupted")
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from coordinator.errors import SpotbatchError, UnknownPolicy

Market = Literal["spot", "on-demand"]
Cause = Literal["interrupted", "failed-launch"]
MAX_ON_DEMAND_LAUNCH_FAILURES = 3  # on-demand capacity errors are rare and short; past three, a human looks


@dataclass(frozen=True, slots=True)
class SegmentHistory:
    """What a policy may know of a segment: its attempts so far, by market and outcome."""

    spot_interruptions: int = 0
    spot_launch_failures: int = 0
    on_demand_launch_failures: int = 0
    last_market: Market | None = None  # the market of the attempt that just ended


@dataclass(frozen=True, slots=True)
class Decision:
    market: Market | None  # None: give up (the segment fails)
    reason: str

    @property
    def give_up(self) -> bool:
        return self.market is None


class RecoveryPolicy:
    """Base class: subclasses set `name` and override `launch` and, where they differ, `recover`."""

    name = ""

    def __init__(self, *, spot_share: float = 1.0, max_spot_retries: int = 3) -> None:
        if not 0.0 <= spot_share <= 1.0:
            raise SpotbatchError(f"spot_share must be between 0 and 1, got {spot_share}")
        if max_spot_retries < 0:
            raise SpotbatchError(f"max_spot_retries must be >= 0, got {max_spot_retries}")
        self.spot_share = spot_share
        self.max_spot_retries = max_spot_retries

    def launch(self, segment_index: int, segment_count: int) -> Market:
        raise NotImplementedError

    @staticmethod
    def on_demand_exhausted(history: SegmentHistory) -> Decision | None:
        if history.on_demand_launch_failures >= MAX_ON_DEMAND_LAUNCH_FAILURES:
            return Decision(None, f"{history.on_demand_launch_failures} on-demand launch failures")
        return None

    def recover(self, history: SegmentHistory, cause: Cause) -> Decision:
        """1. on-demand failures past the limit give up; 2. an on-demand launch that failed tries on-demand
        again (a segment placed on on-demand is not moved to spot); 3. spot within its retries stays on
        spot; 4. otherwise fall back to on-demand."""
        exhausted = self.on_demand_exhausted(history)
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


_REGISTRY: dict[str, type[RecoveryPolicy]] = {}


def register(cls: type[RecoveryPolicy]) -> type[RecoveryPolicy]:
    if not cls.name or cls.name in _REGISTRY:
        raise ValueError(f"policy name {cls.name!r} is empty or taken")
    _REGISTRY[cls.name] = cls
    return cls


@register
class OnDemand(RecoveryPolicy):
    """Every segment on on-demand: the baseline."""

    name = "on-demand"

    def launch(self, segment_index: int, segment_count: int) -> Market:
        return "on-demand"

    def recover(self, history: SegmentHistory, cause: Cause) -> Decision:
        return self.on_demand_exhausted(history) or Decision("on-demand", f"{cause}: on-demand again")


@register
class SpotOnly(RecoveryPolicy):
    """Every segment on spot, relaunched on spot after each interruption, up to `max_spot_retries`."""

    name = "spot-only"

    def launch(self, segment_index: int, segment_count: int) -> Market:
        return "spot"

    def recover(self, history: SegmentHistory, cause: Cause) -> Decision:
        lost = history.spot_interruptions + history.spot_launch_failures
        if lost > self.max_spot_retries:
            return Decision(
                None, f"{cause}: {lost} spot attempts lost, past max_spot_retries={self.max_spot_retries}"
            )
        return Decision("spot", f"{cause}: spot again ({lost} of {self.max_spot_retries} retries)")


@register
class Hybrid(RecoveryPolicy):
    """The original plan: `spot_share` of segments start on spot, spread evenly; an interrupted spot segment
    continues on on-demand from its checkpoint (after `max_spot_retries` spot retries, 0 by default)."""

    name = "hybrid"

    def __init__(self, *, spot_share: float = 0.9, max_spot_retries: int = 0) -> None:
        super().__init__(spot_share=spot_share, max_spot_retries=max_spot_retries)

    def launch(self, segment_index: int, segment_count: int) -> Market:
        # segment i is on-demand when the running count of on-demand segments steps up at i: evenly spread
        on_demand_share = 1.0 - self.spot_share
        steps_up = math.floor((segment_index + 1) * on_demand_share + 1e-9) > math.floor(segment_index * on_demand_share + 1e-9)  # fmt: skip
        return "on-demand" if steps_up else "spot"


def _load_all() -> None:
    import coordinator.policies.deadline  # noqa: F401 (registers greedy, deadline, ...; imports this module)


def policy_names() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)


def make_policy(name: str, **options: float | int) -> RecoveryPolicy:
    _load_all()
    try:
        cls = _REGISTRY[name]
    except KeyError:
        raise UnknownPolicy(f"unknown policy {name!r}; valid: {', '.join(policy_names())}") from None
    try:
        return cls(**options)  # type: ignore[arg-type]
    except TypeError as error:  # an option this policy does not take
        raise UnknownPolicy(f"policy {name!r} does not take the options {sorted(options)}: {error}") from None
