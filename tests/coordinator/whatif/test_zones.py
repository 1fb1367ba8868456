"""Failover between the zones of a region: a spot instance goes with its own zone, its replacement lands in
a zone that has capacity; one zone is exactly the plain availability sequence."""

from __future__ import annotations

import random

import pytest

from coordinator.errors import WhatIfError
from coordinator.whatif.engine import simulate_job
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
