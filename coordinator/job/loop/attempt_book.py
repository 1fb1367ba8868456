"""Ending attempts: the one place that terminates the job's instances, prices what they ran and settles
their budget reservations.

An attempt ends once: its instance is terminated and confirmed gone, it is priced by its pool's billing rule
from its launch to the end of its bill, its rows kept and redone are counted from its checkpoint and last
heartbeat, the state file records all of it, and the budget guard settles what it reserved for the
attempt (the launch's estimate, and every growth the spend watch added) with the attempt's actual cost.
Then the hooks run (`on_end`: its CPU and memory read, a failed one's log tail shown).

Stopping an instance without waiting (`stop`: a switch back to spot, a warned booting attempt, a budget
stop) and the job-wide sweeps (`end_every_instance` on a stop, `confirm_nothing_left` at the end) are here
too, so no other module of the loop terminates an instance.

Usage::

    book = AttemptBook(job_id="job-1", state=state, fleet=fleet, store=store, guard=guard, quotes=quotes,
                       clock=clock, monitor=monitor)
    ended = book.end(attempt, "interrupted", view)       # the attempt's row as the state file now holds it
    book.stop(attempt.instance_id)                       # its worker drains on the SIGTERM; ended later
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from coordinator.cost.billing import billed_seconds, cost_usd
from coordinator.cost.budget import BudgetGuard
from coordinator.cost.job_quotes import JobQuotes
from coordinator.errors import LeakError, PermissionDenied
from coordinator.job.aws import GONE_STATES, Fleet
from coordinator.job.core import AttemptRow, CloudClock, CoordinatorState, crash_point
from coordinator.job.loop.monitor import AttemptView, Monitor
from inference.checkpoint import rows_checkpointed
from inference.storage import ObjectStore

log = logging.getLogger("coordinator")
FINAL_BEATS = frozenset({"done", "draining", "failed"})  # a worker's last heartbeat before it exits
EndHook = Callable[[AttemptRow, str], None]  # (the ended attempt, its end reason)


class AttemptBook:
    def __init__(
        self,
        *,
        job_id: str,
        state: CoordinatorState,
        fleet: Fleet,
        store: ObjectStore,
        guard: BudgetGuard,
        quotes: JobQuotes,
        clock: CloudClock,
        monitor: Monitor,
    ) -> None:
        self._job_id, self._state, self._fleet, self._store = job_id, state, fleet, store
        self._guard, self._quotes, self._clock, self._monitor = guard, quotes, clock, monitor
        self._hooks: list[EndHook] = []

    def on_end(self, hook: EndHook) -> None:
        """`hook(attempt, end_reason)` after each attempt with an instance ends."""
        self._hooks.append(hook)

    # -- instances ----------------------------------------------------------------------------------------

    def stop(self, instance_id: str) -> None:
        """Ask EC2 to terminate the instance without waiting: its worker drains on the SIGTERM (checkpoint,
        a `draining` heartbeat), and the attempt ends when the monitor sees that or the instance gone."""
        self._fleet.terminate([instance_id])

    def end_every_instance(self, why: str) -> None:
        """On a stop: terminate every instance of the job and confirm (`LeakError` if the credentials may
        not: each powers itself off at its max lifetime, which the error says)."""
        alive = self._fleet.alive(self._job_id)
        if not alive:
            return
        log.warning("%s: terminating %d instance(s): %s", why, len(alive), ", ".join(alive))
        try:
            self._fleet.terminate_and_confirm(alive)
        except PermissionDenied as error:
            raise LeakError(f"job {self._job_id}: {', '.join(alive)} alive: {error}") from None

    def confirm_nothing_left(self) -> None:
        """At the end: terminate whatever of the job still runs, then re-list; `LeakError` if any is left."""
        alive = self._fleet.alive(self._job_id)
        if alive:
            self._fleet.terminate_and_confirm(alive)
        left = self._fleet.alive(self._job_id)
        if left:
            raise LeakError(f"job {self._job_id}: instances alive after terminate: {', '.join(left)}")
        log.info("job %s: re-listed instances, none of the job is alive", self._job_id)

    def instances_alive(self) -> list[str]:
        return self._fleet.alive(self._job_id)

    # -- ending -------------------------------------------------------------------------------------------

    def end(self, attempt: AttemptRow, end_reason: str, view: AttemptView | None) -> AttemptRow:
        """Terminate and confirm, then price the attempt and settle its budget reservations."""
        assert attempt.instance_id is not None and attempt.launched_at is not None, attempt
        self._fleet.terminate_and_confirm([attempt.instance_id])
        crash_point("after-terminate")
        ended = self._bill_end(attempt, view)
        segment = attempt.segment_id
        rows_in_checkpoint = rows_checkpointed(
            self._store, segment, self._state.segment(self._job_id, segment).rows
        )
        earlier = self._state.attempts(self._job_id, segment)
        kept_before = sum(a.rows_kept for a in earlier if not a.is_open)
        beat = view.heartbeat if view else self._monitor.latest_heartbeat(attempt.attempt_id)
        rows_seen = beat.rows_done if beat else rows_in_checkpoint
        quote = self._quotes.of(attempt.market, attempt.instance_type)
        seconds = billed_seconds(quote.billing, attempt.launched_at, ended)
        cost = cost_usd(quote.rate_usd_per_hour, seconds)
        row = self._state.attempt_ended(
            attempt.attempt_id,
            ended_at=ended,
            end_reason=end_reason,
            rows_kept=max(0, rows_in_checkpoint - kept_before),
            rows_wasted=max(0, rows_seen - rows_in_checkpoint),
            rows_per_s=self._clock.per_cloud_second(beat.rows_per_s if beat else 0.0),
            billed_seconds=seconds,
            cost_usd=cost,
            heartbeat_puts=beat.beats if beat else 0,
        )
        crash_point("before-record-actual")
        self.settle(attempt.budget_label, cost)
        self._monitor.forget(attempt.attempt_id)
        for hook in self._hooks:
            hook(row, end_reason)
        log.info(
            "%s %s %s ended (%s) after %.0f cloud s: $%.4f",
            segment,
            attempt.attempt_id,
            attempt.instance_id,
            end_reason,
            ended - attempt.launched_at,
            cost,
        )
        return row

    def end_unlaunched(self, attempt: AttemptRow, reason: str) -> None:
        """An attempt whose launch call made no instance: it cost nothing, and its reservation goes."""
        self._state.attempt_ended(
            attempt.attempt_id,
            ended_at=self._clock.now(),
            end_reason=reason,
            rows_kept=0,
            rows_wasted=0,
            billed_seconds=0,
            cost_usd=0.0,
        )
        self.settle(attempt.budget_label, 0.0)

    def settle(self, label: str, cost: float) -> None:
        """The attempt's actual with the budget guard: it settles the launch's reservation; the growth the
        spend watch added under the same label is settled at nothing (one actual per attempt). A label whose
        actual was recorded before (a restart between the two) has only its growth left to settle."""
        state = self._guard.state()
        open_ones = len(state.reservations.get(label, []))
        recorded = label in state.by_label and state.by_label[label].spent > 0
        first = 0.0 if recorded else cost
        if open_ones == 0 and not recorded:
            self._guard.record_actual(label, first)  # money spent is money spent, reserved or not
        for index in range(open_ones):
            self._guard.record_actual(label, first if index == 0 else 0.0)

    def _bill_end(self, attempt: AttemptRow, view: AttemptView | None) -> float:
        """When the instance stopped billing, in cloud seconds: now, unless it had already shut itself down
        after its worker's last heartbeat (the boot script powers off when the worker exits): then when that
        beat was heard, or, for one already written when this coordinator first looked (it ended while the
        coordinator was down), the beat's own time, bounded by the launch and now."""
        assert attempt.launched_at is not None
        now = self._clock.now()
        beat = view.heartbeat if view else None
        if view is None or beat is None or beat.state not in FINAL_BEATS:
            return now
        if view.instance_state is not None and view.instance_state not in GONE_STATES:
            return now  # still running: it bills until the terminate just confirmed
        if view.heard_at is not None:
            return max(attempt.launched_at, min(now, view.heard_at))
        return max(attempt.launched_at, min(now, self._clock.at(beat.ts)))
