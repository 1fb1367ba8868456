"""A cycle's launches made together: the calls in flight at once, every answer recorded in plan order, a
refusal of the account raised only once every other answer is recorded."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from coordinator.errors import AwsSetupError, CapacityError, LaunchError, PermissionDenied
from coordinator.job.aws.capacity_pools import Placement
from coordinator.job.core.segment_states import SegmentState
from coordinator.job.core.worker_contract import LaunchRequest
from coordinator.job.loop.monitor import AttemptView
from tests.coordinator.job.loop.live_loop import FakeFleet, live_loop
from tests.host_load import scaled

Answer = Placement | LaunchError | AwsSetupError


class TogetherFleet(FakeFleet):
    """Answers a launch only once `together` calls are in flight (its barrier breaks otherwise)."""

    def __init__(self, together: int, answers: dict[str, Answer]) -> None:
        super().__init__()
        self.barrier = threading.Barrier(together, timeout=scaled(10))
        self.answers = answers
        self.calls = 0

    def launch_placed(self, request: LaunchRequest, *, repeat: bool = False) -> Placement:
        self.calls += 1
        self.barrier.wait()
        answer = self.answers.get(request.segment_id, Placement(f"i-{request.segment_id}", "", "us-east-1a"))
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_the_calls_are_in_flight_together_and_recorded_in_plan_order(tmp_path: Path) -> None:
    fleet = TogetherFleet(4, {"seg-0002": CapacityError("no spot capacity", [])})
    loop = live_loop(tmp_path, segments=4, policy="spot-only", fleet=fleet)
    with loop.launcher.together(launchers=4):
        loop.policy_pass().run()
        assert fleet.calls == 0  # nothing called until the pass is over
    assert [(a.segment_id, a.instance_id, a.end_reason) for a in loop.table.attempts()] == [
        ("seg-0000", "i-seg-0000", None),
        ("seg-0001", "i-seg-0001", None),
        ("seg-0002", None, "failed-launch"),
        ("seg-0003", "i-seg-0003", None),
    ]
    assert loop.table.segment("seg-0002").state == SegmentState.FAILED_LAUNCH
    assert loop.launcher.backing_off("seg-0002") and not loop.launcher.spot_available()


def test_a_refusal_of_the_account_is_raised_after_every_answer_is_recorded(tmp_path: Path) -> None:
    refused = PermissionDenied("ec2:RunInstances denied", "ec2:RunInstances")
    fleet = TogetherFleet(3, {"seg-0000": refused})
    loop = live_loop(tmp_path, segments=3, policy="spot-only", fleet=fleet)
    with pytest.raises(PermissionDenied), loop.launcher.together(launchers=3):
        loop.policy_pass().run()
    assert [a.instance_id for a in loop.table.attempts()] == [None, "i-seg-0001", "i-seg-0002"]
    failed = loop.table.segment("seg-0000")
    assert failed.state == SegmentState.FAILED and "ec2:RunInstances denied" in failed.failure
    assert [a.segment_id for a in loop.table.active_attempts()] == ["seg-0001", "seg-0002"]  # watched


def test_a_job_capped_at_two_instances_runs_two_at_once_and_the_rest_wait_their_turn(tmp_path: Path) -> None:
    """Nothing capped a job's instances: a plan of 10**9 segments was 2,000 launch attempts at once."""
    loop = live_loop(tmp_path, segments=3, policy="on-demand", max_instances=2)
    loop.launch()
    assert len(loop.fleet.launched) == 2
    loop.launch()
    assert len(loop.fleet.launched) == 2  # still two open: the third waits
    ended = loop.attempt("seg-0000")
    loop.table.lose(AttemptView(ended, "lost", "gone", "terminated", None))  # one closes: a turn is free
    loop.launch()
    assert len(loop.fleet.launched) == 3 and len(loop.table.watched()) == 2
