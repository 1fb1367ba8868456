"""Policies on real spot traces: cost against the omniscient optimum and all on-demand, and deadlines met.

    python -m bench.policies [--traces ../shared/data/spot-traces/aws-02-15-2023] [--offsets 20] [--seed 0]

The traces: AWS p3.2xlarge spot availability, 9 zones, 45 days, one value per 195 s, 1 = available
(Wu et al., "Can't Be Late: Optimizing Spot Instance Savings under Deadlines", NSDI 2024; collected by the
SkyPilot team, github.com/skypilot-org/spot-traces). They are not in this repository: give their folder.

The job: one instance, 10 hours of work, changeover 0.1 h (rounded up to whole seconds: 360 s), the price
table's p3.2xlarge us-east-1 prices (spot: the zones' median), nothing lost to a reclaim (the notice
drains). 20 random start offsets per zone (the same offsets for every policy and deadline), deadlines 12,
16 and 24 hours. Per policy and deadline: mean and p90 of cost / optimum, mean cost / all on-demand, share
of deadlines met.

Then the speed of the what-if engine: single-instance jobs per second per core (this process is one core)
over windows of the 45-day trace, against the optimum's dynamic program as the baseline in the same run,
and how it scales with job length and instance count.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from coordinator.cost.pricing import PriceTable
from coordinator.policies.deadline import DeadlineAware
from coordinator.whatif.engine import simulate_job
from coordinator.whatif.job import WhatIfJob
from coordinator.whatif.optimum import optimum_cost
from coordinator.whatif.study import DEFAULT_POLICIES as POLICIES
from coordinator.whatif.study import (
    OPTIMUM,
    RunResult,
    Window,
    policy_for,
    run_study,
    summarise,
    trace_windows,
)
from coordinator.whatif.traces import AvailabilityTrace

DEFAULT_TRACES = Path(__file__).resolve().parents[2] / "shared" / "data" / "spot-traces" / "aws-02-15-2023"
DEADLINE_HOURS = (12, 16, 24)
WORK_HOURS = 10
CHANGEOVER_SECONDS = 360  # 0.1 h
# $/h: the traces' type in the price table (coordinator/cost/prices.csv), spot the median of its zones
SPOT, ON_DEMAND = (
    PriceTable.load().lookup("aws", "us-east-1", "p3.2xlarge", market).usd_per_hour
    for market in ("spot", "on-demand")
)
GOAL_RATIO = 1.10
SWEEP_RESERVES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)  # hours of slack kept at a segment's start


def job_for(deadline_hours: float, *, work_hours: float = WORK_HOURS, instances: int = 1) -> WhatIfJob:
    return WhatIfJob(
        work_seconds=int(work_hours * 3600),
        deadline_seconds=int(deadline_hours * 3600),
        changeover_seconds=CHANGEOVER_SECONDS,
        spot_usd_per_hour=SPOT,
        on_demand_usd_per_hour=ON_DEMAND,
        instances=instances,
    )


def zone_windows(traces: list[AvailabilityTrace], offsets: int, seed: int) -> list[Window]:
    """`offsets` windows per zone, long enough for the longest deadline, from one generator per zone: every
    policy, deadline and sweep setting sees the same windows."""
    longest = job_for(max(DEADLINE_HOURS))
    return [w for t in traces for w in trace_windows(t, longest, offsets, random.Random(f"{seed}:{t.name}"))]


def compare(windows: list[Window]) -> dict[float, list[RunResult]]:
    return {hours: run_study(POLICIES, job_for(hours), windows) for hours in DEADLINE_HOURS}


def print_comparison(by_deadline: dict[float, list[RunResult]]) -> None:
    print(
        "| deadline | policy | mean / optimum | p90 / optimum | mean / all on-demand | deadlines met | "
        "mean $ | reclaims / run |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for hours, results in by_deadline.items():
        for row in summarise(results, job_for(hours)):
            if row.policy == OPTIMUM:
                print(
                    f"| {hours} h | optimum | 1.000x | 1.000x | {row.mean_vs_on_demand:.3f}x | 100% | "
                    f"{row.mean_usd:.2f} | - |"
                )
                continue
            print(
                f"| {hours} h | {row.policy} | {row.mean_vs_optimum:.3f}x | {row.p90_vs_optimum:.3f}x | "
                f"{row.mean_vs_on_demand:.3f}x | {row.deadlines_met:.1%} | {row.mean_usd:.2f} | "
                f"{row.interruptions:.2f} |"
            )
    print()
    for hours, results in by_deadline.items():
        rows = {r.policy: r for r in summarise(results, job_for(hours))}
        ours = rows["deadline"]
        met = ours.deadlines_met == 1.0 and ours.mean_vs_optimum <= GOAL_RATIO
        print(
            f"goal at {hours} h (100% deadlines met, mean <= {GOAL_RATIO:.2f}x optimum): "
            f"{'met' if met else 'NOT met'} ({ours.deadlines_met:.1%}, {ours.mean_vs_optimum:.3f}x)"
        )


def print_sweep(windows: list[Window]) -> None:
    """The `deadline` policy's one setting, the slack it keeps for returns to spot, around the default."""
    print("sweep of `deadline` reserve_hours (mean / optimum, deadlines met):")
    print("| reserve h | " + " | ".join(f"{h} h" for h in DEADLINE_HOURS) + " |")
    print("|---|" + "---|" * len(DEADLINE_HOURS))
    for reserve in SWEEP_RESERVES:
        cells = []
        for hours in DEADLINE_HOURS:
            job = job_for(hours)
            results = run_study({"deadline": DeadlineAware(reserve_hours=reserve)}, job, windows)
            row = next(r for r in summarise(results, job) if r.policy == "deadline")
            cells.append(f"{row.mean_vs_optimum:.3f}x, {row.deadlines_met:.1%}")
        print(f"| {reserve:g} | " + " | ".join(cells) + " |")


