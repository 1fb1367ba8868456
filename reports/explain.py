"""The report's explanations: how sure each figure is, what the model predicted, and what theory allows.

- `bootstrap_mean` / `bootstrap_savings`: 95% intervals over the runs (resampled with a fixed seed, so the
  same runs give the same report);
- `prediction_blocks`: each configuration's measured mean cost and job time beside the matrix model's
  (`expected.json`, written by `spotbatch simulate` before its first run), and whether they agree: within
  5% or within the measured mean's 95% interval, whichever is wider;
- `first_principles_blocks`: the closed-form savings (`coordinator/whatif/first_principles.py`) at the
  matrix's hazard, segment length, boot and prices, next to the measured ones; why the seed-style hybrid
  cannot reach 60%; and when spot does not pay at all.

Usage::

    blocks = [*prediction_blocks(folder, rows), *first_principles_blocks(folder, rows)]
"""

from __future__ import annotations

import math
import random
import statistics

from coordinator.whatif.first_principles import (
    fallback_savings,
    price_ratio_for,
    relaunch_savings,
)
from reports.blocks import Block, money
from reports.runs import RunsFolder
from reports.tables import ConfigRow

RESAMPLES = 2_000
AGREEMENT = 0.05  # the model agrees when within 5% of the measured mean (or inside its 95% interval)


def bootstrap_mean(values: list[float], *, seed: int = 0) -> tuple[float, float]:
    """95% interval of the mean (percentile bootstrap); one value gives a zero-width interval."""
    if len(values) < 2:
        return values[0], values[0]
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(values, k=len(values))) for _ in range(RESAMPLES))
    return means[int(0.025 * RESAMPLES)], means[int(0.975 * RESAMPLES) - 1]


def bootstrap_savings(costs: list[float], on_demand: list[float], *, seed: int = 0) -> tuple[float, float]:
    """95% interval of (mean on-demand - mean cost) / mean on-demand, both resampled."""
    rng = random.Random(seed)
    found = sorted(
        1.0
        - statistics.fmean(rng.choices(costs, k=len(costs)))
        / statistics.fmean(rng.choices(on_demand, k=len(on_demand)))
        for _ in range(RESAMPLES)
    )
    return found[int(0.025 * RESAMPLES)], found[int(0.975 * RESAMPLES) - 1]


def agrees(measured: float, interval: tuple[float, float], predicted: float) -> bool:
    within_share = abs(predicted - measured) <= AGREEMENT * measured
    return within_share or interval[0] <= predicted <= interval[1]


def prediction_rows(folder: RunsFolder) -> list[tuple[str, ...]]:
    predictions = folder.expected.get("predictions_with_overheads") or folder.expected.get("predictions", {})
    on_demand = [r.cost_usd for r in folder.of("on-demand")]
    out: list[tuple[str, ...]] = []
    for config, model in predictions.items():
        runs = folder.of(config)
        if not runs:
            continue
        costs, times = [r.cost_usd for r in runs], [r.cloud_seconds / 60 for r in runs]
        cost_ci, time_ci = bootstrap_mean(costs), bootstrap_mean(times)
        cost_ok = agrees(statistics.fmean(costs), cost_ci, model["mean_cost_usd"])
        time_ok = agrees(statistics.fmean(times), time_ci, model["mean_job_seconds"] / 60)
        savings = "baseline"
        if config != "on-demand" and on_demand:
            low, high = bootstrap_savings(costs, on_demand)
            savings = (
                f"{1 - statistics.fmean(costs) / statistics.fmean(on_demand):.1%} [{low:.1%}, {high:.1%}]"
            )
        out.append(
            (
                config,
                str(len(runs)),
                f"{money(statistics.fmean(costs))} [{money(cost_ci[0])}, {money(cost_ci[1])}]",
                f"{money(model['mean_cost_usd'])} ({'agrees' if cost_ok else 'DISAGREES'})",
                f"{statistics.fmean(times):.1f} [{time_ci[0]:.1f}, {time_ci[1]:.1f}]",
                f"{model['mean_job_seconds'] / 60:.1f} ({'agrees' if time_ok else 'DISAGREES'})",
                savings,
                str(sum(r.distorted for r in runs)),
            )
        )
    return out


