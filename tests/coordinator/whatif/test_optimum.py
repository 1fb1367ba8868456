"""The omniscient optimum is a lower bound: never above any policy that meets the deadline."""

from __future__ import annotations

import random

from coordinator.whatif.optimum import optimum_cost
from coordinator.whatif.study import DEFAULT_POLICIES
from coordinator.whatif.traces import random_availability
from tests.coordinator.whatif.conftest import TICK, job, run


def test_the_optimum_is_never_above_any_policy() -> None:
    rng = random.Random(5)
    policies = [*DEFAULT_POLICIES]
    for case in range(40):
        trace = (
            list(random_availability(0.5, 900, TICK, 120, rng))
            if case % 2
            else [rng.random() < 0.7 for _ in range(120)]
        )
        the_job = job(deadline=rng.choice([4500, 5400, 7200, 10800]), checkpoint_seconds=rng.choice([0, 600]))
        best = optimum_cost(the_job, trace, TICK)
        for policy in policies:
            outcome = run(policy, trace, the_job)
            if outcome.deadline_met:
                assert best <= outcome.cost_usd + 1e-9, (case, policy, best, outcome)
