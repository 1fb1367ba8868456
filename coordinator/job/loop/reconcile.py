"""After a restart: carry on from what the state says, against what EC2 lists.

A coordinator killed at any point and started again with the same job id calls `reconcile` before its first
cycle:

1. the budget: every open reservation of this job's attempts is settled: an attempt that ended is charged
   its recorded cost (it died before telling the guard; growth the spend watch added is settled at
   nothing), one the state never recorded launched nothing and is charged $0. Reservations of attempts
   still open stay until those end;
2. an open attempt without an instance id stopped around the launch call: the call is repeated with the
   same attempt id (the fleet adopts the instance if the first call did run: `Launcher.repeat`);
3. every other open attempt is watched again (`SegmentTable.adopt_after_restart`): the monitor decides from
   its heartbeat and instance state whether it still runs; one whose segment is already DONE or FAILED had
   its move made and its attempt not closed: it is ended now, as the loop would have;
4. a segment without an open attempt is made ready to launch again (`SegmentTable.resume_after_restart`).

Every step is idempotent: a coordinator killed during `reconcile` itself restarts into the same steps.

Usage::

    reconcile(table, launcher, book, guard, instances=fleet.job_instances(job_id), job_id=job_id)
"""

from __future__ import annotations

import logging

from coordinator.cost.budget import BudgetGuard
from coordinator.job.aws import InstanceInfo
from coordinator.job.loop.attempt_book import AttemptBook
from coordinator.job.loop.launcher import Launcher
from coordinator.job.loop.segment_table import SegmentTable

log = logging.getLogger("coordinator")


def reconcile(
    table: SegmentTable,
    launcher: Launcher,
    book: AttemptBook,
    guard: BudgetGuard,
    *,
    instances: dict[str, InstanceInfo],
    job_id: str,
) -> None:
    settle_reservations(table, book, guard, job_id=job_id)
    open_attempts = [a for a in table.attempts() if a.is_open]
    for attempt in open_attempts:
        if attempt.instance_id is None:
            launcher.repeat(attempt)
        else:
            table.adopt_after_restart(attempt, instances.get(attempt.instance_id))
    with_attempt = {a.segment_id for a in open_attempts}
    for row in table.segments():
        if row.segment_id not in with_attempt:
            table.resume_after_restart(row)


def settle_reservations(table: SegmentTable, book: AttemptBook, guard: BudgetGuard, *, job_id: str) -> None:
    """Step 1 of the module docstring."""
    prefix = f"{job_id}/"
    attempts = {a.attempt_id: a for a in table.attempts()}
    for label in guard.state().reservations:
        attempt_id, _, _market = label.rpartition(" ")
        if not attempt_id.startswith(prefix):
            continue
        attempt = attempts.get(attempt_id)
        if attempt is not None and attempt.is_open:
            continue  # still open: it is watched again and settled when it ends
        cost = float(attempt.cost_usd or 0.0) if attempt is not None else 0.0
        book.settle(label, cost)
        why = "ended before its cost was recorded" if attempt else "was authorized, never launched"
        log.info("budget: settled %s ($%.4f): the attempt %s", label, cost, why)
