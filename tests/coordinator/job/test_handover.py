"""Acting on EC2's events for attempts the book holds (the running cases run end to end in
test_controller.py): a rebalance recommendation for a booting attempt keeps it and sends the next launches
to other pools; a warning for it stops it and relaunches at once."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from coordinator.job.events import InstanceEvent
from coordinator.job.handover import Handover
from coordinator.job.monitor import ActiveAttempt
from coordinator.job.pools import CapacityPools
from coordinator.job.state import CoordinatorState, SegmentState
from coordinator.job.tracked import Tracked

SUBNETS = {"us-east-1a": "subnet-a", "us-east-1b": "subnet-b"}


def spot_attempt(number: int, zone: str) -> Tracked:
    """seg-0000's attempt `number` on spot, instance i-<number>, launched at cloud second `number` - 1."""
    attempt_id = f"j/seg-0000/{number}"
    launched = float(number - 1)
    active = ActiveAttempt("seg-0000", attempt_id, f"i-{number}", "spot", launched)
    return Tracked(active, 0, launched, f"{attempt_id} spot", "c7i.xlarge", zone)


@pytest.fixture
def book(tmp_path: Path) -> Any:
    state = CoordinatorState(tmp_path / "state.db")
    state.create_job("j", config={}, segments=[("seg-0000", 0, 10)])
    state.set_launching("j", "seg-0000", market="spot", reason="initial launch")
    booting = spot_attempt(1, "us-east-1a")
    ended: list[tuple[str, str]] = []
    terminated: list[list[str]] = []
    book = SimpleNamespace(
        job_id="j",
        spec=SimpleNamespace(replace_on_rebalance=True),
        state=state,
        active={"seg-0000": booting},
        leaving={},
        checkpointed={},
        fleet=SimpleNamespace(
            pools=CapacityPools(SUBNETS, instance_types=["c7i.xlarge"]),
            terminated=terminated,
            terminate=terminated.append,
        ),
        ended=ended,
        end=lambda segment, reason, view: ended.append((segment, reason)),
        close=lambda tracked, reason, view: ended.append((tracked.active.attempt_id, reason)),
    )
    yield book
    state.close()


def event(kind: str) -> InstanceEvent:
    return InstanceEvent(kind, "i-1", "", 0.0, "r", "m")  # type: ignore[arg-type]


def test_a_rebalance_recommendation_keeps_a_booting_attempt_and_avoids_its_pool(book: Any) -> None:
    Handover(book).act(event("rebalance"))
    assert book.state.segment("j", "seg-0000").state == SegmentState.LAUNCHING and "seg-0000" in book.active
    assert book.ended == []
    assert book.fleet.pools.order("seg-0000", "spot")[-1].zone == "us-east-1a"  # its pool last


def test_a_warning_for_a_booting_attempt_stops_it_and_relaunches_without_waiting_for_its_end(
    book: Any,
) -> None:
    booting = book.active["seg-0000"]
    Handover(book).act(event("interruption-warning"))
    assert book.fleet.terminated == [["i-1"]]  # asked, not confirmed: the replacement launches now
    assert book.state.segment("j", "seg-0000").state == SegmentState.INTERRUPTED
    assert book.leaving == {"seg-0000": booting} and book.active == {}  # closed once its instance is gone
    assert book.ended == []


def test_a_warning_while_an_earlier_warned_attempt_is_still_leaving_closes_that_one_first(book: Any) -> None:
    handover = Handover(book)
    handover.act(event("interruption-warning"))  # i-1 warned while booting: leaving, not yet gone
    replacement = spot_attempt(2, "us-east-1b")
    book.active["seg-0000"] = replacement
    book.state.set_launching("j", "seg-0000", market="spot", reason="interrupted: spot again")
    handover.act(InstanceEvent("interruption-warning", "i-2", "", 0.0, "r", "m"))
    assert book.ended == [("j/seg-0000/1", "interrupted")]  # priced and recorded, not overwritten
    assert book.leaving == {"seg-0000": replacement} and book.fleet.terminated == [["i-1"], ["i-2"]]


class Queue:
    """The events queue as the handover uses it: what it was told to watch, what came, what was handled."""

    def __init__(self, *pending: InstanceEvent) -> None:
        self.pending, self.watched, self.done = list(pending), list[str](), list[InstanceEvent]()

    def watch(self, instance_id: str) -> None:
        self.watched.append(instance_id)

    def take(self) -> list[InstanceEvent]:
        taken, self.pending = self.pending, []
        return taken

    def handled(self, event: InstanceEvent) -> None:
        self.done.append(event)


def test_taking_the_queues_events_says_whether_a_segment_was_handed_over(book: Any) -> None:
    looks: list[str] = []
    queue = Queue(event("rebalance"), event("interruption-warning"))
    handover = Handover(book)
    assert handover.take(queue, lambda: looks.append("look")) is True  # type: ignore[arg-type]
    assert queue.watched == ["i-1"] and len(looks) == 2 and len(queue.done) == 2  # each asks for a look
    assert handover.take(Queue(event("interruption-warning")), lambda: None) is False  # type: ignore[arg-type]
