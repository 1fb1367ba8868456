"""Deadline-aware policies: spot while the deadline allows, on-demand when it no longer does.

The recovery policies (`recovery.py`) decide at a launch and after an interruption from a segment's history.
A deadline policy also needs the clock: it is asked `choose(view)` whenever a segment has no instance, and
on every tick while the segment runs on on-demand, and answers "spot", "on-demand" or None (wait: nothing
runs, nothing is billed). A segment running on spot keeps its instance until it is reclaimed or done: while
spot runs, progress is as fast as on-demand, so the slack does not shrink and there is nothing to decide.

The live controller and the what-if simulator ask the same `choose()` with the same `DeadlineView`; only
where the view's numbers come from differs (heartbeats and the wall clock, or a trace and a virtual clock).

Slack is the time to spare if the segment went on-demand now and stayed there:
`deadline - now - work_left - changeover` (the changeover is what is left of the running on-demand
instance's boot, or a whole one for a new instance). A policy that lets it go below zero misses the deadline.

Registered here (see `bench/policies.py` for how they compare on real traces):

- `greedy`: spot whenever available; while it is not, wait until one more tick of waiting would leave no
  slack, then on-demand to the end. Forgets that starting spot costs a changeover and may be reclaimed at
  once: it misses deadlines when that happens with little slack left.
- `safety-greedy`: greedy that keeps enough slack to absorb one more reclaim (the work a reclaim loses plus
  a tick to see it) and starts spot only if it can pay the changeover out of the rest.
- `uniform-progress`: Wu et al., NSDI 2024: keep progress on the straight line from 0 to the work by the
  deadline; spot whenever available; on-demand when behind the line and spot is not there, kept until two
  changeovers ahead of it (hysteresis); on-demand to the end when the remaining time is short.
- `deadline` (the project's): greedy's waiting, safety-greedy's margin, plus a way back: it waits for spot
  only down to a reserve of slack, then runs on-demand but returns to spot when spot comes back and the
  slack can pay both changeovers (on-demand -> spot now, spot -> on-demand after a reclaim) on top of the
  margin. Greedy commits to on-demand for all the remaining work; this one spends on-demand only on the
  outages it cannot wait out. The reserve is kept for the outages still to come, so it shrinks with the
  work left: `reserve_hours` x work left / the segment's work (all of it at the start, none at the end).
  On the nine zones' traces this beat a fixed reserve at every deadline, tuned and scored
  leave-one-zone-out (`bench/policies.py`, README section 7).

Usage::

    policy = make_policy("deadline", reserve_hours=1.0)
    view = DeadlineView(now_s=3600, deadline_s=43200, work_left_s=30000, changeover_s=360, tick_s=195,
                        spot_available=False, running=None)
    policy.choose(view)          # None: wait for spot, the slack allows it
"""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.cost.pricing import Market
from coordinator.errors import ConfigError

# uniform progress: on-demand to the end when less than this many changeovers remain
SAFETY_NET_CHANGEOVERS = 2
HYSTERESIS_CHANGEOVERS = 2  # uniform progress: leave on-demand only this far ahead of the line (the paper's)
# `deadline`: slack kept for returns to spot at the segment's start (then in proportion to the work left);
# bench/policies picked it leave-one-zone-out (README section 7)
DEFAULT_RESERVE_HOURS = 1.5


@dataclass(frozen=True, slots=True, kw_only=True)
class DeadlineView:
    """What a deadline policy knows of one segment at one moment. All times in (cloud) seconds."""

    now_s: float  # since the segment's job started
    deadline_s: float  # from the same start
    work_left_s: float  # at one instance's speed, from the last checkpoint
    changeover_s: float  # boot + model load of a new instance, before its first row
    tick_s: float  # how long until the policy is asked again (trace tick; the coordinator's cycle)
    spot_available: bool  # what-if: the trace; live: no capacity failure within the relaunch backoff
    running: Market | None  # the market of the instance that holds the segment, None if none does
    boot_left_s: float = 0.0  # what is left of that instance's changeover
    # what a reclaim costs beyond a changeover: what-if, the work since the checkpoint; live, the drain and
    # its detection
    loss_s: float = 0.0
    total_work_s: float = 0.0  # the segment's whole work, for progress lines; 0 = work_left at start

    @property
    def slack_s(self) -> float:
        """Time to spare if the segment went on-demand now and stayed there."""
        boot = self.boot_left_s if self.running == "on-demand" else self.changeover_s
        return self.deadline_s - self.now_s - self.work_left_s - boot

    @property
    def margin_s(self) -> float:
        """Slack one reclaim can eat: the work it loses and the tick it takes to see it."""
        return self.loss_s + self.tick_s


class DeadlinePolicy:
    """Base class: subclasses set `name` and implement `choose`."""

    name = ""

    def choose(self, view: DeadlineView) -> Market | None:
        """ "spot", "on-demand", or None: wait (nothing runs, nothing is billed)."""
        raise NotImplementedError


class Greedy(DeadlinePolicy):
    name = "greedy"

    def choose(self, view: DeadlineView) -> Market | None:
        if view.running == "on-demand":
            return "on-demand"
        if view.spot_available:
            return "spot"
        return None if view.slack_s - view.tick_s >= 0 else "on-demand"


class SafetyGreedy(DeadlinePolicy):
    name = "safety-greedy"

    def choose(self, view: DeadlineView) -> Market | None:
        if view.running == "on-demand":
            return "on-demand"
        if view.spot_available and view.slack_s - view.changeover_s >= view.margin_s:
            return "spot"
        if not view.spot_available and view.slack_s - view.tick_s >= view.margin_s:
            return None
        return "on-demand"


class UniformProgress(DeadlinePolicy):
    name = "uniform-progress"

    def choose(self, view: DeadlineView) -> Market | None:
        total = view.total_work_s or view.work_left_s
        remaining_time = view.deadline_s - view.now_s
        if remaining_time - view.work_left_s <= SAFETY_NET_CHANGEOVERS * view.changeover_s + view.tick_s:
            return "on-demand"  # the safety net
        if view.spot_available:
            return "spot"
        ahead = (total - view.work_left_s) - total * view.now_s / view.deadline_s
        if view.running == "on-demand":
            return None if ahead >= HYSTERESIS_CHANGEOVERS * view.changeover_s else "on-demand"
        return "on-demand" if ahead < 0 else None


class DeadlineAware(DeadlinePolicy):
    name = "deadline"

    def __init__(self, *, reserve_hours: float = DEFAULT_RESERVE_HOURS) -> None:
        if reserve_hours < 0:
            raise ConfigError(f"reserve_hours must be >= 0, got {reserve_hours}")
        self.reserve_s = reserve_hours * 3600

    def choose(self, view: DeadlineView) -> Market | None:
        slack, margin = view.slack_s, view.margin_s
        if view.running == "on-demand":
            # back to spot costs two changeovers of slack: this one's, and on-demand's again after a reclaim
            back = view.spot_available and slack - 2 * view.changeover_s >= margin
            return "spot" if back else "on-demand"
        if view.spot_available:
            return "spot" if slack - view.changeover_s >= margin else "on-demand"
        return None if slack - view.tick_s >= max(margin, self.reserve_for(view)) else "on-demand"

    def reserve_for(self, view: DeadlineView) -> float:
        """The slack to keep for later returns to spot: the full reserve with all the work ahead, less as
        the work left shrinks (fewer outages still to come)."""
        total = view.total_work_s or view.work_left_s
        share = min(1.0, view.work_left_s / total) if total > 0 else 0.0
        return self.reserve_s * share
