"""Acting on EC2's events for attempts the book holds (the running cases run end to end in
test_controller.py): a rebalance recommendation for a booting attempt keeps it and sends the next launches
to other pools; a warning for it stops it and relaunches at once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.job.aws.event_queue import InstanceEvent
from coordinator.job.core.segment_states import SegmentState
from coordinator.job.loop.attempt_book import AttemptBook, Tracked
from coordinator.job.loop.handover import Handover
from coordinator.job.loop.monitor import ActiveAttempt
from tests.coordinator.job.loop.real_book import fake_fleet, real_book


def spot_attempt(book: AttemptBook, number: int, zone: str) -> Tracked:
    """seg-0000's attempt `number` on spot, instance i-<number>, launched at cloud second `number` - 1, as
    the state and the budget guard record a launch."""
    attempt_id, launched = f"j/seg-0000/{number}", float(number - 1)
    book.state.add_attempt(attempt_id, "j", "seg-0000", market="spot", instance_type="c7i.xlarge")
    book.state.attempt_launched(attempt_id, instance_id=f"i-{number}", launched_at=launched, instance_type="")
    book.guard.authorize_once(f"{attempt_id} spot", 0.01)
    active = ActiveAttempt("seg-0000", attempt_id, f"i-{number}", "spot", launched)
    return Tracked(active, 0, launched, f"{attempt_id} spot", "c7i.xlarge", zone)


@pytest.fixture
def book(tmp_path: Path) -> Iterator[AttemptBook]:
    """The real book (`real_book.py`); its segment launched on spot and booting."""
    book = real_book(tmp_path, replace_on_rebalance=True)
    book.state.set_launching("j", "seg-0000", market="spot", reason="initial launch")
    book.adopt(spot_attempt(book, 1, "us-east-1a"), warned=False)
    yield book
    book.state.close()


def ended(book: AttemptBook) -> list[tuple[str, str | None]]:
    return [(a.attempt_id, a.end_reason) for a in book.state.attempts("j") if a.ended_at is not None]


def event(kind: str) -> InstanceEvent:
    return InstanceEvent(kind, "i-1", "", 0.0, "r", "m")  # type: ignore[arg-type]


def test_a_rebalance_recommendation_keeps_a_booting_attempt_and_avoids_its_pool(book: AttemptBook) -> None:
    Handover(book).act(event("rebalance"))
    assert book.state.segment("j", "seg-0000").state == SegmentState.LAUNCHING and "seg-0000" in book.active
    assert ended(book) == []
    assert fake_fleet(book).pools.order("seg-0000", "spot")[-1].zone == "us-east-1a"  # its pool last


def test_a_warning_for_a_booting_attempt_stops_it_and_relaunches_without_waiting_for_its_end(
    book: AttemptBook,
) -> None:
    booting = book.active["seg-0000"]
    Handover(book).act(event("interruption-warning"))
    assert fake_fleet(book).terminated == [["i-1"]]  # asked, not confirmed: the replacement launches now
    assert book.state.segment("j", "seg-0000").state == SegmentState.INTERRUPTED
    assert book.leaving == {"seg-0000": booting} and book.active == {}  # closed once its instance is gone
    assert ended(book) == []


def test_a_warning_while_an_earlier_warned_attempt_is_still_leaving_closes_that_one_first(
    book: AttemptBook,
) -> None:
    handover = Handover(book)
    handover.act(event("interruption-warning"))  # i-1 warned while booting: leaving, not yet gone
    book.state.set_launching("j", "seg-0000", market="spot", reason="interrupted: spot again")
    replacement = spot_attempt(book, 2, "us-east-1b")
    book.adopt(replacement, warned=False)
    handover.act(InstanceEvent("interruption-warning", "i-2", "", 0.0, "r", "m"))
    assert ended(book) == [("j/seg-0000/1", "interrupted")]  # priced and recorded, not overwritten
    assert book.leaving == {"seg-0000": replacement} and fake_fleet(book).terminated == [["i-1"], ["i-2"]]
    assert fake_fleet(book).confirmed == [["i-1"]]  # the earlier one's end confirmed before it was priced


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


def test_taking_the_queues_events_says_whether_a_segment_was_handed_over(book: AttemptBook) -> None:
    looks: list[str] = []
    queue = Queue(event("rebalance"), event("interruption-warning"))
    handover = Handover(book)
    assert handover.take(queue, looks.append) is True  # type: ignore[arg-type]
    assert queue.watched == ["i-1"] and looks == ["i-1", "i-1"] and len(queue.done) == 2  # a look at each's
    assert handover.take(Queue(event("interruption-warning")), lambda _: None) is False  # type: ignore[arg-type]