def prediction_blocks(folder: RunsFolder) -> list[Block]:
    rows = prediction_rows(folder)
    if not rows:
        return []
    header = (
        "configuration",
        "runs",
        "cost per run, mean [95% CI]",
        "model's mean",
        "job time (cloud min) [95% CI]",
        "model's mean",
        "savings vs on-demand [95% CI]",
        "distorted runs",
    )
    return [
        Block("heading", "Measured against the model"),
        Block(
            "paragraph",
            "The model is the matrix model (`coordinator/whatif/matrix_model.py`): the same policies, boot "
            "model, instance speed, billing rule and interruption model, 2,000 simulated runs per "
            "configuration, computed before the first live run. It agrees when it is within 5% of the "
            "measured mean or inside the measured mean's 95% interval (bootstrap over the runs). A run is "
            "distorted when its workers fell more than 3% behind their instance type's pace: the host could "
            "not keep up.",
        ),
        Block("table", rows=(header, *rows)),
    ]


def first_principles_blocks(folder: RunsFolder, rows: list[ConfigRow]) -> list[Block]:
    inputs = folder.expected.get("model_inputs") or {}
    if not inputs:
        return []
    lam, work, boot = inputs["hazard_per_second"], inputs["segment_work_seconds"], inputs["boot_mean_seconds"]
    ratio = inputs["spot_usd_per_hour"] / inputs["on_demand_usd_per_hour"]
    measured = {r.configuration: r.savings_pct for r in rows}
    relaunch = relaunch_savings(lam, work, boot, ratio)
    fallback = fallback_savings(lam, work, boot, ratio, inputs["spot_share"])
    ceiling, share = 1.0 - ratio, inputs["spot_share"]
    reclaimed = 1 - math.exp(-lam * (work + boot))
    items = [
        f"Inputs: {_reclaims(lam)} per spot instance; a segment "
        f"is {work / 60:.1f} cloud min of work after a {boot:.0f} s launch; spot costs {ratio:.3f}x "
        f"on-demand, so no configuration can save more than {ceiling:.1%} (the price ceiling).",
        f"Relaunch on spot after each reclaim (spot-only; deadline while its slack lasts): expected savings "
        f"{relaunch:.1%}; measured: spot-only {_pct(measured.get('spot-only'))}, deadline "
        f"{_pct(measured.get('deadline'))}.",
        f"Fall back to on-demand at the first reclaim with {share:.0%} of segments on spot (the "
        f"seed-style hybrid): expected {fallback:.1%}; measured {_pct(measured.get('hybrid'))}. It "
        f"cannot reach 60% at any reclaim rate: even with none, it saves at most {share:.0%} x "
        f"{ceiling:.1%} = {share * ceiling:.1%}, and {reclaimed:.0%} of its spot segments are reclaimed "
        "before they finish and pay on-demand for the rest.",
        f"What reaches 60%: relaunching on spot, at a spot price of at most "
        f"{price_ratio_for(0.60, lam, work, boot):.3f}x on-demand at this reclaim rate.",
    ]
    return [
        Block("heading", "Expected savings from first principles"),
        Block("bullets", items=tuple(items)),
        *_when_spot_pays(lam, boot, ratio),
    ]


def _when_spot_pays(lam: float, boot: float, ratio: float) -> list[Block]:
    """Spot-only's expected savings by segment length, at this boot and at a boot as long as the mean time
    between reclaims: where spot stops paying."""
    boots = [(f"{boot:.0f} s (this matrix)", boot)]
    if lam > 0:
        boots.append((f"{1 / lam:.0f} s (= time between reclaims)", 1 / lam))
    lengths = (1, 5, 15, 60, 240)
    header = ("launch to first row", *(f"{m} min of work" for m in lengths))
    body = tuple(
        (label, *(f"{relaunch_savings(lam, m * 60, b, ratio):.0%}" for m in lengths)) for label, b in boots
    )
    return [
        Block(
            "paragraph",
            "When spot does not pay: expected savings of relaunching on spot, by the work per instance and "
            "the launch time (the 60 s minimum bill and the boots make very short work cost more than "
            "on-demand; a boot as long as the time between reclaims spends most of the bill booting). A "
            "deadline tighter than the on-demand time plus one launch leaves no slack for any reclaim: "
            "on-demand from the start.",
        ),
        Block("table", rows=(header, *body)),
    ]


def _reclaims(lam: float) -> str:
    return f"one reclaim per {1 / lam / 60:.1f} cloud min on average" if lam > 0 else "no random reclaims"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}%"
