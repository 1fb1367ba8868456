"""Acting on EC2's events at once: a warned spot attempt hands its segment over to a replacement.

Karpenter and EC2 Capacity Rebalancing launch the replacement when the warning comes, not when the old
instance is gone. On an interruption warning for a segment's running spot attempt, the segment moves
DRAINING -> INTERRUPTED at once, the attempt moves to the book's `leaving`, and the same cycle's launch
pass starts the replacement from the segment's checkpoint, on the market the policy picks (the warning
counts as the segment's interruption). The leaving worker drains as it would anyway (the metadata service
gives it the same notice): it finishes its batch, writes its checkpoint and heartbeats `draining`, within
seconds. The replacement's worker claims the checkpoint when it starts, a boot (a minute or more) later;
were it sooner, the fencing of `inference/segment_run.py` would stop the warned worker before it wrote
again (its last chunk redone, nothing written twice).

A leaving attempt ends when the monitor sees its final heartbeat or its instance gone: terminated, priced
and recorded as interrupted (or done, if it finished the segment within its notice: the replacement then
finds the checkpoint complete and ends at once). A warning for an attempt still booting stops its instance
at once (there is nothing to drain) and hands over the same way: the replacement does not wait for EC2 to
confirm the termination; the attempt is closed as interrupted once its instance is gone. The controller
runs its launch pass as soon as a segment is handed over, before it looks at the fleet (closing an attempt,
with its usage read, is most of the time from a warning to the replacement's launch). A rebalance
recommendation for a booting attempt only sends the next launches to other pools. A state-change event
needs nothing here: it wakes the loop, whose monitor sees the instance gone in the same cycle.

A rebalance recommendation (the instance's capacity is at elevated risk, often before any warning) is
acted on only with the job's `replace_on_rebalance`, as EC2 Capacity Rebalancing does: the same hand-over,
with the instance's pool (its type in its zone) tried last for spot, but the old worker is not stopped: it
works on while the replacement boots, until the replacement's first heartbeat (its claim of the checkpoint
fences the old worker's writes); then its instance is terminated, and its attempt ends as `switched` (left
on purpose, not reclaimed; `interrupted` if the reclaim came first).

Usage::

    handover = Handover(book)
    handover.take(events, look_again)   # the queue's events: True if a segment was handed over
    handover.act(event)                 # one InstanceEvent of the job's instances
    handover.observe(view)              # a monitor view of a leaving attempt
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from coordinator.errors import LaunchError
from coordinator.job.aws.event_queue import EventQueue, InstanceEvent
from coordinator.job.core.segment_states import SegmentState
from coordinator.job.loop.attempt_book import AttemptBook, Tracked
from coordinator.job.loop.monitor import SPOT_TERMINATION, AttemptView

log = logging.getLogger("coordinator")


class Handover:
    def __init__(self, book: AttemptBook) -> None:
        self.book = book
        self.rebalanced: dict[str, bool] = {}  # leaving attempt id -> its instance told to stop yet

    def take(self, events: EventQueue, look_again: Callable[[str], None]) -> bool:
        """Act on the events that came (after watching the book's active instances); whether any handed a
        segment over. `look_again`: each event asks for a look at the instance it names."""
        for tracked in self.book.active.values():
            events.watch(tracked.active.instance_id)
        handed_over = False
        for event in events.take():
            look_again(event.instance_id)
            handed_over |= self.act(event)
            events.handled(event)
        return handed_over

    def act(self, event: InstanceEvent) -> bool:
        """Whether the event handed a segment over (its replacement is for the launch pass to start)."""
        rebalance = event.kind == "rebalance"
        if not (event.kind == "interruption-warning" or (rebalance and self.book.spec.replace_on_rebalance)):
            return False
        book, job = self.book, self.book.job_id
        segment = next((s for s, t in book.active.items() if t.active.instance_id == event.instance_id), None)
        if segment is None or book.active[segment].active.market != "spot":
            return False  # an attempt already ended or leaving, or not on spot
        current = book.state.segment(job, segment).state
        what = "rebalance recommendation" if rebalance else "interruption warning"
        why = f"EC2 {what} for {event.instance_id} (EventBridge)"
        if rebalance:
            self._avoid_its_pool(book.active[segment])
        if rebalance and current == SegmentState.RUNNING:
            self.rebalanced[book.active[segment].active.attempt_id] = False
        if rebalance and current == SegmentState.LAUNCHING:
            log.info("%s: %s while it boots: kept (its pool is tried last from now)", segment, why)
            return False  # at risk, not reclaimed: the boot goes on; a warning, if one comes, replaces it
        if current == SegmentState.RUNNING:
            book.state.set_draining(job, segment, reason=why)
            self._leave(segment)
            book.state.set_interrupted(
                job, segment, reason="warned: the replacement launches while it drains"
            )
        elif current == SegmentState.LAUNCHING:  # nothing to drain: stopped now, closed once it is gone
            book.state.set_lost(job, segment, reason=f"{why} while it booted")
            self._leave(segment)
            book.fleet.terminate([event.instance_id])
            book.state.set_interrupted(job, segment, reason="warned while booting: relaunching")
        else:
            return False
        log.info("%s: %s; replacing it now", segment, why)
        return True

    def _leave(self, segment: str) -> None:
        """The segment's active attempt becomes its leaving one. One warned before and not yet closed (its
        replacement warned within moments) is closed first, not forgotten."""
        earlier = self.book.hand_over(segment)
        if earlier is not None:
            switched = self.rebalanced.pop(earlier.active.attempt_id, None) is not None
            self.book.close(earlier, "switched" if switched else "interrupted", None)

    def observe(self, view: AttemptView) -> None:
        """A leaving attempt: ended once its worker has said its last word or its instance is gone; a
        rebalanced one is stopped once its replacement has beaten."""
        attempt, segment = view.attempt, view.attempt.segment_id
        if view.verdict in ("booting", "running"):
            if self.rebalanced.get(attempt.attempt_id) is False and self._replacement_started(segment):
                self.rebalanced[attempt.attempt_id] = True
                self.book.fleet.terminate([attempt.instance_id])
                log.info("%s: replacement running; stopping %s (rebalanced)", segment, attempt.instance_id)
            return
        tracked = self.book.leave(segment)
        assert tracked is not None, segment  # observed because it was leaving
        reclaimed = view.state_reason == SPOT_TERMINATION
        switched = self.rebalanced.pop(attempt.attempt_id, None) is not None and not reclaimed
        reason = "done" if view.verdict == "done" else "switched" if switched else "interrupted"
        self.book.close(tracked, reason, view)

    def _avoid_its_pool(self, tracked: Tracked) -> None:
        instance_id = tracked.active.instance_id
        zone = tracked.zone  # known from its launch; not for an attempt adopted after a restart
        if not zone:
            try:
                info = self.book.fleet.instances([instance_id]).get(instance_id)
            except LaunchError as error:  # EC2 busy: the replacement may land in the same pool, no worse
                log.warning("zone of %s unknown (%s); not avoided", instance_id, error)
                return
            zone = info.zone if info is not None else ""
        if zone:
            self.book.fleet.pools.avoid("spot", tracked.instance_type, zone)

    def _replacement_started(self, segment: str) -> bool:
        tracked = self.book.active.get(segment)
        return (
            tracked is not None and self.book.monitor.latest_heartbeat(tracked.active.attempt_id) is not None
        )

    def close_all(self, why: str) -> None:
        """At the end of the job or on a stop: every leaving attempt terminated and priced."""
        for segment in list(self.book.leaving):
            log.info("%s: closing its leaving attempt (%s)", segment, why)
            tracked = self.book.leave(segment)
            if tracked is not None:
                self.book.close(tracked, "interrupted", None)