def sweep_results(windows: list[Window]) -> dict[tuple[float, int], list[RunResult]]:
    """The `deadline` policy at every reserve of the sweep and every deadline, on every window."""
    return {
        (reserve, hours): run_study(
            {"deadline": DeadlineAware(reserve_hours=reserve)}, job_for(hours), windows
        )
        for reserve in SWEEP_RESERVES
        for hours in DEADLINE_HOURS
    }


def _zone(result: RunResult) -> str:
    return result.window.source.split(" @ ")[0]


def _score(results: list[RunResult]) -> tuple[float, float]:
    """(mean cost / optimum, share of deadlines met) of the `deadline` policy's runs."""
    mine = [r for r in results if r.policy == "deadline"]
    ratio = sum(r.cost_usd / r.optimum_usd for r in mine) / len(mine)
    return ratio, sum(r.outcome.deadline_met for r in mine) / len(mine)


def tune(results: dict[tuple[float, int], list[RunResult]], zones: set[str]) -> float:
    """The reserve a user would pick from these zones' traces: every deadline met at all three deadlines,
    then the lowest mean cost / optimum over them."""

    def loss(reserve: float) -> tuple[float, float]:
        scores = [_score([r for r in results[(reserve, h)] if _zone(r) in zones]) for h in DEADLINE_HOURS]
        return (-min(met for _, met in scores), sum(ratio for ratio, _ in scores))

    return min(SWEEP_RESERVES, key=loss)


