"""Recovery policies: the registry, first launches and recovery decisions."""

from __future__ import annotations

import dataclasses

import pytest

from coordinator.errors import ConfigError, UnknownPolicy
from coordinator.policies.base import SegmentHistory
from coordinator.policies.deadline import DeadlineAware, DeadlineView
from coordinator.policies.recovery import RecoveryPolicy
from coordinator.policies.registry import make_policy, policy_names


def recovery(name: str, **options: float) -> RecoveryPolicy:
    policy = make_policy(name, **options)
    assert isinstance(policy, RecoveryPolicy)
    return policy


def test_registry_lists_the_policies_and_refuses_unknown_names() -> None:
    assert {"on-demand", "spot-only", "hybrid"} <= set(policy_names())
    with pytest.raises(
        UnknownPolicy,
        match=r"unknown policy .spot-mostly.; valid: deadline, greedy, hybrid, on-demand, safety-greedy, "
        r"spot-only, uniform-progress",
    ):
        make_policy("spot-mostly")


@pytest.mark.parametrize(
    ("share", "count", "on_demand"),
    [(0.9, 10, [9]), (0.9, 20, [9, 19]), (0.75, 8, [3, 7]), (1.0, 5, []), (0.0, 3, [0, 1, 2])],
)
def test_hybrid_spreads_its_on_demand_share_evenly(share: float, count: int, on_demand: list[int]) -> None:
    policy = recovery("hybrid", spot_share=share)
    markets = [policy.launch(i, count) for i in range(count)]
    assert [i for i, m in enumerate(markets) if m == "on-demand"] == on_demand


def test_hybrid_falls_back_to_on_demand_after_an_interruption() -> None:
    decision = recovery("hybrid").recover(SegmentHistory(spot_interruptions=1), "interrupted")
    assert decision.market == "on-demand" and "on-demand from the checkpoint" in decision.reason
    with_retry = recovery("hybrid", max_spot_retries=1)
    assert with_retry.recover(SegmentHistory(spot_interruptions=1), "interrupted").market == "spot"
    assert with_retry.recover(SegmentHistory(spot_interruptions=2), "interrupted").market == "on-demand"


def test_spot_only_relaunches_spot_then_gives_up() -> None:
    policy = recovery("spot-only", max_spot_retries=2)
    assert policy.launch(0, 4) == "spot"
    assert policy.recover(SegmentHistory(spot_interruptions=2), "interrupted").market == "spot"
    final = policy.recover(SegmentHistory(spot_interruptions=2, spot_launch_failures=1), "failed-launch")
    assert final.give_up and "past max_spot_retries=2" in final.reason


def test_on_demand_retries_capacity_errors_a_few_times() -> None:
    policy = recovery("on-demand")
    assert policy.launch(3, 4) == "on-demand"
    assert policy.recover(SegmentHistory(on_demand_launch_failures=2), "failed-launch").market == "on-demand"
    assert policy.recover(SegmentHistory(on_demand_launch_failures=3), "failed-launch").give_up


def test_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="spot_share must be between 0 and 1"):
        make_policy("hybrid", spot_share=1.5)


def test_an_option_a_policy_does_not_take_is_named() -> None:
    with pytest.raises(UnknownPolicy, match=r"policy 'greedy' does not take the options \['spot_share'\]"):
        make_policy("greedy", spot_share=0.5)
    policy = make_policy("deadline", reserve_hours=0.5)
    assert isinstance(policy, DeadlineAware) and policy.reserve_s == 1800


def test_the_deadline_reserve_shrinks_with_the_work_left() -> None:
    """With all of a segment's work ahead the policy keeps its whole reserve for later returns to spot; with
    half of it done, half: an outage it met with 2,500 s of slack sends it to on-demand at the start and is
    waited out halfway."""
    policy = make_policy("deadline", reserve_hours=1.0)
    assert isinstance(policy, DeadlineAware)

    def outage(work_left_s: float) -> DeadlineView:
        now = 10_000 - work_left_s
        deadline = now + work_left_s + 360 + 2_500  # slack 2,500 s
        return DeadlineView(
            now_s=now,
            deadline_s=deadline,
            work_left_s=work_left_s,
            changeover_s=360,
            tick_s=60,
            spot_available=False,
            running=None,
            total_work_s=10_000,
        )

    start, halfway, last_bit = outage(10_000), outage(5_000), outage(100)
    assert [policy.reserve_for(v) for v in (start, halfway, last_bit)] == [3_600, 1_800, 36]
    assert policy.choose(start) == "on-demand"
    assert policy.choose(halfway) is None
    assert policy.choose(last_bit) is None
    no_slack = dataclasses.replace(last_bit, deadline_s=last_bit.deadline_s - 2_460)  # 40 s left
    assert policy.choose(no_slack) == "on-demand"


@pytest.mark.parametrize("name", ["on-demand", "spot-only", "hybrid"])
def test_a_crashed_worker_is_not_an_interruption_and_twice_is_the_end(name: str) -> None:
    policy = recovery(name, max_spot_retries=0) if name != "on-demand" else recovery(name)
    once = policy.recover(SegmentHistory(worker_crashes=1, last_market="spot"), "interrupted")
    assert once.market == ("on-demand" if name == "on-demand" else "spot")  # a crash spends no spot retry
    twice = policy.recover(SegmentHistory(worker_crashes=2, last_market="spot"), "interrupted")
    assert twice.market is None and "crashed 2 times" in twice.reason
