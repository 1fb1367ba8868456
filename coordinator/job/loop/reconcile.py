"""After a restart: carry on from what the state says, against what EC2 lists.

A coordinator killed at any point and started again with the same job id calls `reconcile(book)` before
its first cycle:

1. every open attempt (no end recorded) with an instance is adopted: the loop watches it again, and the
   monitor decides from its heartbeat and instance state whether it is still running; of two open attempts
   of one segment (a warned one and its replacement, `handover.py`) the older is adopted as leaving, and
   so is the open attempt of an INTERRUPTED segment (warned, its replacement not launched yet);
2. an open attempt without an instance id stopped around the launch call: the call is repeated with the
   same attempt id (the fleet adopts the instance if the first call did run);
3. a segment left LAUNCHING without an attempt goes to FAILED_LAUNCH; one left RUNNING, DRAINING or LOST
   after its attempt ended goes to INTERRUPTED, to resume from its checkpoint;
4. a segment already DONE (or FAILED) whose attempt is still open had its move made and its attempt not
   closed: the attempt is ended now (terminate, price, settle), as the loop would have;
5. the budget: every open reservation of this job's attempts is settled: an attempt that ended is charged
   its recorded cost (it died before telling the guard), one the state never recorded launched nothing
   and is charged $0. Reservations of attempts still open stay until those end.

Every step is idempotent: a coordinator killed during `reconcile` itself restarts into the same steps.
"""

from __future__ import annotations

import logging

from coordinator.job.core.segment_states import SegmentState
from coordinator.job.loop.attempt_book import AttemptBook, Tracked, attempt_label
from coordinator.job.loop.heartbeats import read_heartbeat
from coordinator.job.loop.monitor import ActiveAttempt, AttemptView, Verdict

log = logging.getLogger("coordinator")


def reconcile(book: AttemptBook) -> None:
    job = book.job_id
    settle_reservations(book)
    instances = book.fleet.job_instances(job)
    open_attempts = book.state.open_attempts(job)
    for attempt in open_attempts:
        row = book.state.segment(job, attempt.segment_id)
        label = attempt_label(attempt.attempt_id, attempt.market)
        if attempt.instance_id is None:  # stopped around the launch call: repeat it (adopts if it ran)
            log.info("%s: repeating the launch call of %s", row.segment_id, attempt.attempt_id)
            book.call_launch(row, attempt.attempt_id, attempt.market, label, repeat=True)
            continue
        clock, launched = book.clock, attempt.launched_at
        assert launched is not None, attempt  # written with its instance id, in one update
        launched_wall = clock.origin + (launched - clock.origin) / clock.scale
        active = ActiveAttempt(
            row.segment_id, attempt.attempt_id, attempt.instance_id, attempt.market, launched_wall
        )
        kind = attempt.instance_type
        tracked = Tracked(active, book.index[row.segment_id], launched, label, kind)
        warned = row.state == SegmentState.INTERRUPTED  # stopped before its replacement was launched
        book.adopt(tracked, warned=warned)
        if warned:
            continue
        info = instances.get(attempt.instance_id)
        listed = info.state if info else "not listed"
        log.info("%s: adopted %s (%s) after a restart", row.segment_id, attempt.instance_id, listed)
        if row.state.is_terminal:  # moved, not closed: close it, billed to the instance's own end
            beat = read_heartbeat(book.store, row.segment_id)
            beat = beat if beat is not None and beat.attempt == active.attempt_id else None
            reason: Verdict = "done" if row.state == SegmentState.DONE else "failed"
            view = AttemptView(
                active, reason, "restart: closing the attempt", info.state if info else None, beat
            )
            book.end(row.segment_id, reason, view)
    with_attempt = {a.segment_id for a in open_attempts}
    for row in book.state.segments(job):
        if row.segment_id in with_attempt:
            continue
        if row.state == SegmentState.LAUNCHING:
            book.state.set_failed_launch(
                job, row.segment_id, reason="restart: stopped before the launch call"
            )
        elif row.state in (SegmentState.RUNNING, SegmentState.DRAINING, SegmentState.LOST):
            if row.state == SegmentState.RUNNING:
                book.state.set_lost(job, row.segment_id, reason="restart: its attempt had ended")
            book.state.set_interrupted(job, row.segment_id, reason="restart: resuming from the checkpoint")


def settle_reservations(book: AttemptBook) -> None:
    """Step 5 of the module docstring."""
    prefix = f"{book.job_id}/"
    attempts = {a.attempt_id: a for a in book.state.attempts(book.job_id)}
    for label, reservations in book.guard.state().reservations.items():
        attempt_id, _, _market = label.rpartition(" ")
        if not attempt_id.startswith(prefix):
            continue
        attempt = attempts.get(attempt_id)
        if attempt is not None and attempt.ended_at is None:
            continue  # still open: it is adopted and settled when it ends
        cost = float(attempt.cost_usd or 0.0) if attempt is not None else 0.0
        for index, _ in enumerate(reservations):  # a second one of a label (an old double) costs nothing
            book.guard.record_actual(label, cost if index == 0 else 0.0)
        why = "ended before its cost was recorded" if attempt else "was authorized, never launched"
        log.info("budget: settled %s ($%.4f): the attempt %s", label, cost, why)
