"""A cycle's launches made together: the calls in flight at once, every answer recorded in plan order, a
refusal of the account raised only once every other answer is recorded."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from coordinator.errors import CapacityError, PermissionDenied
from coordinator.job.aws.capacity_pools import Placement
from coordinator.job.core.segment_states import SegmentState
from coordinator.job.core.tables import SegmentRow
from coordinator.job.core.worker_contract import LaunchRequest
from coordinator.job.loop.launcher import Outcome, PlannedLaunch, launching_together


class FakeFleet:
    def __init__(self, together: int, answers: dict[str, Outcome]) -> None:
        self.barrier = threading.Barrier(together, timeout=10)  # broken unless `together` calls overlap
        self.answers = answers

    def launch_placed(self, request: LaunchRequest, *, repeat: bool = False) -> Placement:
        self.barrier.wait()
        answer = self.answers.get(request.segment_id, Placement(f"i-{request.segment_id}", "", ""))
        if isinstance(answer, Exception):
            raise answer
        assert isinstance(answer, Placement)
        return answer


class FakeBook:
    def __init__(self, fleet: Any) -> None:
        self.fleet = fleet
        self.batch: list[PlannedLaunch] | None = None
        self.settled: list[tuple[str, str]] = []

    def hold_launches(self) -> None:
        self.batch = []

    def release_launches(self) -> list[PlannedLaunch]:
        planned, self.batch = self.batch or [], None
        return planned

    def launch(self, segment: str) -> None:
        assert self.batch is not None, "inside launching_together a launch is only planned"
        row = SegmentRow("j", segment, 0, 10, SegmentState.PENDING, None, 0)
        self.batch.append(PlannedLaunch(row, f"j/{segment}/1", "spot", f"j/{segment}/1 spot"))

    def request(self, planned: PlannedLaunch) -> LaunchRequest:
        return LaunchRequest(
            job_id="j",
            segment_id=planned.row.segment_id,
            attempt_id=planned.attempt_id,
            market=planned.market,
            start=0,
            stop=10,
            input_key="data/x",
        )

    def settle(self, planned: PlannedLaunch, outcome: Outcome) -> None:
        self.settled.append(
            (
                planned.row.segment_id,
                outcome.instance_id if isinstance(outcome, Placement) else type(outcome).__name__,
            )
        )
        if isinstance(outcome, PermissionDenied):
            raise outcome


def test_the_calls_are_in_flight_together_and_recorded_in_plan_order() -> None:
    segments = [f"seg-{n}" for n in range(4)]
    book = FakeBook(FakeFleet(4, {"seg-2": CapacityError("no spot capacity", [])}))
    with launching_together(book, launchers=4):
        for segment in segments:
            book.launch(segment)
        assert book.settled == []  # nothing called until the pass is over
    assert book.settled == [
        ("seg-0", "i-seg-0"),
        ("seg-1", "i-seg-1"),
        ("seg-2", "CapacityError"),
        ("seg-3", "i-seg-3"),
    ]
    assert book.batch is None


def test_a_refusal_of_the_account_is_raised_after_every_answer_is_recorded() -> None:
    refused = PermissionDenied("ec2:RunInstances denied", "ec2:RunInstances")
    book = FakeBook(FakeFleet(3, {"seg-0": refused}))
    with pytest.raises(PermissionDenied), launching_together(book, launchers=3):
        for n in range(3):
            book.launch(f"seg-{n}")
    assert [segment for segment, _ in book.settled] == ["seg-0", "seg-1", "seg-2"]
