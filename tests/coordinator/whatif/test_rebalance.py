"""Starting the replacement on a rebalance recommendation: hand-worked on 180-s ticks, 1 h of work, spot
$1/h, on-demand $3/h."""

from __future__ import annotations

import pytest

from coordinator.errors import WhatIfError
from coordinator.whatif.engine import simulate_job
from coordinator.whatif.study import policy_for
from coordinator.whatif.zones import ZoneSet
from tests.coordinator.whatif.conftest import TICK, job, run

UP, DOWN = True, False
ZONE_A = [UP] * 5 + [DOWN] * 30 + [UP] * 30  # reclaimed at 900 s
ZONE_B = [DOWN] * 2 + [UP] * 63


def test_hybrid_boots_its_on_demand_replacement_while_spot_still_works() -> None:
    before = run("hybrid", ZONE_A)  # reclaimed at 900 s (540 s done), on-demand boots 360 s, 3,060 s more
    assert (before.finish_seconds, before.interruptions) == (4_320, 1)
    early = run("hybrid", ZONE_A, job(rebalance_lead_seconds=120))  # told at 780 s
    # the replacement boots from 780 s; spot works on to its reclaim at 900 s; 240 s of boot are left
    assert (early.finish_seconds, early.interruptions, early.changeovers) == (4_200, 1, 2)
    assert early.on_demand_seconds == before.on_demand_seconds == 3_420 and early.spot_seconds == 900
    assert early.cost_usd == pytest.approx(before.cost_usd)  # the same seconds, 120 s sooner


def test_a_replacement_ready_before_the_reclaim_takes_over_and_the_old_one_drains() -> None:
    the_job = job(changeover_seconds=120, rebalance_lead_seconds=180)
    before = run("hybrid", ZONE_A, job(changeover_seconds=120))
    assert before.finish_seconds == 3_840 and before.cost_usd == pytest.approx(0.25 + 2_940 * 3 / 3_600)
    early = run("hybrid", ZONE_A, the_job)  # told at 720 s, ready at 840 s: spot leaves then
    assert (early.finish_seconds, early.spot_seconds, early.on_demand_seconds) == (3_720, 840, 3_000)
    assert early.cost_usd == pytest.approx(840 / 3_600 + 3_000 * 3 / 3_600) and early.redone_seconds == 0


def test_spot_only_starts_its_replacement_in_another_zone() -> None:
    zones = ZoneSet.of({"a": ZONE_A, "b": ZONE_B})
    outcome = simulate_job(policy_for("spot-only"), job(rebalance_lead_seconds=120), zones, TICK)
    assert (outcome.finish_seconds, outcome.spot_seconds, outcome.on_demand_seconds) == (4_200, 4_320, 0)
    alone = run("spot-only", ZONE_A, job(rebalance_lead_seconds=120))  # no other zone: it waits, as before
    assert alone == run("spot-only", ZONE_A)


def test_a_lead_longer_than_a_tick_is_refused() -> None:
    with pytest.raises(WhatIfError, match=r"rebalance_lead_seconds=200 is longer than a tick \(180 s\)"):
        run("hybrid", ZONE_A, job(rebalance_lead_seconds=200))
