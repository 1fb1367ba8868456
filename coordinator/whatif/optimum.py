"""The omniscient optimum: the cheapest way to finish a segment by the deadline, knowing the whole trace.

Dynamic programming over (tick, progress, instance state), backwards from the deadline. It takes the same
steps as the engine (`engine.py`): decisions at tick starts (wait, start spot where the tick is available,
start on-demand, keep the instance), a changeover before any work, per-second billing, a spot instance
lost where its tick is unavailable. It differs only where that can make it cheaper, so it is a lower
bound for every policy on the same trace: it never loses work to a reclaim (knowing the reclaim, it stops
the instance at the same moment on purpose, and a drained stop loses nothing) and it does not charge the
60-second minimum.

Progress is counted in units of gcd(tick, changeover, work) seconds (15 s for 195-s ticks and a 360-s
changeover), so every reachable progress value is on the grid and the result is exact for the model.
The work per tick is one vector operation over all progress values (numpy), about 10 ms for a 10-hour
segment with a 24-hour deadline.

Usage::

    cost = optimum_cost(job, availability, gap_seconds=195)      # math.inf: the deadline cannot be met
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from coordinator.errors import WhatIfError
from coordinator.whatif.engine import WhatIfJob

Vector = npt.NDArray[np.float64]


def optimum_cost(job: WhatIfJob, available: Sequence[bool], gap_seconds: int) -> float:
    """The whole job's optimum: its segments are identical and share the trace."""
    return job.instances * optimum_segment_cost(job, available, gap_seconds)


def optimum_segment_cost(job: WhatIfJob, available: Sequence[bool], gap_seconds: int) -> float:
    gap, changeover, work, deadline = (
        gap_seconds,
        job.changeover_seconds,
        job.segment_work_seconds,
        job.deadline_seconds,
    )
    ticks = math.ceil(deadline / gap)
    if len(available) < ticks:
        raise WhatIfError(f"the availability sequence has {len(available)} ticks; the deadline needs {ticks}")
    unit = math.gcd(math.gcd(gap, changeover), work)
    full = work // unit  # progress index meaning "done"
    progress_s = np.arange(full + 1, dtype=np.float64) * unit
    needed_s = work - progress_s  # work still to do, per progress index
    boots = [
        changeover - k * gap for k in range(1, math.ceil(changeover / gap) + 1) if changeover - k * gap > 0
    ]
    carried = [*boots, 0]  # boot left at a tick start, for an instance that ran the tick before
    prices = {"spot": job.spot_usd_per_hour / 3600, "on-demand": job.on_demand_usd_per_hour / 3600}

    finished = np.full(full + 1, math.inf)
    finished[full] = 0.0
    value: dict[tuple[str, int], Vector] = {("idle", 0): finished.copy()}
    for market in prices:
        for boot_left in carried:
            value[(market, boot_left)] = finished.copy()

    for tick in range(ticks - 1, -1, -1):
        usable = min(gap, deadline - tick * gap)  # the deadline may fall inside the last tick
        last = (tick + 1) * gap >= deadline

        def run(
            market: str,
            boot_left: int,
            nxt: dict[tuple[str, int], Vector] = value,
            usable: int = usable,
            last: bool = last,
        ) -> Vector:
            """Cost from here if (market, boot_left) holds the segment through this tick, then its best."""
            boot = min(boot_left, gap)
            worked = gap - boot
            finish_s = boot + needed_s  # seconds into the tick at which the work would be done
            done_here = finish_s <= usable
            cost = np.where(done_here, prices[market] * finish_s, math.inf)
            if not last:
                after = nxt[(market, boot_left - boot)]
                shifted = after[np.minimum(full, np.arange(full + 1) + worked // unit)]
                cost = np.where(done_here, cost, prices[market] * gap + shifted)
            cost[full] = 0.0
            return cost

        starts = [run("on-demand", changeover)]
        if available[tick]:
            starts.append(run("spot", changeover))
        idle = value[("idle", 0)] if not last else finished
        best_new = np.minimum.reduce([idle, *starts])
        new_value: dict[tuple[str, int], Vector] = {("idle", 0): best_new}
        for market in prices:
            for boot_left in carried:
                if market == "spot" and not available[tick]:
                    new_value[(market, boot_left)] = best_new  # reclaimed at the tick start
                else:
                    new_value[(market, boot_left)] = np.minimum(best_new, run(market, boot_left))
        value = new_value
    return float(value[("idle", 0)][0])
