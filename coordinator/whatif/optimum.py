"""The omniscient optimum: the cheapest way to finish a segment by the deadline, knowing the whole trace.

Dynamic programming over (tick, progress, instance state), backwards from the deadline. It takes the same
steps as the engine (`engine.py`): decisions at tick starts (wait, start spot where the tick is available,
start on-demand, keep the instance), a changeover before any work, per-second billing, a spot instance
lost where its tick is unavailable. It differs only where that can make it cheaper, so it is a lower
bound for every policy on the same trace: it never loses work to a reclaim (knowing the reclaim, it stops
the instance at the same moment on purpose, and a drained stop loses nothing) and it does not charge the
60-second minimum.

With several zones (a `ZoneSet`), a spot instance holds one zone and is lost where that zone's tick is
unavailable; the optimum may start spot in any zone with capacity (a move between zones is a new instance
and pays its changeover), so it is the lower bound for failover however the zone is chosen.

Progress is counted in units of gcd(tick, changeover, work) seconds (15 s for 195-s ticks and a 360-s
changeover), so every reachable progress value is on the grid and the result is exact for the model.
The work per tick is one vector operation over all progress values (numpy), about 10 ms for a 10-hour
segment with a 24-hour deadline.

Usage::

    cost = optimum_cost(job, availability, gap_seconds=195)      # math.inf: the deadline cannot be met
    cost = optimum_cost(job, ZoneSet.of({"a": a, "b": b}), gap_seconds=195)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from coordinator.errors import WhatIfError
from coordinator.whatif.job import WhatIfJob
from coordinator.whatif.zones import ZoneSet

Vector = npt.NDArray[np.float64]
Values = dict[tuple[str, int], Vector]  # (market or idle, boot left) -> cost by progress index
ON_DEMAND = "on-demand"  # the markets: on-demand, and spot in each zone ("spot 0", "spot 1", ...)


def optimum_cost(job: WhatIfJob, available: Sequence[bool] | ZoneSet, gap_seconds: int) -> float:
    """The whole job's optimum: its segments are identical and share the trace."""
    return job.instances * optimum_segment_cost(job, available, gap_seconds)


class _Grid:
    """The segment's progress on the gcd grid, and what holding an instance through one tick costs."""

    def __init__(self, job: WhatIfJob, gap: int, zones: int) -> None:
        self.gap = gap
        work = job.segment_work_seconds
        self.unit = math.gcd(math.gcd(gap, job.changeover_seconds), work)
        self.full = work // self.unit  # progress index meaning "done"
        self.needed_s = work - np.arange(self.full + 1, dtype=np.float64) * self.unit  # work left per index
        spot = job.spot_usd_per_hour / 3600
        self.prices = {
            **{f"spot {z}": spot for z in range(zones)},
            ON_DEMAND: job.on_demand_usd_per_hour / 3600,
        }
        self.finished = np.full(self.full + 1, math.inf)
        self.finished[self.full] = 0.0

    def run(self, nxt: Values | None, market: str, boot_left: int, usable: int) -> Vector:
        """Cost from here if (market, boot_left) holds the segment through this tick, then its best
        (`nxt`: the values at the next tick; None in the deadline's tick)."""
        boot = min(boot_left, self.gap)
        worked = self.gap - boot
        finish_s = boot + self.needed_s  # seconds into the tick at which the work would be done
        done_here = finish_s <= usable
        price = self.prices[market]
        cost = np.where(done_here, price * finish_s, math.inf)
        if nxt is not None:
            after = nxt[(market, boot_left - boot)]
            shifted = after[np.minimum(self.full, np.arange(self.full + 1) + worked // self.unit)]
            cost = np.where(done_here, cost, price * self.gap + shifted)
        cost[self.full] = 0.0
        return cost


def optimum_segment_cost(job: WhatIfJob, available: Sequence[bool] | ZoneSet, gap_seconds: int) -> float:
    zones = available if isinstance(available, ZoneSet) else ZoneSet.one(available)
    gap, changeover, deadline = gap_seconds, job.changeover_seconds, job.deadline_seconds
    ticks = math.ceil(deadline / gap)
    if len(zones.any_up) < ticks:
        raise WhatIfError(
            f"the availability sequence has {len(zones.any_up)} ticks; the deadline needs {ticks}"
        )
    grid = _Grid(job, gap, len(zones.columns))
    boots = [
        changeover - k * gap for k in range(1, math.ceil(changeover / gap) + 1) if changeover - k * gap > 0
    ]
    carried = [*boots, 0]  # boot left at a tick start, for an instance that ran the tick before
    value: Values = {("idle", 0): grid.finished.copy()}
    for market in grid.prices:
        for boot_left in carried:
            value[(market, boot_left)] = grid.finished.copy()

    for tick in range(ticks - 1, -1, -1):
        usable = min(gap, deadline - tick * gap)  # the deadline may fall inside the last tick
        last = (tick + 1) * gap >= deadline
        nxt = None if last else value
        up = {ON_DEMAND: True, **{f"spot {z}": bool(c[tick]) for z, c in enumerate(zones.columns)}}
        starts = [grid.run(nxt, market, changeover, usable) for market in grid.prices if up[market]]
        idle = value[("idle", 0)] if not last else grid.finished
        best_new = np.minimum.reduce([idle, *starts])
        new_value: Values = {("idle", 0): best_new}
        for market in grid.prices:
            for boot_left in carried:
                if not up[market]:
                    new_value[(market, boot_left)] = best_new  # reclaimed at the tick start
                else:
                    new_value[(market, boot_left)] = np.minimum(
                        best_new, grid.run(nxt, market, boot_left, usable)
                    )
        value = new_value
    return float(value[("idle", 0)][0])
