"""Simulator only, for tests and benchmarks: interruptions and crashes at chosen times, not drawn ones.

Usage::

    on_cycle = chain(progress, forced_interrupter(injector, runtime, clock, [20.0, 40.0], kind="notice"))
"""

from __future__ import annotations

from collections.abc import Callable

from coordinator.job.core import TAG_SEGMENT, CloudClock
from coordinator.job.loop import SegmentStatus
from coordinator.sim.injector import InterruptionInjector
from coordinator.sim.instance_runtime import InstanceRuntime

OnCycle = Callable[[list[SegmentStatus]], None]


def forced_interrupter(
    injector: InterruptionInjector,
    runtime: InstanceRuntime,
    clock: CloudClock,
    at: list[float],
    *,
    kind: str,
) -> OnCycle:
    """For tests: at each listed cloud second after the start, interrupt (`kind`: notice, hard-kill) one
    running spot instance, crash its worker (`crash`), or send its rebalance recommendation (`rebalance`)."""
    pending = sorted(at)
    start = clock.now()

    def check(statuses: list[SegmentStatus]) -> None:
        while pending and clock.now() - start >= pending[0]:
            working = {
                s.segment_id
                for s in statuses
                if s.state == "RUNNING" and s.market == "spot" and s.rows_done > 0
            }
            spot = sorted(
                i
                for i, inst in runtime.running().items()
                if inst.tags.get(TAG_SEGMENT) in working and i not in injector.handled
            )
            if not spot:
                return  # no spot worker busy yet: try again next cycle
            pending.pop(0)
            if kind == "crash":
                injector.crash(spot[0])
            elif kind == "rebalance":
                injector.recommend_rebalance(spot[0])
            else:
                injector.interrupt(spot[0], hard=kind == "hard-kill")

    return check


def chain(*callbacks: OnCycle | None) -> OnCycle:
    def call(statuses: list[SegmentStatus]) -> None:
        for callback in callbacks:
            if callback is not None:
                callback(statuses)

    return call