def print_cross_validation(windows: list[Window]) -> None:
    """Leave one zone out: tune the reserve on eight zones, score on the ninth; in-sample beside it."""
    results = sweep_results(windows)
    zones = sorted({_zone(r) for rs in results.values() for r in rs})
    in_sample = tune(results, set(zones))
    held_out: dict[int, list[RunResult]] = {h: [] for h in DEADLINE_HOURS}
    picks = []
    for zone in zones:
        reserve = tune(results, set(zones) - {zone})
        picks.append(f"{zone}: {reserve:g} h")
        for hours in DEADLINE_HOURS:
            held_out[hours] += [r for r in results[(reserve, hours)] if _zone(r) == zone]
    print(f"`deadline` tuned on all zones (in-sample, reserve {in_sample:g} h) and leave-one-zone-out:")
    print("| deadline | in-sample mean / optimum, met | cross-validated mean / optimum, met |")
    print("|---|---|---|")
    reached = True
    for hours in DEADLINE_HOURS:
        ratio, met = _score(results[(in_sample, hours)])
        cv_ratio, cv_met = _score(held_out[hours])
        reached = reached and cv_met == 1.0 and cv_ratio <= GOAL_RATIO
        print(f"| {hours} h | {ratio:.3f}x, {met:.1%} | {cv_ratio:.3f}x, {cv_met:.1%} |")
    print("reserves picked without the held-out zone: " + "; ".join(picks))
    verdict = "met" if reached else "NOT met"
    print(f"goal cross-validated (100% met, mean <= {GOAL_RATIO:.2f}x optimum at every deadline): {verdict}")


def jobs_per_second(trace: AvailabilityTrace, policy: str, job: WhatIfJob, runs: int) -> float:
    rng = random.Random(1)
    chosen = policy_for(policy)
    windows = trace_windows(trace, job, runs, rng)
    started = time.process_time()
    for window in windows:
        simulate_job(chosen, job, window.available, window.gap_seconds)
    return runs / (time.process_time() - started)


def print_speed(trace: AvailabilityTrace) -> None:
    job = job_for(24)
    rng = random.Random(2)
    windows = trace_windows(trace, job, 20, rng)
    started = time.process_time()
    for window in windows:
        optimum_cost(job, window.available, window.gap_seconds)
    dp_rate = len(windows) / (time.process_time() - started)
    print(f"speed on {trace.name} (CPU time of this process, one core); 10 h of work, deadline 24 h:")
    print(f"  optimum (dynamic program, numpy): {dp_rate:,.0f} jobs/s  <- baseline")
    for policy in POLICIES:
        rate = jobs_per_second(trace, policy, job, 2000)
        print(f"  {policy:17s} {rate:>9,.0f} jobs/s  ({rate / dp_rate:.1f}x the optimum's rate)")
    print(
        "scaling of `deadline` (jobs/s): work hours with the deadline at 2.4x the work; instances at 10 h "
        "/ 24 h"
    )
    for hours in (2.5, 10, 40):
        rate = jobs_per_second(trace, "deadline", job_for(hours * 2.4, work_hours=hours), 1000)
        print(f"  {hours:>5g} h of work: {rate:>9,.0f} jobs/s")
    for instances in (1, 4, 16):
        rate = jobs_per_second(trace, "deadline", job_for(24, instances=instances), 500)
        print(f"  {instances:>5d} instances: {rate:>9,.0f} jobs/s")


def trace_options(description: str) -> argparse.ArgumentParser:
    """The options of the benchmarks on the traces: their folder, the start offsets, the seed."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--offsets", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    return parser


def load_traces(folder: Path) -> list[AvailabilityTrace]:
    files = sorted(folder.glob("*.json"))
    if not files:
        raise SystemExit(f"no traces (*.json) in {folder}: give --traces <folder>")
    return [AvailabilityTrace.load(path, one_means="available") for path in files]


def main() -> None:
    parser = trace_options(__doc__.splitlines()[0])
    parser.add_argument("--sweep", action="store_true", help="also sweep the deadline policy's reserve_hours")
    args = parser.parse_args()
    traces = load_traces(args.traces)
    print(f"{len(traces)} traces from {args.traces}, {args.offsets} offsets each, seed {args.seed}")
    print(f"prices (price table, p3.2xlarge us-east-1): spot {SPOT:g} $/h, on-demand {ON_DEMAND:g} $/h")
    started = time.perf_counter()
    windows = zone_windows(traces, args.offsets, args.seed)
    print_comparison(compare(windows))
    print(f"\ncomparison took {time.perf_counter() - started:.1f} s wall\n")
    print_cross_validation(windows)
    print()
    if args.sweep:
        print_sweep(windows)
        print()
    print_speed(traces[0])


if __name__ == "__main__":
    main()
