"""The matrix model follows the live rules on a virtual clock: its means agree with the closed form where
one exists, boots and reclaims cost what they should, and a deadline run plans for the worst boot."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable

import pytest

from coordinator.cost.billing import EC2_LINUX
from coordinator.whatif.boot_model import DEFAULT_BOOT_MODEL, BootModel, Phase
from coordinator.whatif.first_principles import fallback_savings, hazard, relaunch_savings
from coordinator.whatif.matrix_model import LiveSetup, predict

LAM = hazard(0.3, 300.0)
WORK_PER_ROW = 1.0  # cloud seconds
SEGMENT_ROWS = 600


def setup(**overrides: object) -> LiveSetup:
    base: dict[str, object] = dict(
        segment_rows=(SEGMENT_ROWS,) * 10,
        cloud_seconds_per_row=WORK_PER_ROW,
        batch_size=32,
        boot=DEFAULT_BOOT_MODEL,
        time_to_interruption=lambda rng: rng.expovariate(LAM),
        spot_usd_per_hour=0.4,
        on_demand_usd_per_hour=1.0,
        billing=EC2_LINUX,
        cycle_seconds=0.0,
        notice_poll_seconds=0.0,
        discover_seconds=0.0,
        reclaim_overhead_seconds=90.0,
    )
    base.update(overrides)
    return LiveSetup(**base)  # type: ignore[arg-type]


def test_on_demand_costs_its_work_and_one_boot() -> None:
    on_demand = predict(setup(), "on-demand", {}, samples=400)
    boot = DEFAULT_BOOT_MODEL.mean("on-demand")
    assert on_demand.mean_cost_usd == pytest.approx(10 * (SEGMENT_ROWS + boot) / 3600, rel=0.01)
    assert on_demand.mean_interruptions == 0 and on_demand.completed_share == 1.0


def test_spot_relaunch_and_first_reclaim_fallback_agree_with_the_closed_form() -> None:
    on_demand = predict(setup(), "on-demand", {}, samples=400).mean_cost_usd
    boot = DEFAULT_BOOT_MODEL.mean("spot")
    spot = predict(setup(), "spot-only", {"max_spot_retries": 50}, samples=3000)
    hybrid = predict(setup(), "hybrid", {"spot_share": 1.0, "max_spot_retries": 0}, samples=3000)
    # the drain finishes the batch in hand (up to 32 s of extra spot time per reclaim): within 2 points
    assert 1 - spot.mean_cost_usd / on_demand == pytest.approx(
        relaunch_savings(LAM, 600, boot, 0.4), abs=0.02
    )
    assert 1 - hybrid.mean_cost_usd / on_demand == pytest.approx(
        fallback_savings(LAM, 600, boot, 0.4, 1.0), abs=0.02
    )
    assert spot.mean_interruptions == pytest.approx(
        10 * (1 + LAM * 600) * 2.718 ** (LAM * boot) - 10, rel=0.1
    )


def test_without_reclaims_spot_saves_exactly_the_price_difference() -> None:
    calm = setup(time_to_interruption=lambda rng: float("inf"))
    on_demand = predict(calm, "on-demand", {}, samples=200).mean_cost_usd
    spot = predict(calm, "spot-only", {}, samples=200).mean_cost_usd
    assert spot / on_demand == pytest.approx(0.4, rel=0.01)


def test_a_deadline_run_meets_its_deadline_by_planning_for_the_worst_boot() -> None:
    on_demand = predict(setup(), "on-demand", {}, samples=400).mean_job_seconds
    deadline = predict(setup(deadline_seconds=1.5 * on_demand), "deadline", {}, samples=1000)
    assert deadline.deadline_met_share == 1.0 and deadline.job_range_seconds[1] <= 1.5 * on_demand
    spot_only = predict(setup(), "spot-only", {"max_spot_retries": 50}, samples=1000)
    assert spot_only.job_range_seconds[1] > 1.5 * on_demand  # spot alone would miss it in some runs
    costs = predict(setup(), "on-demand", {}, samples=200).mean_cost_usd, spot_only.mean_cost_usd
    assert costs[1] < deadline.mean_cost_usd < costs[0]  # it buys its deadline with some on-demand time


def test_the_boot_model_draws_within_its_bounds_and_averages_its_mean() -> None:
    model = BootModel({"spot": (Phase("a", 1, 2, 6), Phase("b", 10, 10, 10)), "on-demand": ()})
    rng = random.Random(1)
    draws = [model.draw("spot", rng) for _ in range(20_000)]
    assert min(draws) >= 11 and max(draws) <= model.worst("spot") == 16
    assert sum(draws) / len(draws) == pytest.approx(model.mean("spot"), rel=0.01)


def test_the_replacement_is_launched_at_the_warning_while_the_worker_drains() -> None:
    """One spot segment, one reclaim at 100 s into the machine's life, a fixed 10 s boot: the replacement
    launches at the notice (EventBridge), not after the drain, and resumes from the drained rows."""
    ten = (Phase("boot", 10.0, 10.0, 10.0),)
    fixed = BootModel({"spot": ten, "on-demand": ten})
    reclaims = iter([100.0, 10_000.0] * 2)  # two samples, the same run twice
    once = setup(
        segment_rows=(600,), boot=fixed, batch_size=64, time_to_interruption=lambda rng: next(reclaims)
    )
    run = predict(once, "spot-only", {"max_spot_retries": 5}, samples=2)
    # first machine: ready at 10, notice at 100 (90 rows done), its batch in hand ends at 10 + 128 = 138:
    # 128 rows kept. The replacement launches at 100, is ready at 110, does 472 rows: the job ends at 582
    assert run.mean_job_seconds == pytest.approx(582.0)
    assert run.mean_interruptions == 1.0


def test_the_coordinators_reaction_to_a_warning_delays_the_replacement_by_as_much() -> None:
    def first_attempt_warned() -> Callable[[random.Random], float]:
        draws = itertools.count()  # one segment: attempts alternate, warned at 100 s, then never
        return lambda rng: 100.0 if next(draws) % 2 == 0 else math.inf

    runs = []
    for reaction in (0.0, 30.0):
        one = setup(
            segment_rows=(SEGMENT_ROWS,),
            time_to_interruption=first_attempt_warned(),
            reaction_seconds=reaction,
        )
        runs.append(predict(one, "spot-only", {}, samples=50, seed=1))  # the same draws both times
    assert runs[0].mean_interruptions == runs[1].mean_interruptions == 1
    assert runs[1].mean_job_seconds - runs[0].mean_job_seconds == pytest.approx(30.0)
