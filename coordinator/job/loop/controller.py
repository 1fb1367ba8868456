"""The coordinator's control loop: launch a worker per segment, watch it, recover it, finish the job.

One cycle, every `cycle_seconds` (wall):

0. act on EC2's events for the job's instances (`aws/event_queue.py`, when the stack queues them): an
   interruption warning hands the segment over to a replacement, launched at once (`handover.py`);
1. observe every watched attempt (monitor: heartbeat + instance state) and hand what it says to the segment
   table's move for it: first heartbeat -> RUNNING; done -> DONE; draining (a notice or SIGTERM, checkpoint
   written) -> INTERRUPTED; lost (stale heartbeat, instance gone, never booted) -> LOST -> INTERRUPTED;
   failed -> FAILED. An ended attempt is terminated and confirmed gone, priced, its actual cost recorded
   with the budget guard (`attempt_book.py`);
2. price every running attempt against what the budget guard holds for it (`spend_watch.py`);
3. launch: the policy pass (`policy_pass.py`) decides which segments get an instance and on which market;
   every launch asks the budget guard first (`launcher.py`);
4. log a status line per active segment (above 20, a summary) every `status_every` cloud seconds.
Between cycles the loop waits on the events queue: an event wakes it at once.

The job ends when every segment is DONE or FAILED; then every instance of the job is terminated and the
re-listing must come back empty (`LeakError` otherwise). Everything the loop decides goes through the SQLite
state first, so a coordinator killed at any point and started again with the same job id carries on
(`reconcile.py`). The controller wires the loop's parts and runs the cycle; it decides and moves nothing
itself.

Usage::

    controller = Controller(spec=spec, state=state, fleet=fleet, store=job_store, policy=policy,
                            guard=guard, quotes=quotes, clock=clock)
    controller.on_attempt_end(usage.attempt_ended)      # each ended attempt, with its end reason
    outcome = controller.run()          # JobOutcome: segments done/failed, attempts priced
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from coordinator.cost.budget import BudgetGuard
from coordinator.cost.job_quotes import JobQuotes
from coordinator.cost.ledger import AttemptRecord
from coordinator.errors import (
    AwsSetupError,
    DeadlineRequired,
    InvalidTransition,
    JobInterrupted,
    JobLeaseLost,
    ThrottledError,
)
from coordinator.job.aws import EventQueue, Fleet
from coordinator.job.core import CloudClock, CoordinatorState, JobSpec, SegmentState
from coordinator.job.loop.attempt_book import AttemptBook, EndHook
from coordinator.job.loop.handover import Handover
from coordinator.job.loop.instance_watch import FULL_LOOK_SECONDS
from coordinator.job.loop.launcher import Launcher
from coordinator.job.loop.lease import JobLease
from coordinator.job.loop.ledger_records import ledger_records
from coordinator.job.loop.monitor import AttemptView, Monitor
from coordinator.job.loop.policy_pass import PolicyPass
from coordinator.job.loop.progress import SegmentStatus, StatusLog
from coordinator.job.loop.reconcile import reconcile
from coordinator.job.loop.segment_table import SegmentTable
from coordinator.job.loop.spend_watch import SpendWatch
from coordinator.policies.registry import Policy, driver_for
from inference.storage import ObjectStore

log = logging.getLogger("coordinator")
INTERRUPTED = "interrupted (Ctrl-C or SIGTERM): the same command with the same --job-id resumes it"
BEATING = ("running", "done", "draining", "failed")  # verdicts that prove the worker started


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
        quotes: JobQuotes,
        clock: CloudClock,
        on_cycle: Callable[[list[SegmentStatus]], None] | None = None,
        events: EventQueue | None = None,
        lease: JobLease | None = None,
    ) -> None:
        driver = driver_for(policy)
        if driver.needs_deadline and spec.deadline_seconds is None:
            raise DeadlineRequired(f"policy {policy.name!r} needs the job's deadline (deadline_seconds)")
        self.spec, self.fleet, self.guard, self.quotes, self.clock = spec, fleet, guard, quotes, clock
        self.on_cycle, self.events, self.lease = on_cycle, events, lease  # lease: one coordinator per job
        self.monitor = _monitor(spec, state, fleet, store, clock, events=events is not None)
        self.book = AttemptBook(
            job_id=spec.job_id,
            state=state,
            fleet=fleet,
            store=store,
            guard=guard,
            quotes=quotes,
            clock=clock,
            monitor=self.monitor,
        )
        self.table = SegmentTable(
            spec=spec, state=state, clock=clock, store=store, book=self.book, monitor=self.monitor
        )
        self.launcher = Launcher(
            spec=spec,
            state=state,
            fleet=fleet,
            store=store,
            guard=guard,
            quotes=quotes,
            clock=clock,
            table=self.table,
            book=self.book,
        )
        self.policy_pass = PolicyPass(
            driver, table=self.table, launcher=self.launcher, monitor=self.monitor, spec=spec, clock=clock
        )
        self.handover = Handover(self.table, self.launcher, replace_on_rebalance=spec.replace_on_rebalance)
        self.status_log = StatusLog(self.table, self.monitor, quotes, clock, every=spec.status_every)
        lead = clock.cloud(2 * spec.cycle_seconds)  # the next cycle, and the terminate
        self.spend = SpendWatch(self.table, guard, quotes, clock, lead_seconds=lead)  # real spend

    def on_attempt_end(self, hook: EndHook) -> None:
        """`hook(attempt, end_reason)` after each attempt with an instance ends (its usage, its log tail)."""
        self.book.on_end(hook)

    # -- the loop ---------------------------------------------------------------------------------------

    def run(self) -> JobOutcome:
        started_wall, started_cloud = time.monotonic(), self.clock.now()
        instances = self.fleet.job_instances(self.spec.job_id)
        reconcile(
            self.table, self.launcher, self.book, self.guard, instances=instances, job_id=self.spec.job_id
        )
        stopped = ""
        if self.events is not None:
            self.events.start()
        try:
            while not self.table.finished():
                self.cycle()
                self._wait(self.spec.cycle_seconds)
        except AwsSetupError as error:  # no retry can fix it: stop now; the same job id resumes later
            stopped = str(error)
            log.error("job %s stopped: %s", self.spec.job_id, error)
            self.abandon("the account refused the job")
        except (InvalidTransition, JobLeaseLost):
            # its own bookkeeping failed, or another coordinator took the job over (the lease): the instances
            # are healthy; the job's coordinator adopts them (each powers off at its max lifetime regardless)
            alive = self.book.instances_alive()
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
        self.book.confirm_nothing_left()
        outcome = self._outcome(started_cloud, time.monotonic() - started_wall, stopped)
        if stopped == INTERRUPTED:
            raise JobInterrupted(outcome)
        return outcome

    def cycle(self) -> None:
        if self.lease is not None:
            self.lease.check()  # JobLeaseLost: another coordinator took the job over
        events = self.events
        if events is not None and self.handover.take(events, self.monitor.instances.look_again):
            self._launch()  # a segment handed over: its replacement goes out before the fleet is looked at
        try:
            views = self.monitor.observe(self.table.watched())
        except ThrottledError as error:  # EC2 busy past the retries: look again next cycle, decide nothing
            log.warning("no look at the fleet this cycle: %s", error)
            views = []
        for view in views:
            if self.table.is_leaving(view.attempt):
                self.table.leaving_seen(view)
            else:
                self._act(view)
        self.spend.check()  # no running attempt outruns what the guard holds for it
        self._launch()
        self.status_log.cycle(self.on_cycle)

    def _launch(self) -> None:
        with self.launcher.together():
            self.policy_pass.run()

    def _wait(self, seconds: float) -> None:
        if self.events is None:
            time.sleep(seconds)
        else:
            self.events.wait(seconds)  # an event ends the wait at once

    def _act(self, view: AttemptView) -> None:
        """The segment table's move for what the monitor saw of an active attempt."""
        if view.verdict in BEATING:
            self.table.first_beat(view)
        if view.verdict == "done":
            self.table.finish(view)
        elif view.verdict == "draining":
            self.table.drain(view)
        elif view.verdict == "lost":
            self.table.lose(view)
        elif view.verdict == "failed":
            self.table.worker_failed(view)

    # -- stop, outcome ------------------------------------------------------------------------------------

    def abandon(self, why: str) -> None:
        """On Ctrl-C or a crash of the loop: terminate every instance of the job and confirm, then end
        every watched attempt (a full disk leaves them for the resume)."""
        self.book.end_every_instance(why)
        self.table.end_all(why)

    def _outcome(self, started_cloud: float, wall_seconds: float, stopped: str = "") -> JobOutcome:
        rows = self.table.segments()
        return JobOutcome(
            job_id=self.spec.job_id,
            segments_total=self.table.count,
            segments_done=sum(row.state == SegmentState.DONE for row in rows),
            failures=self.table.failures(),
            attempts=ledger_records(self.table.attempts(), self.spec, self.quotes),
            started_cloud=started_cloud,
            ended_cloud=self.clock.now(),
            wall_seconds=wall_seconds,
            api_retries=self.fleet.api_retries,
            stopped=stopped,
        )


def _monitor(
    spec: JobSpec,
    state: CoordinatorState,
    fleet: Fleet,
    store: ObjectStore,
    clock: CloudClock,
    *,
    events: bool,
) -> Monitor:
    """The job's monitor: with EC2's events, the whole job is listed only every `FULL_LOOK_SECONDS`."""
    return Monitor(
        store,
        fleet,
        spec.job_id,
        clock=clock,
        heartbeat_timeout=spec.heartbeat_timeout,
        boot_timeout=spec.boot_timeout,
        full_look_seconds=FULL_LOOK_SECONDS if events else None,
        segment_range=lambda segment: state.segment(spec.job_id, segment).rows,  # a `done` must cover it
    )
