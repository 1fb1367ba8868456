"""The numbers of the report: one row per configuration, and the conclusions drawn from them.

Savings are `(cost_od - cost_x) / cost_od * 100%`, with `cost_od` the mean cost of the on-demand runs of
the same folder. Reliability is rows predicted exactly once (the merge verified it) over rows asked for.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from coordinator.plan.intervals import ci95
from reports.runs import CONFIGURATIONS, Run, RunsFolder

SAVINGS_TARGET_PCT = 60.0
RELIABILITY_TARGET_PCT = 99.0


def p90(values: list[float]) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=10, method="inclusive")[-1]


@dataclass(frozen=True, slots=True)
class ConfigRow:
    configuration: str
    runs: int
    minutes_mean: float
    minutes_median: float
    minutes_p90: float
    cost_mean: float
    cost_stdev: float
    cost_min: float
    cost_max: float
    cost_per_1000_rows: float
    interruptions_per_run: float
    rows_redone: int
    segments_done: int
    segments_total: int
    rows_once: int
    rows_total: int
    savings_pct: float | None  # None without on-demand runs to compare with
    spot_share: float  # of the attempts' billed hours spent on spot
    deadlines_met: int  # runs that finished by their deadline ...
    deadlines_total: int  # ... of the runs that had one
    # each run against its own work at the on-demand price (the ledger's and MLflow's
    # `savings_vs_own_work_on_demand_pct`), averaged: a second definition, shown beside the first
    own_work_savings_pct: float = 0.0
    cpu_percent: float | None = None  # the workers' CPU (CloudWatch), runs' averages weighted by billed time
    memory_mb: float | None = None  # the largest worker memory any run saw
    cost_ci95: tuple[float, float] = (math.nan, math.nan)  # the mean cost's 95% interval
    distorted: int = 0  # runs counted here whose workers fell behind their pace

    @property
    def reliability_pct(self) -> float:
        return 100.0 * self.rows_once / self.rows_total if self.rows_total else 0.0


def config_row(configuration: str, runs: list[Run], on_demand_mean: float | None) -> ConfigRow:
    minutes = [r.cloud_seconds / 60 for r in runs]
    costs = [r.cost_usd for r in runs]
    rows_total = sum(r.rows for r in runs)
    spot_hours = sum(r.summary.spot_hours for r in runs)
    all_hours = spot_hours + sum(r.summary.on_demand_hours for r in runs)
    mean = statistics.mean(costs)
    return ConfigRow(
        configuration=configuration,
        runs=len(runs),
        minutes_mean=statistics.mean(minutes),
        minutes_median=statistics.median(minutes),
        minutes_p90=p90(minutes),
        cost_mean=mean,
        cost_stdev=statistics.stdev(costs) if len(costs) > 1 else 0.0,
        cost_min=min(costs),
        cost_max=max(costs),
        cost_per_1000_rows=sum(costs) / rows_total * 1000 if rows_total else math.nan,
        interruptions_per_run=statistics.mean(r.summary.interruptions for r in runs),
        rows_redone=sum(r.summary.rows_redone for r in runs),
        segments_done=sum(int(r.record["segments_done"]) for r in runs),
        segments_total=sum(int(r.record["segments_total"]) for r in runs),
        rows_once=sum(r.rows_exactly_once for r in runs),
        rows_total=rows_total,
        savings_pct=(on_demand_mean - mean) / on_demand_mean * 100 if on_demand_mean else None,
        spot_share=spot_hours / all_hours if all_hours else 0.0,
        deadlines_met=sum(r.deadline_met is True for r in runs),
        deadlines_total=sum(r.deadline_met is not None for r in runs),
        own_work_savings_pct=statistics.mean(r.summary.savings_pct for r in runs),
        cpu_percent=_weighted_cpu(runs),
        memory_mb=max((r.summary.memory_mb for r in runs if r.summary.memory_mb is not None), default=None),
        cost_ci95=ci95(costs),
        distorted=sum(r.distorted for r in runs),
    )


def _weighted_cpu(runs: list[Run]) -> float | None:
    measured = [r for r in runs if r.summary.cpu_percent is not None]
    hours = sum(r.summary.spot_hours + r.summary.on_demand_hours for r in measured)
    if not measured or hours <= 0:
        return None
    return (
        sum(
            (r.summary.cpu_percent or 0.0) * (r.summary.spot_hours + r.summary.on_demand_hours)
            for r in measured
        )
        / hours
    )


def config_rows(folder: RunsFolder, *, with_distorted: bool = False) -> list[ConfigRow]:
    """One row per configuration, from the runs that can be trusted: a run whose workers fell behind their
    pace measured this host, not the instance type, and is left out (`with_distorted` counts it: the line
    below the headline). A configuration whose runs were all distorted keeps them, and says so."""
    runs = {c: trusted(folder.of(c), with_distorted) for c in CONFIGURATIONS}
    on_demand = runs["on-demand"]
    baseline = statistics.mean(r.cost_usd for r in on_demand) if on_demand else None
    return [config_row(c, runs[c], baseline) for c in CONFIGURATIONS if runs[c]]


def trusted(runs: list[Run], with_distorted: bool = False) -> list[Run]:
    kept = [r for r in runs if with_distorted or not r.distorted]
    return kept or runs


@dataclass(frozen=True, slots=True)
class Conclusions:
    recommended: str
    recommended_reason: str
    expected_savings_pct: float | None
    savings_target_met: dict[str, bool]
    reliability_target_met: dict[str, bool]
    lines: list[str]


def configured_spot_share(configuration: str, settings: dict[str, object]) -> float:
    """The share of segments that start on spot under each configuration, as the matrix ran it."""
    if configuration == "on-demand":
        return 0.0
    if configuration == "hybrid":
        return float(settings.get("spot_share", 0.9))  # type: ignore[arg-type]
    return 1.0


def conclusions(rows: list[ConfigRow], settings: dict[str, object] | None = None) -> Conclusions:
    """The cheapest configuration that meets the reliability target is the recommendation; the rest follows
    from the table."""
    reliable = [
        r
        for r in rows
        if r.reliability_pct >= RELIABILITY_TARGET_PCT and r.deadlines_met == r.deadlines_total
    ]
    pool = reliable or rows
    best = min(pool, key=lambda r: r.cost_mean)
    reason = (
        f"the lowest mean cost (${best.cost_mean:.4f} per run) among configurations with reliability >= "
        f"{RELIABILITY_TARGET_PCT:g}% that met every deadline they had"
        if reliable
        else f"no configuration reached {RELIABILITY_TARGET_PCT:g}% reliability; it is the cheapest of them"
    )
    savings_met = {
        r.configuration: (r.savings_pct or 0.0) >= SAVINGS_TARGET_PCT
        for r in rows
        if r.configuration != "on-demand"
    }
    reliability_met = {r.configuration: r.reliability_pct >= RELIABILITY_TARGET_PCT for r in rows}
    share = configured_spot_share(best.configuration, settings or {})
    lines = [
        f"Recommended: **{best.configuration}** ({reason}): recommended spot share {share:.0%} of segments "
        f"starting on spot; {best.spot_share:.0%} of its billed hours were on spot."
    ]
    lines += _overlap(best, pool)
    lines += _trade_off(rows)
    if best.savings_pct is not None:
        lines.append(
            f"Expected savings against all on-demand: **{best.savings_pct:.1f}%** per run (mean over "
            f"{best.runs} run(s))."
        )
    for r in rows:
        if r.configuration == "on-demand":
            continue
        verdict = "met" if savings_met[r.configuration] else "not met"
        savings = f"{r.savings_pct:.1f}%" if r.savings_pct is not None else "n/a (no on-demand runs)"
        lines.append(
            f"Savings target (>= {SAVINGS_TARGET_PCT:g}%) for {r.configuration}: {savings}, {verdict}."
        )
    for r in rows:
        if r.deadlines_total:
            lines.append(
                f"Deadline for {r.configuration}: met in {r.deadlines_met} of {r.deadlines_total} runs "
                f"(the deadline is {(settings or {}).get('deadline_factor', '?')}x the matrix model's mean "
                "on-demand job time, the same for every run, unless a fixed one was given)."
            )
    for r in rows:
        verdict = "met" if reliability_met[r.configuration] else "not met"
        lines.append(
            f"Reliability target (>= {RELIABILITY_TARGET_PCT:g}% of rows exactly once) for "
            f"{r.configuration}: "
            f"{r.reliability_pct:.2f}% ({r.rows_once}/{r.rows_total} rows, "
            f"{r.segments_done}/{r.segments_total} segments), {verdict}."
        )
    return Conclusions(best.configuration, reason, best.savings_pct, savings_met, reliability_met, lines)


def _overlap(best: ConfigRow, pool: list[ConfigRow]) -> list[str]:
    """Whether the recommendation could be another draw's: its mean cost's 95% interval against the next."""
    others = sorted((r for r in pool if r is not best), key=lambda r: r.cost_mean)
    if not others:
        return []
    nxt, (low, high) = others[0], best.cost_ci95
    interval = f"${low:.4f}-${high:.4f}"
    if nxt.cost_ci95[0] <= high:
        return [
            f"Its mean cost's 95% interval ({interval}) overlaps {nxt.configuration}'s "
            f"(${nxt.cost_ci95[0]:.4f}-${nxt.cost_ci95[1]:.4f}): on these runs the two cannot be told "
            "apart; more runs would."
        ]
    return [f"Its mean cost's 95% interval ({interval}) is below {nxt.configuration}'s, the next cheapest."]


def _trade_off(rows: list[ConfigRow]) -> list[str]:
    """Time against cost: the cheapest configuration's job time beside on-demand's."""
    on_demand = next((r for r in rows if r.configuration == "on-demand"), None)
    cheapest = min(rows, key=lambda r: r.cost_mean)
    if on_demand is None or cheapest is on_demand or on_demand.minutes_mean <= 0:
        return []
    slower = cheapest.minutes_mean / on_demand.minutes_mean - 1
    return [
        f"Time against cost: {cheapest.configuration} was the cheapest and {slower:.0%} slower than "
        f"on-demand ({cheapest.minutes_mean:.1f} vs {on_demand.minutes_mean:.1f} cloud min per job): "
        "each reclaim costs a relaunch's boot. Where the job time matters, the deadline configuration "
        "bounds it."
    ]
