"""The what-if engine on traces small enough to work out by hand.

The hand-worked job: 1 hour of work, a 360-s changeover, 180-s ticks, spot 1 $/h, on-demand 3 $/h. A whole
spot run costs (3600 + 360) s x 1 $/h = $1.10, a whole on-demand run $3.30.
"""

from __future__ import annotations

import pytest

from coordinator.errors import WhatIfError
from coordinator.policies.deadline import DeadlineView
from coordinator.policies.registry import make_policy
from coordinator.whatif.engine import simulate_job
from coordinator.whatif.optimum import optimum_cost
from tests.coordinator.whatif.conftest import TICK, job, run


def test_always_available_costs_spot_only() -> None:
    trace = [True] * 60
    for policy in ("spot-only", "hybrid", "greedy", "safety-greedy", "uniform-progress", "deadline"):
        outcome = run(policy, trace)
        assert outcome.cost_usd == pytest.approx(1.10), policy
        assert (outcome.finish_seconds, outcome.deadline_met, outcome.interruptions) == (3960, True, 0), (
            policy
        )
    assert run("on-demand", trace).cost_usd == pytest.approx(3.30)
    assert optimum_cost(job(), trace, TICK) == pytest.approx(1.10)


def test_never_available_runs_on_demand_and_each_policy_waits_as_long_as_it_dares() -> None:
    trace = [False] * 60
    # slack with on-demand = 7200 - 3600 - 360 = 3240 s. greedy waits while a further tick leaves >= 0: starts
    # at 3240 and lands on the deadline; safety-greedy keeps a tick of margin (starts at 3060); `deadline`
    # keeps 1.5 h in reserve with all the work ahead, more than the slack, so it starts at once; hybrid's
    # spot launch fails at 0, and the recovery after that failed launch is on-demand at the next tick (180 s)
    expected_finish = {
        "greedy": 7200,
        "safety-greedy": 7020,
        "deadline": 3960,
        "hybrid": 4140,
        "on-demand": 3960,
    }
    for policy, finish in expected_finish.items():
        outcome = run(policy, trace)
        assert outcome.finish_seconds == finish and outcome.cost_usd == pytest.approx(3.30), policy
        assert outcome.deadline_met and outcome.spot_seconds == 0
    stuck = run("spot-only", trace)
    assert stuck.finish_seconds is None and not stuck.deadline_met and stuck.work_left_seconds == 3600
    assert run("uniform-progress", trace).deadline_met
    assert optimum_cost(job(), trace, TICK) == pytest.approx(3.30)


def test_one_reclaim_at_a_known_tick() -> None:
    # spot until tick 10 (1800 s), gone for one tick, back at tick 11 (1980 s). A first spot instance boots
    # until 360 and works 1440 s; it is billed 1800 s ($0.50). The rest is 2160 s of work.
    trace = [True] * 10 + [False] + [True] * 50
    expected = {
        # relaunch on spot at 1980: boot to 2340, work to 4500; 2520 s more spot ($0.70)
        "spot-only": (1.20, 4500, 2),
        "greedy": (1.20, 4500, 2),  # slack 2880 s at the reclaim: it waits a tick like spot-only
        "safety-greedy": (1.20, 4500, 2),
        # on-demand at 1800: boot to 2160, work to 4320; 2520 s x 3 $/h = $2.10
        "hybrid": (2.60, 4320, 2),
        # slack 2880 s is below its reserve (1.5 h x 2160/3600 of the work left = 3240 s): on-demand at
        # 1800 (180 s billed, $0.15); spot is back at 1980 and the slack pays both changeovers: spot again
        # from 1980 to 4500 ($0.70)
        "deadline": (1.35, 4500, 3),
    }
    for policy, (cost, finish, changeovers) in expected.items():
        outcome = run(policy, trace)
        assert outcome.cost_usd == pytest.approx(cost), policy
        assert (outcome.finish_seconds, outcome.changeovers, outcome.interruptions) == (
            finish,
            changeovers,
            1,
        ), policy
    # knowing the reclaim, the optimum waits for it and starts at 1980: one clean run, $1.10, done at 5940
    assert optimum_cost(job(), trace, TICK) == pytest.approx(1.10)


def test_work_since_the_last_checkpoint_is_lost_and_done_again() -> None:
    trace = [True] * 10 + [False] + [True] * 50
    outcome = run("spot-only", trace, job(checkpoint_seconds=600))
    # 1440 s done at the reclaim, 1200 checkpointed: 240 s redone, so 240 s later and 240 s more spot
    assert (outcome.redone_seconds, outcome.finish_seconds) == (240, 4740)
    assert outcome.cost_usd == pytest.approx(0.50 + 2760 / 3600)


def test_a_tight_deadline_forces_the_safety_net_and_greedy_misses() -> None:
    # deadline 4500: 540 s of slack. Spot exists only in ticks 2-4 (360-900 s). Greedy waits, takes it at
    # 360, boots until 720, works 180 s and is reclaimed at 900 with 3420 s left: on-demand from 900 ends at
    # 4680, past the deadline. The others see that the slack cannot pay a spot changeover and a reclaim.
    trace = [False, False, True, True, True] + [False] * 40
    tight = job(deadline=4500)
    greedy = run("greedy", trace, tight)
    assert (greedy.finish_seconds, greedy.deadline_met) == (4680, False)
    expected_finish = {"safety-greedy": 4320, "deadline": 3960, "uniform-progress": 3960}
    for policy, finish in expected_finish.items():
        outcome = run(policy, trace, tight)
        assert (outcome.finish_seconds, outcome.deadline_met, outcome.spot_seconds) == (finish, True, 0), (
            policy
        )
    # the blip is no use even knowing the future: 180 s of work for a 360-s changeover
    assert optimum_cost(tight, trace, TICK) == pytest.approx(3.30)


def test_several_instances_split_the_work_and_hybrid_keeps_its_on_demand_share() -> None:
    trace = [True] * 60
    four = job(instances=4, work_seconds=14_400)
    assert run("deadline", trace, four).cost_usd == pytest.approx(4 * 1.10)
    assert optimum_cost(four, trace, TICK) == pytest.approx(4 * 1.10)
    mixed = simulate_job(make_policy("hybrid", spot_share=0.75), four, trace, TICK)
    assert (mixed.spot_seconds, mixed.on_demand_seconds) == (3 * 3960, 3960)


def test_bad_jobs_and_policies_are_refused_by_name() -> None:
    with pytest.raises(WhatIfError, match="deadline_seconds=3000 is shorter than one segment on on-demand"):
        job(deadline=3000)
    with pytest.raises(WhatIfError, match="changeover_seconds must be >= 0, got -1"):
        job(changeover_seconds=-1)
    assert not hasattr(make_policy("deadline"), "launch")  # a deadline policy is only asked choose()
    view = DeadlineView(
        now_s=0, deadline_s=100, work_left_s=50, changeover_s=10, tick_s=5, spot_available=True, running=None
    )
    assert view.slack_s == 40
