"""Acting on EC2's events for attempts the book holds (the running cases run end to end in
test_controller.py): a rebalance recommendation for a booting attempt keeps it and sends the next launches
to other pools; a warning for it stops it and relaunches at once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.cost.budget import BudgetGuard
from coordinator.cost.pricing import PriceTable
from coordinator.job.attempts import AttemptBook, Tracked
from coordinator.job.clock import CloudClock
from coordinator.job.events import InstanceEvent
from coordinator.job.handover import Handover
from coordinator.job.monitor import ActiveAttempt, Monitor
from coordinator.job.pools import CapacityPools
from coordinator.job.spec import JobSpec
from coordinator.job.state import CoordinatorState
from coordinator.job.state_schema import SegmentState
from inference.storage import LocalStore

SUBNETS = {"us-east-1a": "subnet-a", "us-east-1b": "subnet-b"}


class Fleet:
    """EC2 as the handover and the book's ending use it: capacity pools, terminations asked and confirmed."""

    def __init__(self) -> None:
        self.pools = CapacityPools(SUBNETS, instance_types=["c7i.xlarge"])
        self.terminated: list[list[str]] = []  # asked, not waited for
        self.confirmed: list[list[str]] = []

    def terminate(self, instance_ids: list[str]) -> None:
        self.terminated.append(instance_ids)

    def terminate_and_confirm(self, instance_ids: list[str]) -> None:
        self.confirmed.append(instance_ids)


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
    """The real book on a state file, a local store and a budget guard of the test's own; EC2 a fake."""
    state = CoordinatorState(tmp_path / "state.db")
    state.create_job("j", config={}, segments=[("seg-0000", 0, 10)])
    state.set_launching("j", "seg-0000", market="spot", reason="initial launch")
    spec = JobSpec(
        job_id="j", input_key="x", rows=10, segments=1, policy="spot-only", replace_on_rebalance=True
    )
    fleet, store = Fleet(), LocalStore(tmp_path / "store")
    table = PriceTable.load()
    book = AttemptBook(
        spec=spec,
        state=state,
        fleet=fleet,  # type: ignore[arg-type]
        store=store,
        guard=BudgetGuard(1.0, tmp_path / "spend_log.jsonl"),
        quotes={m: table.quote("aws", "us-east-1", "c7i.xlarge", m) for m in ("spot", "on-demand")},
        clock=CloudClock(scale=1.0, origin=0.0),
        monitor=Monitor(store, fleet, "j", heartbeat_timeout=60, boot_timeout=600),  # type: ignore[arg-type]
    )
    book.adopt(spot_attempt(book, 1, "us-east-1a"), warned=False)  # booting
    yield book
    state.close()


def fleet(book: AttemptBook) -> Fleet:
    assert isinstance(book.fleet, Fleet)
    return book.fleet


def ended(book: AttemptBook) -> list[tuple[str, str | None]]:
    return [(a.attempt_id, a.end_reason) for a in book.state.attempts("j") if a.ended_at is not None]


def event(kind: str) -> InstanceEvent:
    return InstanceEvent(kind, "i-1", "", 0.0, "r", "m")  # type: ignore[arg-type]


def test_a_rebalance_recommendation_keeps_a_booting_attempt_and_avoids_its_pool(book: AttemptBook) -> None:
    Handover(book).act(event("rebalance"))
    assert book.state.segment("j", "seg-0000").state == SegmentState.LAUNCHING and "seg-0000" in book.active
    assert ended(book) == []
    assert fleet(book).pools.order("seg-0000", "spot")[-1].zone == "us-east-1a"  # its pool last


def test_a_warning_for_a_booting_attempt_stops_it_and_relaunches_without_waiting_for_its_end(
    book: AttemptBook,
) -> None:
    booting = book.active["seg-0000"]
    Handover(book).act(event("interruption-warning"))
    assert fleet(book).terminated == [["i-1"]]  # asked, not confirmed: the replacement launches now
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
    assert book.leaving == {"seg-0000": replacement} and fleet(book).terminated == [["i-1"], ["i-2"]]
    assert fleet(book).confirmed == [["i-1"]]  # the earlier one's end confirmed before it was priced


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
    assert handover.take(queue, lambda: looks.append("look")) is True  # type: ignore[arg-type]
    assert queue.watched == ["i-1"] and len(looks) == 2 and len(queue.done) == 2  # each asks for a look
    assert handover.take(Queue(event("interruption-warning")), lambda: None) is False  # type: ignore[arg-type]
