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
finds the checkpoint complete and ends at once). A warning for an attempt still booting ends it at once:
there is nothing to drain. A state-change event needs nothing here: it wakes the loop, whose monitor sees
the instance gone in the same cycle. A rebalance recommendation is received and not acted on yet (starting
the replacement on it, before the warning, is a policy option still to be built and measured).

Usage::

    handover = Handover(book)
    handover.act(event)                 # an InstanceEvent of the job's instances
    handover.observe(view)              # a monitor view of a leaving attempt
"""

from __future__ import annotations

import logging

from coordinator.job import state as states
from coordinator.job.attempts import AttemptBook
from coordinator.job.events import InstanceEvent
from coordinator.job.monitor import AttemptView

log = logging.getLogger("coordinator")


class Handover:
    def __init__(self, book: AttemptBook) -> None:
        self.book = book

    def act(self, event: InstanceEvent) -> None:
        if event.kind != "interruption-warning":
            return
        book, job = self.book, self.book.job_id
        segment = next((s for s, t in book.active.items() if t.active.instance_id == event.instance_id), None)
        if segment is None or book.active[segment].active.market != "spot":
            return  # an attempt already ended or leaving, or not on spot
        current = book.state.segment(job, segment).state
        why = f"EC2 interruption warning for {event.instance_id} (EventBridge)"
        if current == states.RUNNING:
            book.state.set_draining(job, segment, reason=why)
            book.leaving[segment] = book.active.pop(segment)
            book.checkpointed.pop(segment, None)
            book.state.set_interrupted(
                job, segment, reason="warned: the replacement launches while it drains"
            )
        elif current == states.LAUNCHING:
            book.state.set_lost(job, segment, reason=f"{why} while it booted")
            book.end(segment, "interrupted", None)
            book.state.set_interrupted(job, segment, reason="warned while booting: relaunching")
        else:
            return
        log.info("%s: %s; replacing it now", segment, why)

    def observe(self, view: AttemptView) -> None:
        """A leaving attempt: ended once its worker has said its last word or its instance is gone."""
        if view.verdict in ("booting", "running"):
            return
        segment = view.attempt.segment_id
        tracked = self.book.leaving.pop(segment)
        self.book.checkpointed.pop(segment, None)  # its drain moved the checkpoint on: read it again
        self.book.close(tracked, "done" if view.verdict == "done" else "interrupted", view)

    def close_all(self, why: str) -> None:
        """At the end of the job or on a stop: every leaving attempt terminated and priced."""
        for segment in list(self.book.leaving):
            log.info("%s: closing its leaving attempt (%s)", segment, why)
            self.book.close(self.book.leaving.pop(segment), "interrupted", None)
