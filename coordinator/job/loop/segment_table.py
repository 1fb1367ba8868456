"""The segment table: the one owner of a segment's moves in the live loop.

Each verb is one whole move: the guarded transition in the state file (with its event and reason), the
change to what the loop watches, the crash point, and the instance's end or stop through the attempt book.
Nothing else in the loop writes a segment's state or holds its attempts, except the launcher, whose launch
is the move into LAUNCHING (`launcher.py`). Callers decide; the table moves.

The loop watches two kinds of open attempt per segment: its active one (launched, booting or working) and,
after an EC2 interruption warning, its leaving one (draining while its replacement boots: `handover.py`).

    first_beat(view)      LAUNCHING -> RUNNING, the boot's length measured
    finish(view)          -> DONE, the attempt ended "done"
    drain(view)           -> DRAINING -> INTERRUPTED, the attempt ended "interrupted" (or "switched")
    lose(view)            -> LOST -> INTERRUPTED, the attempt ended by EC2's reason (`lost_end_reason`)
    worker_failed(view)   -> FAILED with the worker's words, the attempt ended "failed"
    fail(segment, ...)    -> FAILED with its cause kept in the state file (a policy gave up, the budget...)
    warn(segment, ...)    RUNNING -> DRAINING -> INTERRUPTED (or LAUNCHING -> LOST -> INTERRUPTED, stopped):
                          the active attempt becomes the leaving one, and the replacement may launch at once
    leaving_seen(view)    a leaving attempt's last word or end: ended; a rebalanced one stopped in time
    switch(segment)       its on-demand instance told to stop: it drains and relaunches on spot
    stop_for_budget(...)  its instance told to stop: the guard will hold no more for it
    adopt_after_restart   an open attempt found in the state file after a restart, watched again
    resume_after_restart  a segment whose attempt had ended before a restart, ready to launch again
    end_all(why)          on a stop: every watched attempt ended

Usage::

    table = SegmentTable(spec=spec, state=state, clock=clock, store=store, book=book, monitor=monitor)
    table.track(attempt)               # the launcher hands over each launched attempt
    table.first_beat(view); table.finish(view)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial

from coordinator.errors import BudgetConfigError, RunStorageError
from coordinator.job.aws import InstanceInfo
from coordinator.job.core import (
    AttemptRow,
    CloudClock,
    CoordinatorState,
    JobSpec,
    SegmentRow,
    SegmentState,
    crash_point,
)
from coordinator.job.loop.attempt_book import AttemptBook
from coordinator.job.loop.heartbeats import read_heartbeat
from coordinator.job.loop.monitor import SPOT_TERMINATION, AttemptView, Monitor, Verdict, lost_end_reason
from coordinator.job.loop.watched_attempts import WatchedAttempts
from inference.storage import ObjectStore

log = logging.getLogger("coordinator")
S = SegmentState
# a full disk or a read-only run folder while attempts end on a stop: the resume settles what is left
UNSETTLED = (RunStorageError, BudgetConfigError, OSError)


class SegmentTable(WatchedAttempts):
    def __init__(
        self,
        *,
        spec: JobSpec,
        state: CoordinatorState,
        clock: CloudClock,
        store: ObjectStore,
        book: AttemptBook,
        monitor: Monitor,
    ) -> None:
        super().__init__(job_id=spec.job_id, state=state, store=store)
        self._spec, self._clock, self._book, self._monitor = spec, clock, book, monitor

    # -- what the monitor saw of an active attempt --------------------------------------------------------

    def track(self, attempt: AttemptRow) -> None:
        """A launched attempt (the launcher's), watched as its segment's active one."""
        self._active[attempt.segment_id] = attempt

    def first_beat(self, view: AttemptView) -> None:
        """Its worker beat for the first time: RUNNING, and its boot's length is measured."""
        segment, attempt = view.attempt.segment_id, view.attempt
        if self.segment(segment).state != S.LAUNCHING:
            return
        self._state.set_running(self._job, segment, reason=f"first heartbeat from {attempt.instance_id}")
        assert attempt.launched_at is not None
        self._boots.append(self._clock.now() - attempt.launched_at)

    def finish(self, view: AttemptView) -> None:
        """DONE (a coordinator that died before the attempt ended finds the move made: no repeat)."""
        segment = view.attempt.segment_id
        if self.segment(segment).state != S.DONE:
            self._state.set_done(self._job, segment, reason=view.reason)
            crash_point("after-state-done")
        self._end(segment, "done", view)

    def drain(self, view: AttemptView) -> None:
        """Its worker drained (a notice, SIGTERM, or a switch back to spot): checkpointed, released."""
        segment = view.attempt.segment_id
        switched = segment in self._switching
        if self.segment(segment).state != S.DRAINING:
            self._state.set_draining(self._job, segment, reason=view.reason)
            crash_point("after-state-draining")
        self._end(segment, "switched" if switched else "interrupted", view)
        why = "switched to spot" if switched else "drained"
        self._state.set_interrupted(
            self._job, segment, reason=f"{why}: checkpoint written, instance released"
        )

    def lose(self, view: AttemptView) -> None:
        """Its instance is gone or its worker silent: the work since the checkpoint is redone."""
        segment = view.attempt.segment_id
        told = self._switching.get(segment)
        if told is not None and time.monotonic() - told < self._spec.heartbeat_timeout:
            return  # terminated on purpose: its drain heartbeat is on the way
        self._state.set_lost(self._job, segment, reason=view.reason)
        ended = lost_end_reason(view)  # a reclaim, a crashed worker, or unknown: EC2's StateReason
        self._end(segment, ended, view)
        self._state.set_interrupted(self._job, segment, reason=f"{ended}: resuming from the last checkpoint")

    def worker_failed(self, view: AttemptView) -> None:
        """Its worker says it cannot do the segment: FAILED with its words."""
        self.fail(view.attempt.segment_id, view.reason)
        self._end(view.attempt.segment_id, "failed", view)

    def fail(self, segment: str, reason: str, cause: str = "") -> None:
        """FAILED for good: the event says `reason`; the state file keeps `cause` (or the reason)."""
        self._state.set_failed(self._job, segment, reason=reason, cause=cause)

    # -- instances told to stop ---------------------------------------------------------------------------

    def switch(self, segment: str) -> None:
        """Its on-demand instance is told to stop: it drains to its checkpoint, then spot takes over."""
        attempt = self._active[segment]
        self._switching[segment] = time.monotonic()
        assert attempt.instance_id is not None
        self._book.stop(attempt.instance_id)

    def stop_for_budget(self, attempt: AttemptRow, why: str) -> None:
        """Its instance (the segment's active one, or a warned one still leaving) is told to stop: the
        budget guard will hold no more for it."""
        self._budget_stopped.add(attempt.attempt_id)
        assert attempt.instance_id is not None
        self._book.stop(attempt.instance_id)
        log.error("%s: stopping %s: %s", attempt.segment_id, attempt.instance_id, why)

    # -- EC2's warnings: the hand-over ---------------------------------------------------------------------

    def warn(self, segment: str, why: str, *, rebalance: bool = False) -> bool:
        """Its active (spot) attempt is warned: it becomes the leaving one and the segment INTERRUPTED, for
        the launch pass to replace at once. A booting one is stopped now (nothing to drain); a running one
        drains, or with `rebalance` works on until its replacement beats. False: nothing to hand over."""
        attempt = self._active[segment]
        current = self.segment(segment).state
        if current == S.RUNNING:
            if rebalance:
                self._rebalanced[attempt.attempt_id] = False
            self._state.set_draining(self._job, segment, reason=why)
            self._hand_over(segment)
            self._state.set_interrupted(
                self._job, segment, reason="warned: the replacement launches while it drains"
            )
            return True
        if current == S.LAUNCHING:
            self._state.set_lost(self._job, segment, reason=f"{why} while it booted")
            self._hand_over(segment)
            assert attempt.instance_id is not None
            self._book.stop(attempt.instance_id)
            self._state.set_interrupted(self._job, segment, reason="warned while booting: relaunching")
            return True
        return False

    def leaving_seen(self, view: AttemptView) -> None:
        """A leaving attempt: ended once its worker has said its last word or its instance is gone; a
        rebalanced one is stopped once its replacement has beaten."""
        attempt, segment = view.attempt, view.attempt.segment_id
        if view.verdict in ("booting", "running"):
            if self._rebalanced.get(attempt.attempt_id) is False and self._replacement_started(segment):
                self._rebalanced[attempt.attempt_id] = True
                assert attempt.instance_id is not None
                self._book.stop(attempt.instance_id)
                log.info("%s: replacement running; stopping %s (rebalanced)", segment, attempt.instance_id)
            return
        leaving = self._leave(segment)
        assert leaving is not None, segment  # seen because it was leaving
        reclaimed = view.state_reason == SPOT_TERMINATION
        switched = self._rebalanced.pop(attempt.attempt_id, None) is not None and not reclaimed
        reason = "done" if view.verdict == "done" else "switched" if switched else "interrupted"
        self._book.end(leaving, reason, view)

    def _hand_over(self, segment: str) -> None:
        """The active attempt becomes the leaving one. One warned before and not yet closed (its replacement
        warned within moments) is ended first, not forgotten."""
        earlier = self._leave(segment)
        self._leaving[segment] = self._active.pop(segment)
        if earlier is not None:
            switched = self._rebalanced.pop(earlier.attempt_id, None) is not None
            self._book.end(earlier, "switched" if switched else "interrupted", None)

    def _leave(self, segment: str) -> AttemptRow | None:
        """The leaving attempt, no longer watched; its drain moved the checkpoint on: read it again."""
        self._checkpointed.pop(segment, None)
        return self._leaving.pop(segment, None)

    def _replacement_started(self, segment: str) -> bool:
        active = self._active.get(segment)
        return active is not None and self._monitor.latest_heartbeat(active.attempt_id) is not None

    # -- a restart, and a stop ------------------------------------------------------------------------------

    def adopt_after_restart(self, attempt: AttemptRow, info: InstanceInfo | None) -> None:
        """An open, launched attempt of the state file, watched again. Attempts come in launch order: of two
        of one segment (a warned one and its replacement) the older is leaving, and so is the open attempt
        of an INTERRUPTED segment (warned, its replacement not launched yet). One whose segment is already
        DONE or FAILED had its move made and not its end: it is ended now, billed to its instance's end."""
        row, segment = self.segment(attempt.segment_id), attempt.segment_id
        warned = row.state == S.INTERRUPTED
        if not warned and segment in self._active:
            self._leaving[segment] = self._active[segment]
        (self._leaving if warned else self._active)[segment] = attempt
        if warned:
            return
        listed = info.state if info else "not listed"
        log.info("%s: adopted %s (%s) after a restart", segment, attempt.instance_id, listed)
        if row.state.is_terminal:
            beat = read_heartbeat(self._store, segment)
            beat = beat if beat is not None and beat.attempt == attempt.attempt_id else None
            verdict: Verdict = "done" if row.state == S.DONE else "failed"
            instance_state = info.state if info else None
            view = AttemptView(attempt, verdict, "restart: closing the attempt", instance_state, beat)
            self._end(segment, verdict, view)

    def resume_after_restart(self, row: SegmentRow) -> None:
        """A segment without an open attempt after a restart: one left LAUNCHING never made its call; one
        left RUNNING, DRAINING or LOST had its attempt ended: INTERRUPTED, to resume from its checkpoint."""
        segment = row.segment_id
        if row.state == S.LAUNCHING:
            self._state.set_failed_launch(
                self._job, segment, reason="restart: stopped before the launch call"
            )
        elif row.state in (S.RUNNING, S.DRAINING, S.LOST):
            if row.state == S.RUNNING:
                self._state.set_lost(self._job, segment, reason="restart: its attempt had ended")
            self._state.set_interrupted(self._job, segment, reason="restart: resuming from the checkpoint")

    def end_all(self, why: str) -> None:
        """On a stop (its instances already terminated): every watched attempt ended and priced; one that
        cannot be written (a full disk) is left open for the resume to settle."""
        for segment in list(self._leaving):
            log.info("%s: closing its leaving attempt (%s)", segment, why)
            leaving = self._leave(segment)
            if leaving is not None:
                self._try(segment, partial(self._book.end, leaving, "interrupted", None))
        for segment in list(self._active):
            self._try(segment, partial(self._end, segment, "terminated", None))

    @staticmethod
    def _try(segment: str, end: Callable[[], object]) -> None:
        try:
            end()
        except UNSETTLED as error:
            log.warning("%s: attempt not closed (%s); a resume closes it", segment, error)

    def _end(self, segment: str, reason: str, view: AttemptView | None) -> None:
        """The active attempt ended through the book, and no longer watched."""
        attempt = self._active.pop(segment)
        self._switching.pop(segment, None)
        self._budget_stopped.discard(attempt.attempt_id)
        self._checkpointed.pop(segment, None)
        self._book.end(attempt, reason, view)
