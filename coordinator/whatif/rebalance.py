"""Starting the replacement on EC2's rebalance recommendation, before the reclaim (EC2 Capacity
Rebalancing, Karpenter's rebalance handling).

The trace says when a zone's capacity goes; the recommendation is modelled as arriving
`rebalance_lead_seconds` before that reclaim, at most one tick (AWS sends it when the risk rises,
sometimes well before the two-minute notice, sometimes with it: the lead is the parameter to measure).
Acting on it, the policy is asked for a replacement as after an interruption, with spot only in another
zone that has capacity at the reclaim; if it would wait, nothing starts early. The replacement is billed
from the recommendation and boots while the old instance keeps working; the old one leaves when the
replacement is ready (drained, nothing lost) or at the reclaim, whichever comes first (then as any
reclaim: the work since its checkpoint is lost). Either way the zone's reclaim counts as an interruption.
Recommendations that no reclaim follows are not modelled: each would cost a changeover, so the figures
are the option's best case.
"""

from __future__ import annotations

from collections.abc import Sequence

from coordinator.cost.pricing import Market
from coordinator.whatif.job import MIN_BILLED_SECONDS
from coordinator.whatif.segment import Segment
from coordinator.whatif.trace_segment import TraceSegment
from coordinator.whatif.zones import ZoneSet


def recommended(held: Sequence[bool], tick: int, lead: int) -> bool:
    """A recommendation comes in this tick: acting on them, and the held zone goes at the next one."""
    return lead > 0 and tick + 1 < len(held) and not held[tick + 1]


def replace_early(
    segment: Segment,
    driver: TraceSegment,
    zones: ZoneSet,
    held: Sequence[bool],
    tick: int,
) -> tuple[int | None, Sequence[bool]] | None:
    """Run the tick with the replacement started on the recommendation: (finish or None, the availability
    of the zone now held); None when the policy starts nothing early (the caller runs the tick as usual)."""
    job, gap, total = segment.job, segment.gap_seconds, segment.job.segment_work_seconds
    now, reclaim_at = tick * gap, (tick + 1) * gap
    told = max(now, reclaim_at - job.rebalance_lead_seconds)
    other = zones.pick(tick + 1, unless=held)
    market = driver.replace(told, other is not None)
    if market is None:
        return None
    switch = min(reclaim_at, told + job.changeover_seconds)
    finish = segment.work(now, switch - now, total)  # the old instance, until it leaves
    if finish is not None:
        if finish > told:  # the replacement was started and goes unused
            bill(segment, market, finish - told)
        return finish, held
    if switch == reclaim_at:
        segment.reclaim(switch)
    else:
        segment.stop(switch)
        segment.interruptions += 1
    segment.start(market, told)
    segment.boot_left = max(0, job.changeover_seconds - (switch - told))
    now_held = zones.columns[other] if market == "spot" and other is not None else held
    return segment.work(switch, reclaim_at - switch, total), now_held


def bill(segment: Segment, market: Market, seconds: int) -> None:
    seconds = max(MIN_BILLED_SECONDS, seconds)
    segment.billed[market] += seconds
    segment.cost += segment.job.price(market) * seconds / 3600
    segment.changeovers += 1
