"""Many what-if runs: policies x availability windows, summarised the way the report and the bench print them.

A study draws `runs` availability windows (random start offsets into a trace, or sequences from the random
or run-length model), runs every policy and the optimum on each, and summarises per policy: mean, p50 and
p90 cost, cost relative to the optimum and to all on-demand, the share of deadlines met, interruptions and
work redone. A job a policy does not finish inside the window is charged the rest at on-demand (so costs
stay comparable) and counts as a missed deadline.

Usage::

    windows = trace_windows(trace, job, runs=20, rng=random.Random(0))
    windows = failover_windows([trace_a, trace_b], job, 20, random.Random(0), "steadiest")  # one region
    results = run_study(["on-demand", "deadline"], job, windows)
    rows = summarise(results)                 # one PolicySummary per policy, optimum first
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from coordinator.errors import WhatIfError
from coordinator.policies.registry import Policy, make_policy
from coordinator.whatif.engine import Availability, simulate_job
from coordinator.whatif.job import Outcome, WhatIfJob
from coordinator.whatif.optimum import optimum_cost
from coordinator.whatif.traces import AvailabilityTrace, RunLengths, random_availability
from coordinator.whatif.zones import LOOKBACK_TICKS, ZoneSet

WINDOW_DEADLINES = 3  # a window spans three deadlines: room for a policy that runs late to finish
OPTIMUM = "optimum"
# the comparison's order: baseline, the recovery policies, then the deadline-aware ones
DEFAULT_POLICIES = (
    "on-demand",
    "spot-only",
    "hybrid",
    "greedy",
    "safety-greedy",
    "uniform-progress",
    "deadline",
)
# the live controller retries spot every minute with max_spot_retries=10 over a 20-minute job; over a
# window of days spot-only means "wait for spot however long it takes", so its retry count is unbounded here
WHATIF_OPTIONS: dict[str, dict[str, float | int]] = {"spot-only": {"max_spot_retries": 10**9}}


@dataclass(frozen=True, slots=True)
class Window:
    source: str  # "us-west-2a_v100_1 @ tick 1234", "random #3", "runlength us-east-1a #3"
    available: Availability  # one zone's ticks, or a region's zones (failover between them)
    gap_seconds: int


@dataclass(frozen=True, slots=True)
class RunResult:
    policy: str
    window: Window
    outcome: Outcome
    cost_usd: float  # outcome cost plus, if unfinished, the rest at on-demand
    optimum_usd: float


@dataclass(frozen=True, slots=True)
class PolicySummary:
    policy: str
    runs: int
    mean_usd: float
    p50_usd: float
    p90_usd: float
    mean_vs_optimum: float  # mean over runs of cost / optimum
    p90_vs_optimum: float
    mean_vs_on_demand: float  # mean cost / the all-on-demand cost
    deadlines_met: float  # share of runs
    interruptions: float  # mean per run
    redone_hours: float  # mean per run
    mean_finish_hours: float  # over the runs that finished


def _window_ticks(job: WhatIfJob, gap: int) -> int:
    return math.ceil(WINDOW_DEADLINES * job.deadline_seconds / gap)


def trace_windows(trace: AvailabilityTrace, job: WhatIfJob, runs: int, rng: random.Random) -> list[Window]:
    gap = _whole_seconds(trace.gap_seconds, "gap_seconds")
    ticks = _window_ticks(job, gap)
    if len(trace.available) < ticks:
        raise WhatIfError(
            f"trace {trace.name}: {trace.hours:.1f} h is too short for a deadline of "
            f"{job.deadline_seconds / 3600:g} h (windows of {WINDOW_DEADLINES} deadlines)"
        )
    offsets = [rng.randrange(len(trace.available) - ticks + 1) for _ in range(runs)]
    return [Window(f"{trace.name} @ tick {o}", trace.window(o, ticks), gap) for o in offsets]


def failover_windows(
    traces: Sequence[AvailabilityTrace], job: WhatIfJob, runs: int, rng: random.Random, choice: str
) -> list[Window]:
    """`runs` windows over `traces` as the zones of one region: each window the same ticks of every zone
    (the traces must cover the same hours), a spot launch failing over between them by `choice`; each zone's
    ticks before the window are its history (`zones.py`)."""
    gaps = {_whole_seconds(t.gap_seconds, "gap_seconds") for t in traces}
    names = [t.name for t in traces]
    if len(gaps) != 1:
        raise WhatIfError(f"--zones: the traces tick every {sorted(gaps)} s; failover needs one interval")
    if len(set(names)) != len(names):
        raise WhatIfError(f"--zones: a zone given twice ({', '.join(names)})")
    gap = gaps.pop()
    ticks = _window_ticks(job, gap)
    shortest = min(traces, key=lambda t: len(t.available))
    if len(shortest.available) < ticks:
        raise WhatIfError(
            f"trace {shortest.name}: {shortest.hours:.1f} h is too short for a deadline of "
            f"{job.deadline_seconds / 3600:g} h (windows of {WINDOW_DEADLINES} deadlines)"
        )
    offsets = [rng.randrange(len(shortest.available) - ticks + 1) for _ in range(runs)]
    return [
        Window(
            f"{len(traces)} zones ({choice}) @ tick {o}",
            ZoneSet.of(
                {t.name: t.window(o, ticks) for t in traces},
                choice=choice,
                history={t.name: t.available[max(0, o - LOOKBACK_TICKS) : o] for t in traces},
            ),
            gap,
        )
        for o in offsets
    ]


def random_windows(
    probability: float, interval: float, gap: int, job: WhatIfJob, runs: int, rng: random.Random
) -> list[Window]:
    ticks = _window_ticks(job, gap)
    return [
        Window(
            f"random {probability:.0%}/{interval:g}s #{i}",
            random_availability(probability, interval, gap, ticks, rng),
            gap,
        )
        for i in range(runs)
    ]


def run_length_windows(
    trace: AvailabilityTrace, job: WhatIfJob, runs: int, rng: random.Random
) -> list[Window]:
    gap = _whole_seconds(trace.gap_seconds, "gap_seconds")
    stats = RunLengths.of(trace)
    ticks = _window_ticks(job, gap)
    return [Window(f"run lengths of {trace.name} #{i}", stats.sample(ticks, rng), gap) for i in range(runs)]


def _whole_seconds(value: float, field: str) -> int:
    if value != int(value):
        raise WhatIfError(f"{field} must be whole seconds for the what-if mode, got {value}")
    return int(value)


def policy_for(name: str) -> Policy:
    return make_policy(name, **WHATIF_OPTIONS.get(name, {}))


def run_study(
    policies: Iterable[str] | Mapping[str, Policy], job: WhatIfJob, windows: Sequence[Window]
) -> list[RunResult]:
    """`policies`: registered names (with the what-if options), or labelled policy objects (a sweep)."""
    if isinstance(policies, Mapping):
        chosen = list(policies.items())
    else:
        chosen = [(name, policy_for(name)) for name in policies]
    rest_rate = job.on_demand_usd_per_hour / 3600
    results = []
    for window in windows:
        optimum = optimum_cost(job, window.available, window.gap_seconds)
        if chosen and math.isinf(optimum):
            raise WhatIfError(f"{window.source}: no schedule meets the deadline (the optimum is infinite)")
        for name, policy in chosen:
            outcome = simulate_job(policy, job, window.available, window.gap_seconds)
            cost = outcome.cost_usd + outcome.work_left_seconds * rest_rate
            results.append(RunResult(name, window, outcome, cost, optimum))
        results.append(
            RunResult(
                OPTIMUM, window, Outcome(optimum, None, True, 0, 0.0, 0.0, 0.0, 0, 0.0), optimum, optimum
            )
        )
    return results


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def summarise(results: Sequence[RunResult], job: WhatIfJob) -> list[PolicySummary]:
    order = [OPTIMUM, *dict.fromkeys(r.policy for r in results if r.policy != OPTIMUM)]
    rows = []
    for name in order:
        mine = [r for r in results if r.policy == name]
        if not mine:
            continue
        costs = [r.cost_usd for r in mine]
        ratios = [r.cost_usd / r.optimum_usd for r in mine]
        finished = [r.outcome.finish_seconds for r in mine if r.outcome.finish_seconds is not None]
        rows.append(
            PolicySummary(
                policy=name,
                runs=len(mine),
                mean_usd=statistics.fmean(costs),
                p50_usd=_p(costs, 0.5),
                p90_usd=_p(costs, 0.9),
                mean_vs_optimum=statistics.fmean(ratios),
                p90_vs_optimum=_p(ratios, 0.9),
                mean_vs_on_demand=statistics.fmean(costs) / job.all_on_demand_usd,
                deadlines_met=sum(r.outcome.deadline_met for r in mine) / len(mine),
                interruptions=statistics.fmean(r.outcome.interruptions for r in mine),
                redone_hours=statistics.fmean(r.outcome.redone_seconds for r in mine) / 3600,
                mean_finish_hours=statistics.fmean(finished) / 3600 if finished else math.nan,
            )
        )
    return rows


def markdown_table(rows: Sequence[PolicySummary]) -> str:
    lines = [
        "| policy | runs | mean $ | p50 $ | p90 $ | mean / optimum | p90 / optimum | mean / all on-demand "
        "| deadlines met | reclaims / run | redone h / run | finish h (mean) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        finish = "-" if r.policy == OPTIMUM else f"{r.mean_finish_hours:.2f}"
        lines.append(
            f"| {r.policy} | {r.runs} | {r.mean_usd:.2f} | {r.p50_usd:.2f} | {r.p90_usd:.2f} | "
            f"{r.mean_vs_optimum:.3f}x | "
            f"{r.p90_vs_optimum:.3f}x | {r.mean_vs_on_demand:.3f}x | {r.deadlines_met:.1%} | "
            f"{r.interruptions:.2f} | "
            f"{r.redone_hours:.2f} | {finish} |"
        )
    return "\n".join(lines)
