"""Failover between the zones of a region: a spot instance goes with its own zone, its replacement lands in
a zone that has capacity; one zone is exactly the plain availability sequence."""

from __future__ import annotations

import random

import pytest

from coordinator.errors import WhatIfError
from coordinator.whatif.engine import simulate_job
from coordinator.whatif.optimum import optimum_cost
from coordinator.whatif.study import DEFAULT_POLICIES, policy_for
from coordinator.whatif.traces import random_availability
from coordinator.whatif.zones import ZoneSet
from tests.coordinator.whatif.conftest import TICK, job, run

UP, DOWN = True, False


def test_a_reclaim_in_one_zone_relaunches_in_the_next_at_once() -> None:
    zone_a = [UP] * 5 + [DOWN] * 30 + [UP] * 30  # reclaimed at 900 s, back at 6,300 s
    zone_b = [DOWN] * 2 + [UP] * 63  # no capacity at the start: the first launch lands in zone a
    both = simulate_job(policy_for("spot-only"), job(), ZoneSet.of({"a": zone_a, "b": zone_b}), TICK)
    # 900 s in a (360 boot, 540 work), reclaimed; at once in b: 360 boot and the other 3,060 s of work
    assert (both.finish_seconds, both.interruptions, both.changeovers) == (4_320, 1, 2)
    assert both.cost_usd == pytest.approx((900 + 3_420) / 3_600 * 1.0)
    alone = run("spot-only", zone_a)  # one zone: it waits out the 30 ticks of the outage
    assert alone.finish_seconds == 6_300 + 360 + 3_060 and not alone.deadline_met and both.deadline_met


def test_one_zone_in_a_set_is_the_plain_sequence_for_every_policy() -> None:
    available = list(random_availability(0.3, 300, TICK, 120, random.Random(4)))
    for name in DEFAULT_POLICIES:
        plain = run(name, available)
        assert simulate_job(policy_for(name), job(), ZoneSet.of({"only": available}), TICK) == plain, name


def test_zones_over_different_ticks_are_refused_by_name() -> None:
    with pytest.raises(WhatIfError, match=r"same ticks.*'a': 3.*'b': 2"):
        ZoneSet.of({"a": [UP] * 3, "b": [UP] * 2})
    with pytest.raises(WhatIfError, match="at least one zone"):
        ZoneSet.of({})


def test_a_launch_takes_the_steadiest_zone_or_by_name_the_first() -> None:
    flaky = [UP, DOWN] * 40  # the zone the name order puts first
    steady = [UP] * 80
    history = {"a": [UP, DOWN] * 60, "b": [UP] * 120}  # the six hours before the window say as much
    window = {"a": flaky, "b": steady}
    steadiest = ZoneSet.of(window, history=history)
    first = ZoneSet.of(window, history=history, choice="first")
    assert (steadiest.pick(0), first.pick(0)) == (1, 0)
    assert steadiest.pick(0, unless=steady) == 0 and steadiest.pick(1, unless=steady) is None
    calm = simulate_job(policy_for("spot-only"), job(), steadiest, TICK)
    tossed = simulate_job(policy_for("spot-only"), job(), first, TICK)
    assert calm.interruptions == 0 and tossed.interruptions >= 1 and calm.cost_usd < tossed.cost_usd
    # without history the first launch has nothing to go on (a tie, the order decides); later ones learn
    learning = ZoneSet.of(window)
    assert learning.pick(0) == 0 and learning.pick(2) == 1
    with pytest.raises(WhatIfError, match="zone choice 'random'"):
        ZoneSet.of(window, choice="random")


def test_the_failover_optimum_bounds_failover_and_every_zone_alone() -> None:
    rng = random.Random(9)
    moved = 0  # cases where moving between zones beats the best zone held throughout
    for case in range(12):
        columns = {
            name: list(random_availability(rng.choice([0.3, 0.6]), 600, TICK, 120, rng)) for name in "abc"
        }
        the_job = job(deadline=rng.choice([5400, 7200, 10800]))
        best = optimum_cost(the_job, ZoneSet.of(columns), TICK)
        alone = min(optimum_cost(the_job, column, TICK) for column in columns.values())
        assert best <= alone + 1e-9
        moved += best < alone - 1e-9
        for choice in ("steadiest", "first"):
            for name in DEFAULT_POLICIES:
                outcome = simulate_job(policy_for(name), the_job, ZoneSet.of(columns, choice=choice), TICK)
                if outcome.deadline_met:
                    assert best <= outcome.cost_usd + 1e-9, (case, choice, name, best, outcome)
    assert moved >= 2
    one = list(random_availability(0.5, 600, TICK, 120, random.Random(2)))
    assert optimum_cost(job(), ZoneSet.of({"only": one}), TICK) == optimum_cost(job(), one, TICK)
