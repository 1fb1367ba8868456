"""One driver per kind of policy: the questions a policy is asked about a segment, and when, written once for
the live loop (`job/loop/policy_pass.py`), the what-if engine (`whatif/engine.py`) and the matrix model
(`whatif/matrix_model.py`).

Each of them shows the driver a segment through a small world (`SegmentWorld`): where it is in the job,
whether it was launched before, its history, the deadline view, whether a market refused it a moment ago.
What happens next (a launch through the budget guard, a tick of a trace, a sampled boot) is the caller's.

- `RecoveryDriver` (on-demand, spot-only, hybrid): `launch()` for the first attempt, `recover()` after a
  loss; a running instance is kept.
- `DeadlineDriver` (greedy, safety-greedy, uniform-progress, deadline): `choose(view)` for a segment without
  an instance (None: wait), and again while it runs (spot: switch back from on-demand); it gives up only past
  the retries no policy overrides (`beyond_retry`).

`registry.driver_for(policy)` picks the driver; nothing else asks which kind a policy is.

Usage::

    driver = driver_for(make_policy("deadline"))
    decision = driver.place(world, "interrupted")      # None: wait; Decision(None, why): give up
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from coordinator.cost.pricing import Market
from coordinator.policies.base import Cause, Decision, SegmentHistory, beyond_retry
from coordinator.policies.deadline import DeadlinePolicy, DeadlineView
from coordinator.policies.recovery import RecoveryPolicy


class SegmentWorld(Protocol):
    """One segment as a driver asks about it."""

    @property
    def index(self) -> int: ...

    @property
    def count(self) -> int: ...

    def launched_before(self) -> bool: ...

    def history(self) -> SegmentHistory: ...

    def view(self, running: Market | None) -> DeadlineView: ...

    def refused_lately(self, market: Market | None) -> bool:
        """A launch on `market` (None: on any market) failed for this segment a moment ago: not again before
        its backoff ends."""
        ...


class Driver(Protocol):
    name: str
    needs_deadline: bool

    def first_market(self, index: int, count: int) -> Market | None:
        """The market of a segment's first launch, when it is fixed before the job starts (None: decided
        as the job goes)."""
        ...

    def place(self, world: SegmentWorld, cause: Cause) -> Decision | None:
        """A segment without an instance: the market to launch on, Decision(None, why) to give up, None to
        wait."""
        ...

    def keep(self, world: SegmentWorld, running: Market) -> Market | None:
        """A segment running on `running`: the market it should run on (another one: switch to it)."""
        ...

    def replacement(self, world: SegmentWorld) -> Market | None:
        """A rebalance recommendation for its spot instance: the market of a replacement started now, as
        after the interruption that is coming (None: start nothing early)."""
        ...


class RecoveryDriver:
    needs_deadline = False

    def __init__(self, policy: RecoveryPolicy) -> None:
        self.policy, self.name = policy, policy.name

    def first_market(self, index: int, count: int) -> Market | None:
        return self.policy.launch(index, count)

    def place(self, world: SegmentWorld, cause: Cause) -> Decision | None:
        if not world.launched_before():
            market = self.policy.launch(world.index, world.count)
            return Decision(market, f"initial launch on {market} ({self.name})")
        if world.refused_lately(None):
            return None  # a failed launch's backoff has not passed
        return self.policy.recover(world.history(), cause)

    def keep(self, world: SegmentWorld, running: Market) -> Market | None:
        return running

    def replacement(self, world: SegmentWorld) -> Market | None:
        history = world.history()
        coming = replace(history, spot_interruptions=history.spot_interruptions + 1, last_market="spot")
        return self.policy.recover(coming, "interrupted").market


class DeadlineDriver:
    needs_deadline = True

    def __init__(self, policy: DeadlinePolicy) -> None:
        self.policy, self.name = policy, policy.name

    def first_market(self, index: int, count: int) -> Market | None:
        return None

    def place(self, world: SegmentWorld, cause: Cause) -> Decision | None:
        view = world.view(None)
        market = self.policy.choose(view)
        if market is None or world.refused_lately(market):
            return None  # the slack allows waiting for spot, or this market refused it a moment ago
        exhausted = beyond_retry(world.history())
        if exhausted is not None:
            return exhausted
        return Decision(market, f"{self.name}: {market} (slack {view.slack_s:.0f} s)")

    def keep(self, world: SegmentWorld, running: Market) -> Market | None:
        return self.policy.choose(world.view(running))

    def replacement(self, world: SegmentWorld) -> Market | None:
        return self.policy.choose(world.view(None))
