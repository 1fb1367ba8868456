"""Multi-zone failover against one zone, on real spot traces, at the 12, 16 and 24 h deadlines.

    python -m bench.zones [--traces ../shared/data/spot-traces/aws-02-15-2023] [--offsets 20] [--seed 0]

The traces (Wu et al., NSDI 2024; see bench/policies.py) cover 9 zones over the same 45 days: 4 in
us-east-1, 2 in us-east-2, 3 in us-west-2. Per region, `--offsets` random start offsets are drawn once and
every zone is cut at the same ones, so a window of the region is the same hours in each of its zones.
The job is bench/policies.py's (10 h of work on one instance, a 360-s changeover, the price table's
p3.2xlarge prices). For each window: the job in each zone alone (the zone's own pool: what a fleet with one
subnet gets), and the job with failover between the region's zones (`coordinator/whatif/zones.py`: a
reclaimed spot instance is relaunched at once in a zone that has capacity), the zone chosen by name or by
the last 6 hours' availability (the hours before the window count). A job unfinished in its window is
charged the rest at on-demand and misses its deadline.

Per region, deadline and policy: mean cost as a share of all on-demand and deadlines met, for one zone
(the mean over the region's zones), the best zone (the one cheapest over these windows, in hindsight),
failover by name and by availability; what failover by availability saves against the mean zone and the
best one; and its cost against failover's optimum (`coordinator/whatif/optimum.py` over the zone set:
the cheapest way to finish, knowing every zone's whole window).

Then rebalance recommendations (`coordinator/whatif/rebalance.py`): the same windows with the replacement
started `--leads` seconds before each reclaim (0: on the reclaim, as without recommendations), per policy
and deadline over every region's windows, one zone and failover: mean cost / on-demand and mean job hours,
against lead 0 in the same run.
Every zone is priced at the table's spot price: the catalog's per-zone spot prices are keyed by zone ID
(use1-az1), whose mapping to zone names (us-east-1a) differs per account.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import random
import statistics
from collections import defaultdict

from bench.policies import DEADLINE_HOURS, job_for, load_traces, trace_options
from coordinator.whatif.engine import Availability, simulate_job
from coordinator.whatif.job import WhatIfJob
from coordinator.whatif.optimum import optimum_cost
from coordinator.whatif.study import WINDOW_DEADLINES, policy_for
from coordinator.whatif.traces import AvailabilityTrace
from coordinator.whatif.zones import LOOKBACK_TICKS, ZoneSet

POLICIES = ("spot-only", "hybrid", "deadline")
REBALANCE_POLICIES = ("hybrid", "deadline")


def region_of(trace: AvailabilityTrace) -> str:
    return trace.name.split("_")[0][:-1]  # us-east-1a_v100_1 -> us-east-1


def by_region(traces: list[AvailabilityTrace]) -> dict[str, list[AvailabilityTrace]]:
    regions: dict[str, list[AvailabilityTrace]] = defaultdict(list)
    for trace in traces:
        regions[region_of(trace)].append(trace)
    return {region: zones for region, zones in sorted(regions.items()) if len(zones) > 1}


def score(policy: str, job: WhatIfJob, available: Availability, gap: int) -> tuple[float, bool, int, float]:
    """(cost with the unfinished rest at on-demand, deadline met, reclaims, finish in hours or inf)."""
    outcome = simulate_job(policy_for(policy), job, available, gap)
    cost = outcome.cost_usd + outcome.work_left_seconds * job.on_demand_usd_per_hour / 3_600
    finish = outcome.finish_seconds / 3_600 if outcome.finish_seconds is not None else float("inf")
    return cost, outcome.deadline_met, outcome.interruptions, finish


Scores = dict[tuple[float, str, str], list[tuple[float, bool, int, float]]]  # (deadline, policy, kind)
KINDS = ("first", "steadiest")  # failover's zone choice: by name, or by the last 6 hours' availability


def study(
    zones: list[AvailabilityTrace],
    offsets: int,
    seed: int,
    *,
    lead: int = 0,
    policies: tuple[str, ...] = POLICIES,
) -> Scores:
    """Per deadline and policy: "zone NAME" (the job in that zone alone), "one zone" (all of them),
    "first" and "steadiest" (failover by each zone choice); per deadline, ("optimum", "failover")."""
    gap = int(zones[0].gap_seconds)
    ticks = -(-WINDOW_DEADLINES * max(DEADLINE_HOURS) * 3_600 // gap)
    shortest = min(len(z.available) for z in zones)
    rng = random.Random(f"{seed}:{region_of(zones[0])}")
    starts = [rng.randrange(shortest - ticks + 1) for _ in range(offsets)]
    scores: Scores = defaultdict(list)
    for hours in DEADLINE_HOURS:
        job = dataclasses.replace(job_for(hours), rebalance_lead_seconds=lead)
        for start in starts:
            windows = {z.name.split("_")[0]: z.window(start, ticks) for z in zones}
            history = {
                z.name.split("_")[0]: z.available[max(0, start - LOOKBACK_TICKS) : start] for z in zones
            }
            sets = {
                "first": ZoneSet.of(windows, choice="first"),
                "steadiest": ZoneSet.of(windows, history=history),
            }
            if lead == 0:
                best = optimum_cost(job, sets["first"], gap)
                scores[(hours, "optimum", "failover")].append((best, math.isfinite(best), 0, 0.0))
            for policy in policies:
                for name, window in windows.items():
                    one = score(policy, job, window, gap)
                    scores[(hours, policy, f"zone {name}")].append(one)
                    scores[(hours, policy, "one zone")].append(one)
                for kind, zone_set in sets.items():
                    scores[(hours, policy, kind)].append(score(policy, job, zone_set, gap))
    return scores


def main() -> None:
    parser = trace_options(__doc__.splitlines()[0])
    parser.add_argument("--leads", default="0,60,120,195", help="rebalance leads, seconds (at most a tick)")
    args = parser.parse_args()
    traces = load_traces(args.traces)
    regions = by_region(traces)
    if not regions:
        raise SystemExit(f"no region with two zones' traces in {args.traces}: give --traces <folder>")
    print(f"{len(traces)} traces from {args.traces}; {args.offsets} offsets per region, seed {args.seed}")
    print(
        "Mean cost / all on-demand (deadlines met). One zone: the mean over the region's zones; best zone:\n"
        "the zone cheapest over these windows (chosen in hindsight); failover by name (the first zone with\n"
        "capacity) and by the steadiest zone (the last 6 hours' availability); the optimum: knowing every\n"
        "zone's whole window, failover's lower bound."
    )
    print(
        "| region (zones) | deadline | policy | one zone | best zone | failover by name | failover steadiest "
        "| steadiest saves vs one zone | vs best zone | steadiest / optimum |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for region, zones in regions.items():
        scores = study(zones, args.offsets, args.seed)
        for hours in DEADLINE_HOURS:
            print_rows(f"{region} ({len(zones)})", hours, scores, int(zones[0].gap_seconds))
    print_rebalance(regions, args)


def print_rows(label: str, hours: float, scores: Scores, gap: int) -> None:
    on_demand = score("on-demand", job_for(hours), [True] * int(2 * hours * 3_600 // gap), gap)[0]
    optimum = statistics.fmean(row[0] for row in scores[(hours, "optimum", "failover")])

    def mean(kind: str, policy: str) -> float:
        return statistics.fmean(row[0] for row in scores[(hours, policy, kind)])

    def cell(kind: str, policy: str) -> str:
        rows = scores[(hours, policy, kind)]
        return f"{mean(kind, policy) / on_demand:.1%} ({sum(row[1] for row in rows) / len(rows):.0%})"

    for policy in POLICIES:
        zones = sorted(k for (h, p, k) in scores if h == hours and p == policy and k.startswith("zone "))
        best = min(zones, key=lambda kind: mean(kind, policy))
        steadiest = mean("steadiest", policy)
        print(
            f"| {label} | {hours} h | {policy} | {cell('one zone', policy)} | {best.removeprefix('zone ')} "
            f"{cell(best, policy)} | {cell('first', policy)} | {cell('steadiest', policy)} | "
            f"{1 - steadiest / mean('one zone', policy):.1%} | {1 - steadiest / mean(best, policy):.1%} | "
            f"{steadiest / optimum:.2f}x |"
        )


def print_rebalance(regions: dict[str, list[AvailabilityTrace]], args: argparse.Namespace) -> None:
    leads = [int(x) for x in args.leads.split(",")]
    gap = int(next(iter(regions.values()))[0].gap_seconds)
    by_lead = {
        lead: [
            study(zones, args.offsets, args.seed, lead=lead, policies=REBALANCE_POLICIES)
            for zones in regions.values()
        ]
        for lead in leads
    }
    print(f"\nrebalance recommendations, every region's windows; leads {leads} s before the reclaim")
    print(
        "| deadline | policy | zones | "
        + " | ".join(f"lead {lead} s: cost / on-demand, hours, met" for lead in leads)
        + " |"
    )
    print("|---|---|---|" + "---|" * len(leads))
    for hours in DEADLINE_HOURS:
        on_demand = score("on-demand", job_for(hours), [True] * (2 * hours * 3_600 // gap), gap)[0]
        for policy in REBALANCE_POLICIES:
            for kind in ("one zone", "steadiest"):
                cells = []
                for lead in leads:
                    rows = [row for scores in by_lead[lead] for row in scores[(hours, policy, kind)]]
                    cost = statistics.fmean(row[0] for row in rows) / on_demand
                    finish = statistics.fmean(row[3] for row in rows)
                    met = sum(row[1] for row in rows) / len(rows)
                    cells.append(f"{cost:.1%}, {finish:.2f} h, {met:.0%}")
                print(f"| {hours} h | {policy} | {kind} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
