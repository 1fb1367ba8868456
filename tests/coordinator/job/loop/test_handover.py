"""Acting on EC2's events for the job's attempts (the running cases run end to end in test_controller.py): a
rebalance recommendation for a booting attempt keeps it and sends the next launches to other pools; a
warning for it stops it and relaunches at once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.job.aws.event_queue import InstanceEvent
from coordinator.job.core.segment_states import SegmentState
from coordinator.job.loop.handover import Handover
from tests.coordinator.job.loop.live_loop import LiveLoop, live_loop


@pytest.fixture
def loop(tmp_path: Path) -> Iterator[LiveLoop]:
    """The live loop's parts (`live_loop.py`); seg-0000 launched on spot (i-1, us-east-1a) and booting."""
    loop = live_loop(tmp_path, replace_on_rebalance=True)
    loop.launch()
    yield loop
    loop.state.close()


def handover(loop: LiveLoop) -> Handover:
    return Handover(loop.table, loop.launcher, replace_on_rebalance=loop.spec.replace_on_rebalance)


def ended(loop: LiveLoop) -> list[tuple[str, str | None]]:
    return [(a.attempt_id, a.end_reason) for a in loop.table.attempts() if not a.is_open]


def event(kind: str, instance: str = "i-1") -> InstanceEvent:
    return InstanceEvent(kind, instance, "", 0.0, "r", "m")  # type: ignore[arg-type]


def test_a_rebalance_recommendation_keeps_a_booting_attempt_and_avoids_its_pool(loop: LiveLoop) -> None:
    handover(loop).act(event("rebalance"))
    assert loop.table.segment("seg-0000").state == SegmentState.LAUNCHING
    assert loop.table.active("seg-0000") is not None and ended(loop) == []
    assert loop.fleet.pools.order("seg-0000", "spot")[-1].zone == "us-east-1a"  # its pool last


def test_a_warning_for_a_booting_attempt_stops_it_and_relaunches_without_waiting_for_its_end(
    loop: LiveLoop,
) -> None:
    booting = loop.attempt()
    handover(loop).act(event("interruption-warning"))
    assert loop.fleet.terminated == [["i-1"]]  # asked, not confirmed: the replacement launches now
    assert loop.table.segment("seg-0000").state == SegmentState.INTERRUPTED
    assert loop.table.leaving("seg-0000") == booting and loop.table.active("seg-0000") is None
    assert ended(loop) == []  # closed once its instance is gone


def test_a_warning_while_an_earlier_warned_attempt_is_still_leaving_closes_that_one_first(
    loop: LiveLoop,
) -> None:
    handover(loop).act(event("interruption-warning"))  # i-1 warned while booting: leaving, not yet gone
    loop.launch()  # its replacement, i-2
    replacement = loop.attempt()
    assert replacement.instance_id == "i-2"
    handover(loop).act(event("interruption-warning", "i-2"))
    assert ended(loop) == [("j/seg-0000/1", "interrupted")]  # priced and recorded, not overwritten
    assert loop.table.leaving("seg-0000") == replacement and loop.fleet.terminated == [["i-1"], ["i-2"]]
    assert loop.fleet.confirmed == [["i-1"]]  # the earlier one's end confirmed before it was priced


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


def test_taking_the_queues_events_says_whether_a_segment_was_handed_over(loop: LiveLoop) -> None:
    looks: list[str] = []
    queue = Queue(event("rebalance"), event("interruption-warning"))
    assert handover(loop).take(queue, looks.append) is True  # type: ignore[arg-type]
    assert queue.watched == ["i-1"] and looks == ["i-1", "i-1"] and len(queue.done) == 2  # a look at each's
    assert handover(loop).take(Queue(event("interruption-warning")), lambda _: None) is False  # type: ignore[arg-type]
