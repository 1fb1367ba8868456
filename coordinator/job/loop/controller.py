"""The coordinator's control loop: launch a worker per segment, watch it, recover it, finish the job.

One cycle, every `cycle_seconds` (wall):

0. act on EC2's events for the job's instances (`events.py`, when the stack queues them): an interruption
   warning hands the segment over to a replacement, launched at once (`handover.py`);
1. observe every active attempt (monitor: heartbeat + instance state) and act on what it says: first
   heartbeat -> RUNNING; done -> DONE; draining (a notice or SIGTERM, checkpoint written) -> INTERRUPTED;
   lost (stale heartbeat, instance gone, never booted) -> LOST -> INTERRUPTED; failed -> FAILED. An ended
   attempt is terminated and confirmed gone, priced, its actual cost recorded with the budget guard;
2. price every running attempt against what the budget guard holds for it (`spend_watch.py`);
3. launch: the pass for the policy's kind (`launch_passes.py`) decides which segments get an instance and
   on which market; every launch asks the budget guard first;
4. log a status line per active segment (above 20, a summary) every `status_every` cloud seconds.
Between cycles the loop waits on the events queue: an event wakes it at once.

The job ends when every segment is DONE or FAILED; then every instance of the job is terminated and the
re-listing must come back empty (`LeakError` otherwise). Everything the loop decides goes through the SQLite
state first, so a coordinator killed at any point and started again with the same job id carries on
(`reconcile.py`).

Usage::

    controller = Controller(spec=spec, state=state, fleet=fleet, store=job_store, policy=policy,
                            guard=guard, quotes=quotes, clock=clock)
    outcome = controller.run()          # JobOutcome: segments done/failed, attempts priced
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from coordinator.cost.budget import BudgetGuard
from coordinator.cost.ledger import AttemptRecord
from coordinator.cost.pricing import PriceQuote
from coordinator.errors import (
    AwsSetupError,
    BudgetConfigError,
    DeadlineRequired,
    InvalidTransition,
    JobInterrupted,
    JobLeaseLost,
    LeakError,
    PermissionDenied,
    RunStorageError,
    ThrottledError,
)
from coordinator.job.aws.event_queue import EventQueue
from coordinator.job.aws.fleet import Fleet
from coordinator.job.core.cloud_clock import CloudClock
from coordinator.job.core.crash_points import crash_point
from coordinator.job.core.segment_states import SegmentState
from coordinator.job.core.spec import JobSpec
from coordinator.job.core.state_file import CoordinatorState
from coordinator.job.loop.attempt_book import AttemptBook
from coordinator.job.loop.attempt_records import attempt_records
from coordinator.job.loop.handover import Handover
from coordinator.job.loop.instance_watch import FULL_LOOK_SECONDS
from coordinator.job.loop.launcher import launching_together
from coordinator.job.loop.lease import JobLease
from coordinator.job.loop.monitor import AttemptView, Monitor, lost_end_reason
from coordinator.job.loop.policy_pass import LaunchPass
from coordinator.job.loop.progress import SegmentStatus, StatusLog
from coordinator.job.loop.reconcile import reconcile
from coordinator.job.loop.spend_watch import SpendWatch
from coordinator.policies.registry import Policy, driver_for
from inference.storage import ObjectStore

log = logging.getLogger("coordinator")
INTERRUPTED = "interrupted (Ctrl-C or SIGTERM): the same command with the same --job-id resumes it"


@dataclass(frozen=True, slots=True)
class JobOutcome:
    job_id: str
    segments_total: int
    segments_done: int
    failures: dict[str, str]  # segment -> why it failed
    attempts: list[AttemptRecord]
    started_cloud: float
    ended_cloud: float
    wall_seconds: float
    api_retries: int
    stopped: str = ""  # why the account stopped the job (a permission, a quota): fix it and run again

    @property
    def succeeded(self) -> bool:
        return self.segments_done == self.segments_total


class Controller:
    def __init__(
        self,
        *,
        spec: JobSpec,
        state: CoordinatorState,
        fleet: Fleet,
        store: ObjectStore,
        policy: Policy,
        guard: BudgetGuard,
        quotes: dict[str, PriceQuote],
        clock: CloudClock,
        on_cycle: Callable[[list[SegmentStatus]], None] | None = None,
        events: EventQueue | None = None,
        lease: JobLease | None = None,
    ) -> None:
        driver = driver_for(policy)
        if driver.needs_deadline and spec.deadline_seconds is None:
            raise DeadlineRequired(f"policy {policy.name!r} needs the job's deadline (deadline_seconds)")
        self.spec, self.state, self.fleet = spec, state, fleet
        self.clock, self.on_cycle, self.lease = clock, on_cycle, lease  # lease: one coordinator per job
        self.monitor = Monitor(
            store,
            fleet,
            spec.job_id,
            heartbeat_timeout=spec.heartbeat_timeout,
            boot_timeout=spec.boot_timeout,
            full_look_seconds=FULL_LOOK_SECONDS if events is not None else None,
            segment_range=lambda segment: state.segment(spec.job_id, segment).rows,  # a `done` must cover it
        )
        self.book = AttemptBook(
            spec=spec,
            state=state,
            fleet=fleet,
            store=store,
            guard=guard,
            quotes=quotes,
            clock=clock,
            monitor=self.monitor,
        )
        self.launch_pass = LaunchPass(self.book, driver)
        self.events, self.handover = events, Handover(self.book)
        self.status_log = StatusLog(self.book, spec.status_every)
        self.spend = SpendWatch(self.book, lead_seconds=clock.cloud(2 * spec.cycle_seconds))  # real spend

    # -- the loop ---------------------------------------------------------------------------------------

    def run(self) -> JobOutcome:
        started_wall = time.time()
        started_cloud = self.clock.now()
        reconcile(self.book)
        stopped = ""
        if self.events is not None:
            self.events.start()
        try:
            while not self._finished():
                self.cycle()
                self._wait(self.spec.cycle_seconds)
        except AwsSetupError as error:  # no retry can fix it: stop now; the same job id resumes later
            stopped = str(error)
            log.error("job %s stopped: %s", self.spec.job_id, error)
            self.abandon("the account refused the job")
        except (InvalidTransition, JobLeaseLost):
            # its own bookkeeping failed, or another coordinator took the job over (the lease): the instances
            # are healthy; the job's coordinator adopts them (each powers off at its max lifetime regardless)
            alive = self.fleet.alive(self.spec.job_id)
            log.error("job %s: instances left running for a resume to adopt: %s", self.spec.job_id, alive)
            raise
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: a clean stop, the cut job's outcome kept
            self.abandon("interrupted")
            stopped = INTERRUPTED
        except BaseException:
            self.abandon("coordinator stopped")
            raise
        finally:
            if self.events is not None:
                self.events.close()
            self.monitor.heartbeats.close()
        self.confirm_nothing_left()
        outcome = self._outcome(started_cloud, time.time() - started_wall, stopped)
        if stopped == INTERRUPTED:
            raise JobInterrupted(outcome)
        return outcome

    def cycle(self) -> None:
        if self.lease is not None:
            self.lease.check()  # JobLeaseLost: another coordinator took the job over
        events = self.events
        if events is not None and self.handover.take(events, self.monitor.instances.look_again):
            self._launch()  # a segment handed over: its replacement goes out before the fleet is looked at
        now_wall = time.time()
        leaving = {t.active.attempt_id for t in self.book.leaving.values()}
        watched = [t.active for t in (*self.book.active.values(), *self.book.leaving.values())]
        try:
            views = self.monitor.observe(watched, now=now_wall)
        except ThrottledError as error:  # EC2 busy past the retries: look again next cycle, decide nothing
            log.warning("no look at the fleet this cycle: %s", error)
            views = []
        for view in views:
            if view.attempt.attempt_id in leaving:
                self.handover.observe(view)
            else:
                self._act(view)
        self.spend.check()  # no running attempt outruns what the guard holds for it
        self._launch()
        self.status_log.cycle(self.on_cycle)

    def _launch(self) -> None:
        with launching_together(self.book):
            self.launch_pass.run()

    def _wait(self, seconds: float) -> None:
        if self.events is None:
            time.sleep(seconds)
        else:
            self.events.wait(seconds)  # an event ends the wait at once

    def _finished(self) -> bool:
        segments = self.state.segments(self.spec.job_id)
        return all(row.state.is_terminal for row in segments) and not self.book.leaving

    # -- acting on what the monitor saw -----------------------------------------------------------------

    def _act(self, view: AttemptView) -> None:
        job, segment, book = self.spec.job_id, view.attempt.segment_id, self.book
        current = self.state.segment(job, segment).state
        switching = segment in book.switching
        if (
            view.verdict == "lost"
            and switching
            and time.time() - book.switching[segment] < self.spec.heartbeat_timeout
        ):
            return  # terminated on purpose: its drain heartbeat is on the way
        if view.verdict in ("running", "done", "draining", "failed") and current == SegmentState.LAUNCHING:
            self.state.set_running(job, segment, reason=f"first heartbeat from {view.attempt.instance_id}")
            book.first_beat(segment)
        # a coordinator that died between a move and the end of the attempt finds the move made: no repeat
        if view.verdict == "done":
            if current != SegmentState.DONE:
                self.state.set_done(job, segment, reason=view.reason)
                crash_point("after-state-done")
            book.end(segment, "done", view)
        elif view.verdict == "draining":
            if current != SegmentState.DRAINING:
                self.state.set_draining(job, segment, reason=view.reason)
                crash_point("after-state-draining")
            book.end(segment, "switched" if switching else "interrupted", view)
            why = "switched to spot" if switching else "drained"
            self.state.set_interrupted(job, segment, reason=f"{why}: checkpoint written, instance released")
        elif view.verdict == "lost":
            self.state.set_lost(job, segment, reason=view.reason)
            ended = lost_end_reason(view)  # a reclaim, a crashed worker, or unknown: EC2's StateReason
            book.end(segment, ended, view)
            self.state.set_interrupted(job, segment, reason=f"{ended}: resuming from the last checkpoint")
        elif view.verdict == "failed":
            book.fail(segment, view.reason)
            book.end(segment, "failed", view)

    # -- stop, leaks, outcome ---------------------------------------------------------------------------

    def abandon(self, why: str) -> None:
        """On Ctrl-C or a crash of the loop: terminate every instance of the job and confirm."""
        alive = self.fleet.alive(self.spec.job_id)
        if alive:
            log.warning("%s: terminating %d instance(s): %s", why, len(alive), ", ".join(alive))
            try:
                self.fleet.terminate_and_confirm(alive)
            except PermissionDenied as error:  # nothing here can end them: each powers itself off in time
                raise LeakError(f"job {self.spec.job_id}: {', '.join(alive)} alive: {error}") from None
        try:
            self.handover.close_all(why)
        except (RunStorageError, BudgetConfigError, OSError) as error:  # a full disk: the resume settles
            log.warning("leaving attempts not closed (%s); a resume closes them", error)
        for segment in list(self.book.active):
            try:
                self.book.end(segment, "terminated", None)
            except (RunStorageError, BudgetConfigError, OSError) as error:  # a full disk: the resume settles
                log.warning("%s: attempt not closed (%s); a resume closes it", segment, error)

    def confirm_nothing_left(self) -> None:
        alive = self.fleet.alive(self.spec.job_id)
        if alive:
            self.fleet.terminate_and_confirm(alive)
        left = self.fleet.alive(self.spec.job_id)
        if left:
            raise LeakError(f"job {self.spec.job_id}: instances alive after terminate: {', '.join(left)}")
        log.info("job %s: re-listed instances, none of the job is alive", self.spec.job_id)

    def _outcome(self, started_cloud: float, wall_seconds: float, stopped: str = "") -> JobOutcome:
        rows = self.state.segments(self.spec.job_id)
        last_reason = {e.segment_id: e.reason for e in self.state.events(self.spec.job_id)}  # the newest wins
        failures = {
            row.segment_id: self.book.failures.get(row.segment_id, last_reason.get(row.segment_id, "unknown"))
            for row in rows
            if row.state == SegmentState.FAILED
        }
        return JobOutcome(
            job_id=self.spec.job_id,
            segments_total=len(self.book.index),
            segments_done=sum(row.state == SegmentState.DONE for row in rows),
            failures=failures,
            attempts=attempt_records(self.state, self.spec, self.book.quotes),
            started_cloud=started_cloud,
            ended_cloud=self.clock.now(),
            wall_seconds=wall_seconds,
            api_retries=self.fleet.api_retries,
            stopped=stopped,
        )
