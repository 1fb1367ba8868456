"""The what-if engine, the optimum and `spotbatch whatif`, on traces small enough to work out by hand.

The hand-worked job: 1 hour of work, a 360-s changeover, 180-s ticks, spot 1 $/h, on-demand 3 $/h. A whole
spot run costs (3600 + 360) s x 1 $/h = $1.10, a whole on-demand run $3.30.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from coordinator.errors import TraceError, WhatIfError
from coordinator.policies.deadline import DeadlineView
from coordinator.policies.registry import make_policy
from coordinator.whatif.engine import simulate_job
from coordinator.whatif.job import WhatIfJob
from coordinator.whatif.optimum import optimum_cost
from coordinator.whatif.study import DEFAULT_POLICIES, policy_for, run_study, summarise, trace_windows
from coordinator.whatif.traces import AvailabilityTrace, RunLengths, random_availability
from tests.conftest import FIXTURES

TICK = 180
TRACES = FIXTURES / "traces"


def job(deadline: int = 7200, **overrides: int) -> WhatIfJob:
    settings = {"work_seconds": 3600, "deadline_seconds": deadline, "changeover_seconds": 360, **overrides}
    return WhatIfJob(spot_usd_per_hour=1.0, on_demand_usd_per_hour=3.0, **settings)


def run(policy: str, trace: list[bool], the_job: WhatIfJob | None = None):  # type: ignore[no-untyped-def]
    return simulate_job(policy_for(policy), the_job or job(), trace, TICK)


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
    # keeps 1 h in reserve, more than the slack, so it starts at once; hybrid's spot launch fails at 0, and
    # the recovery after that failed launch is on-demand at the next tick (180 s)
    expected_finish = {
        "greedy": 7200,
        "safety-greedy": 7020,
        "deadline": 3960,
        "hybrid": 4140,
        "on-demand": 3960,
    }
    for policy, finish in expected_finish.items():
        outcome = run(policy, trace)
        assert (outcome.finish_seconds, outcome.cost_usd) == (finish, pytest.approx(3.30)), policy
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
        # slack 2880 s is below its 1 h reserve: on-demand at 1800 (180 s billed, $0.15); spot is back at
        # 1980 and the slack pays both changeovers: spot again from 1980 to 4500 ($0.70)
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


def test_traces_windows_and_run_lengths() -> None:
    trace = AvailabilityTrace.load(TRACES / "synthetic-zone.json")
    assert trace.gap_seconds == 195 and len(trace.available) == 400
    flipped = AvailabilityTrace.load(TRACES / "synthetic-zone.json", one_means="preempted")
    assert all(a != b for a, b in zip(trace.available, flipped.available, strict=True))
    runs = RunLengths.of(trace)
    assert min(runs.available) >= 5 and max(runs.unavailable) <= 20
    assert sum(runs.available) + sum(runs.unavailable) == 400
    assert len(runs.sample(1000, random.Random(1))) == 1000
    short = WhatIfJob(
        work_seconds=36_000,
        deadline_seconds=43_200,
        changeover_seconds=360,
        spot_usd_per_hour=1,
        on_demand_usd_per_hour=3,
    )
    with pytest.raises(
        WhatIfError, match=r"trace synthetic-zone: 21.7 h is too short for a deadline of 12 h"
    ):
        trace_windows(trace, short, 3, random.Random(0))
    with pytest.raises(TraceError, match="interruption probability must be in"):
        random_availability(1.5, 300, 195, 10, random.Random(0))
    shares = random_availability(0.3, 300, 300, 20_000, random.Random(3))
    assert 1 - sum(shares) / len(shares) == pytest.approx(0.3, abs=0.015)


def test_study_summary_orders_the_optimum_first_and_counts_deadlines() -> None:
    trace = AvailabilityTrace.load(TRACES / "synthetic-zone.json")
    small = WhatIfJob(
        work_seconds=3600,
        deadline_seconds=7200,
        changeover_seconds=360,
        spot_usd_per_hour=1,
        on_demand_usd_per_hour=3,
    )
    windows = trace_windows(trace, small, 10, random.Random(0))
    rows = summarise(run_study(DEFAULT_POLICIES, small, windows), small)
    assert [r.policy for r in rows] == ["optimum", *DEFAULT_POLICIES]
    by_name = {r.policy: r for r in rows}
    assert by_name["on-demand"].mean_vs_on_demand == pytest.approx(1.0)
    assert all(
        r.mean_vs_optimum >= 1.0 - 1e-9 for r in rows if r.deadlines_met == 1.0
    )  # spot-only may be late and cheaper
    assert by_name["deadline"].deadlines_met == 1.0 and by_name["deadline"].runs == 10


def spotbatch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coordinator", "whatif", *args], capture_output=True, text=True, timeout=120
    )


def test_whatif_cli_on_a_fixture_trace(tmp_path: Path) -> None:
    out = tmp_path / "runs.jsonl"
    result = spotbatch(
        "--trace",
        str(TRACES / "synthetic-zone.json"),
        "--work-hours",
        "1",
        "--deadline-hours",
        "2",
        "--runs",
        "5",
        "--json",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    assert "| optimum | 5 |" in result.stdout and "| deadline | 5 |" in result.stdout
    assert "spot 0.918 $/h, on-demand 3.06 $/h" in result.stdout  # the price table's p3.2xlarge
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 5 * (len(DEFAULT_POLICIES) + 1)
    assert all(line["optimum_usd"] <= line["cost_usd"] + 1e-9 for line in lines if line["deadline_met"])

    one = spotbatch(
        "--model",
        "random",
        "--rows",
        "36000",
        "--rows-per-s",
        "10",
        "--deadline-hours",
        "2",
        "--runs",
        "1",
        "--checkpoint-seconds",
        "600",
        "--spot-price",
        "1",
        "--on-demand-price",
        "3",
    )
    assert one.returncode == 0, one.stderr
    assert "one run (random 30%/300s #0):" in one.stdout and "rows redone" in one.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--trace", "missing.json", "--work-hours", "1", "--deadline-hours", "2"],
            "--trace missing.json: no such file or folder",
        ),
        (["--work-hours", "1", "--deadline-hours", "2"], "--model trace needs --trace FILE|FOLDER"),
        (["--model", "random", "--rows", "10", "--deadline-hours", "2"], "--rows needs --rows-per-s"),
        (
            ["--model", "random", "--work-hours", "3", "--deadline-hours", "2"],
            "deadline_seconds=7200 is shorter",
        ),
        (
            [
                "--model",
                "random",
                "--work-hours",
                "1",
                "--deadline-hours",
                "2",
                "--policies",
                "greedy,fastest",
            ],
            "unknown policy 'fastest'",
        ),
        (
            ["--model", "random", "--work-hours", "1", "--deadline-hours", "2", "--instance-type", "x9.huge"],
            "no spot price for aws x9.huge",
        ),
    ],
)
def test_whatif_cli_refuses_bad_input_by_name(args: list[str], message: str) -> None:
    result = spotbatch(*args)
    assert result.returncode == 2 and message in result.stderr, result.stderr
