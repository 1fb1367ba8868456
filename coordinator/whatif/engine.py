"""The what-if engine: one job under one policy against one availability sequence, on a virtual clock.

No processes and no sleeps: time advances a trace tick at a time. The job's work is split evenly over
`instances` segments; each segment is one instance at a time, simulated one after the other, all against
one availability sequence (one zone) or a `ZoneSet` (the zones of a region: a spot instance is reclaimed
when its own zone goes, and a spot launch takes the first zone that has capacity, `zones.py`).

One tick `[t, t + gap)`, for a segment:

1. a spot instance whose zone's tick is unavailable is reclaimed at `t`: billed to `t`; the work since its
   last checkpoint is lost (`checkpoint_seconds`; 0 means the 2-minute notice drains it, nothing lost);
2. the policy decides when the segment has no instance, or runs on on-demand: recovery policies
   (`on-demand`, `spot-only`, `hybrid`) through their `launch()`/`recover()`, deadline policies through
   `choose(DeadlineView)`. A spot launch in a tick no zone has fails (the recovery policy hears
   "failed-launch"). A new instance first spends `changeover_seconds` booting (billed, no progress); leaving
   an instance on purpose drains it (nothing lost);
3. the instance works the rest of the tick (with `rebalance_lead_seconds`, in the tick before its zone's
   reclaim the replacement starts on the recommendation and boots meanwhile, `rebalance.py`); the
   segment is done when its work is; billing is per second with a 60-second minimum per instance (EC2
   Linux).

Everything is in whole seconds, so the optimum (`optimum.py`) can follow the same steps exactly (one
zone, no rebalance).

Usage::

    job = WhatIfJob(work_seconds=36_000, deadline_seconds=43_200, changeover_seconds=360,
                    spot_usd_per_hour=0.918, on_demand_usd_per_hour=3.06)
    outcome = simulate_job(make_policy("deadline"), job, availability, gap_seconds=195)
    outcome.cost_usd, outcome.finish_seconds, outcome.deadline_met
"""

from __future__ import annotations

from collections.abc import Sequence

from coordinator.errors import WhatIfError
from coordinator.policies.registry import Policy, driver_for
from coordinator.whatif.job import Outcome, WhatIfJob
from coordinator.whatif.rebalance import recommended, replace_early
from coordinator.whatif.segment import Segment
from coordinator.whatif.trace_segment import TraceSegment
from coordinator.whatif.zones import ZoneSet

Availability = Sequence[bool] | ZoneSet  # one zone, or several


def simulate_segment(
    policy: Policy,
    job: WhatIfJob,
    available: Availability,
    gap_seconds: int,
    *,
    index: int = 0,
) -> Outcome:
    total = job.segment_work_seconds
    segment = Segment(job, gap_seconds)
    driver = TraceSegment(driver_for(policy), segment, index, job.instances)
    zones = available if isinstance(available, ZoneSet) else ZoneSet.one(available)
    held = zones.columns[0]  # the availability of the zone the spot instance holds
    lead = job.rebalance_lead_seconds
    if lead > gap_seconds:
        raise WhatIfError(
            f"rebalance_lead_seconds={lead} is longer than a tick ({gap_seconds} s): a recommendation is "
            "modelled within the tick before the reclaim"
        )
    finish: int | None = None
    for tick, spot_available in enumerate(zones.any_up):
        now = tick * gap_seconds
        reclaimed = False
        if segment.running == "spot":
            if held[tick]:  # spot keeps running: nothing to decide, unless a rebalance is recommended
                early = (
                    replace_early(segment, driver, zones, held, tick)
                    if recommended(held, tick, lead)
                    else None
                )
                finish, held = early if early is not None else (segment.work(now, gap_seconds, total), held)
                if finish is not None:
                    break
                continue
            segment.reclaim(now)
            reclaimed = True
            driver.reclaimed()
        if driver.gave_up:
            break
        choice = driver.decide(now, spot_available, reclaimed)
        if choice != segment.running:
            if segment.running is not None:
                segment.stop(now)  # on purpose: drained, nothing lost
            if choice is not None:
                segment.start(choice, now)
                if choice == "spot":
                    held = zones.columns[zones.pick(tick) or 0]  # spot was chosen: some zone is up
        if segment.running is not None:
            finish = segment.work(now, gap_seconds, total)
            if finish is not None:
                break
    if finish is None and segment.running is not None:
        segment.stop(len(zones.any_up) * gap_seconds)
    return segment.outcome(finish)


def simulate_job(policy: Policy, job: WhatIfJob, available: Availability, gap_seconds: int) -> Outcome:
    """Every segment of the job against the same availability; the job ends when its last segment does.

    Segments are alike but for the market a recovery policy launches them on, and the engine is
    deterministic: one simulation per distinct first market stands for all segments that share it."""
    by_start: dict[str, Outcome] = {}
    outcomes = []
    for index in range(job.instances):
        key = driver_for(policy).first_market(index, job.instances) or "all"  # deadline: decided on the way
        if key not in by_start:
            by_start[key] = simulate_segment(policy, job, available, gap_seconds, index=index)
        outcomes.append(by_start[key])
    finishes = [o.finish_seconds for o in outcomes]
    finish = None if any(f is None for f in finishes) else max(f for f in finishes if f is not None)
    return Outcome(
        cost_usd=sum(o.cost_usd for o in outcomes),
        finish_seconds=finish,
        deadline_met=all(o.deadline_met for o in outcomes),
        interruptions=sum(o.interruptions for o in outcomes),
        redone_seconds=sum(o.redone_seconds for o in outcomes),
        spot_seconds=sum(o.spot_seconds for o in outcomes),
        on_demand_seconds=sum(o.on_demand_seconds for o in outcomes),
        changeovers=sum(o.changeovers for o in outcomes),
        work_left_seconds=sum(o.work_left_seconds for o in outcomes),
    )
