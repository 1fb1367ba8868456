"""The attempts of one job: launching them (the budget guard first), ending them (terminate, price, settle).

It is longer than 300 lines on purpose: the one owner of the attempts the loop watches; its verbs (the
segments' moves) are the only writers of its fields (`tests/test_architecture.py` checks that).

An attempt is one instance working on one segment. The book keeps the attempts the loop is watching
(`active`), launches new ones through the fleet, and ends them: terminate and confirm, price by the billing
rule, record the actual cost with the budget guard. Everything goes through the SQLite state first.
`Tracked` is an attempt the loop watches; `attempt_label` the budget guard's name for its reservation.

Usage::

    book = AttemptBook(spec=spec, state=state, fleet=fleet, store=store, guard=guard, quotes=quotes,
                       clock=clock, monitor=monitor)
    book.launch(row, "spot", "initial launch on spot (hybrid)")
    book.end("seg-0003", "interrupted", view)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from coordinator.cost.billing import billed_seconds, cost_usd
from coordinator.cost.budget import BudgetGuard
from coordinator.cost.job_quotes import JobQuotes
from coordinator.cost.pricing import ESTIMATE_MARGIN, Market, PriceQuote
from coordinator.errors import (
    AwsSetupError,
    BudgetGuardExceeded,
    CapacityError,
    LaunchError,
    TeardownRefused,
    ThrottledError,
)
from coordinator.job.aws.capacity_pools import Placement
from coordinator.job.aws.fleet import Fleet
from coordinator.job.aws.instances import GONE_STATES
from coordinator.job.core.cloud_clock import CloudClock
from coordinator.job.core.crash_points import crash_point
from coordinator.job.core.spec import JobSpec
from coordinator.job.core.state_file import CoordinatorState
from coordinator.job.core.tables import SegmentRow
from coordinator.job.core.worker_contract import LaunchRequest
from coordinator.job.loop.launcher import PlannedLaunch
from coordinator.job.loop.monitor import SILENT_ENDS, ActiveAttempt, AttemptView, Monitor
from coordinator.policies.base import SegmentHistory
from inference.checkpoint import rows_checkpointed
from inference.storage import ObjectStore

log = logging.getLogger("coordinator")


@dataclass(slots=True)
class Tracked:
    """An attempt the loop is watching."""

    active: ActiveAttempt
    segment_index: int
    launched_cloud: float
    budget_label: str
    instance_type: str = ""  # its pool's ("" before pools were recorded: the job's first type)
    zone: str = ""  # its pool's ("" unknown: adopted after a restart)


FINAL_BEATS = frozenset({"done", "draining", "failed"})  # a worker's last heartbeat before it exits


def attempt_label(attempt_id: str, market: str) -> str:
    """The budget guard's label of an attempt: its reservation and its actual share it."""
    return f"{attempt_id} {market}"


class AttemptBook:
    def __init__(
        self,
        *,
        spec: JobSpec,
        state: CoordinatorState,
        fleet: Fleet,
        store: ObjectStore,
        guard: BudgetGuard,
        quotes: dict[str, PriceQuote],
        clock: CloudClock,
        monitor: Monitor,
    ) -> None:
        self.spec = spec
        self.state = state
        self.fleet = fleet
        self.store = store
        self.guard = guard
        self.quotes = JobQuotes.single(quotes, spec.instance_type)  # per (market, type) of the job
        self.clock = clock
        self.monitor = monitor
        self.active: dict[str, Tracked] = {}
        # segment -> its warned attempt, draining while its replacement (in `active`) boots
        self.leaving: dict[str, Tracked] = {}
        self.switching: dict[str, float] = {}  # segment -> wall time its on-demand instance was told to stop
        self.boots_seen: list[float] = []  # cloud seconds from launch to first heartbeat
        self.not_before: dict[str, float] = {}  # segment -> cloud time of its next launch try
        self.spot_unavailable_until = 0.0  # cloud: a spot launch failed for capacity; assume none until then
        self.failures: dict[str, str] = {}
        # called with each ended attempt and its end reason: its usage is read, a failed one's log tail shown
        self.after_end: list[Callable[[ActiveAttempt, str], None]] = []
        self.checkpointed: dict[str, int] = {}  # segment -> rows its checkpoint holds, read once per attempt
        self.index = {row.segment_id: i for i, row in enumerate(state.segments(spec.job_id))}
        self.batch: list[PlannedLaunch] | None = None  # launches held to be made together, when a list

    @property
    def job_id(self) -> str:
        return self.spec.job_id

    def fail(self, segment: str, reason: str, why: str | None = None) -> None:
        """FAILED for good: the state records `reason`, the outcome `why` (or the reason)."""
        self.state.set_failed(self.job_id, segment, reason=reason)
        self.failures[segment] = why or reason

    # -- the segments' moves: the only writers of the fields above ------------------------------------------

    def first_beat(self, segment: str) -> None:
        """The active attempt's worker beat for the first time: its boot took this long."""
        self.boots_seen.append(self.clock.now() - self.active[segment].launched_cloud)

    def hand_over(self, segment: str) -> Tracked | None:
        """The active attempt (warned) becomes the segment's leaving one; returns the one that was leaving
        before (its replacement was warned within moments), for the caller to close, not to forget."""
        earlier = self.leave(segment)
        self.leaving[segment] = self.active.pop(segment)
        self.checkpointed.pop(segment, None)
        return earlier

    def leave(self, segment: str) -> Tracked | None:
        """The segment's leaving attempt, no longer watched as leaving (None: none); its drain moved the
        checkpoint on, so the checkpoint is read again."""
        self.checkpointed.pop(segment, None)
        return self.leaving.pop(segment, None)

    def adopt(self, tracked: Tracked, *, warned: bool) -> None:
        """After a restart: an open attempt found again, as the leaving one if it was warned; attempts come
        in launch order, so an active one found before it was warned and is leaving."""
        segment = tracked.active.segment_id
        if not warned and segment in self.active:
            self.leaving[segment] = self.active[segment]
        (self.leaving if warned else self.active)[segment] = tracked

    def switch(self, segment: str) -> None:
        """The segment's on-demand instance is told to stop: it drains back to spot."""
        self.switching[segment] = time.time()

    def checkpointed_rows(self, segment: str) -> int:
        """The rows the segment's checkpoint holds, read once per attempt."""
        if segment not in self.checkpointed:
            self.checkpointed[segment] = rows_checkpointed(self.store, segment)
        return self.checkpointed[segment]

    def on_end(self, hook: Callable[[ActiveAttempt, str], None]) -> None:
        """`hook(attempt, end_reason)` after each attempt ends (its usage read, a failed one's log shown)."""
        self.after_end.append(hook)

    def hold_launches(self) -> None:
        """Launches from now on are planned, to be made together (`launch_batch.py`)."""
        self.batch = []

    def release_launches(self) -> list[PlannedLaunch]:
        planned, self.batch = self.batch or [], None
        return planned

    def clock_rate(self, wall_rows_per_s: float) -> float:
        """A heartbeat's rows/s (wall) as rows per cloud second."""
        return wall_rows_per_s / self.clock.scale

    # -- launching ----------------------------------------------------------------------------------------

    def launch(self, row: SegmentRow, market: Market, reason: str) -> None:
        """Ask the budget guard, record the attempt, then call the fleet."""
        job, segment = self.job_id, row.segment_id
        attempt_id = f"{job}/{segment}/{row.attempts + 1}"
        label = attempt_label(attempt_id, market)
        try:  # once: a coordinator that died right after this call does not reserve the launch twice
            self.guard.authorize_once(label, self.estimate_usd(segment, market))
        except BudgetGuardExceeded as refusal:
            self.state.set_launching(job, segment, market=market, reason=reason)
            self.state.set_failed_launch(job, segment, reason=f"budget guard: {refusal}")
            self.fail(
                segment, "budget refusals are not retried", f"budget guard refused the launch: {refusal}"
            )
            log.error("%s: budget guard refused %s: %s", segment, attempt_id, refusal)
            return
        crash_point("after-authorize")
        self.state.set_launching(job, segment, market=market, reason=reason)
        kind = self.quotes.first_type  # until EC2 says which pool it landed in
        self.state.add_attempt(attempt_id, job, segment, market=market, instance_type=kind)
        if self.batch is not None:  # made with the cycle's other launches (`launch_batch.py`)
            self.batch.append(PlannedLaunch(row, attempt_id, market, label))
            return
        self.call_launch(row, attempt_id, market, label)

    def call_launch(
        self, row: SegmentRow, attempt_id: str, market: str, label: str, *, repeat: bool = False
    ) -> None:
        planned = PlannedLaunch(row, attempt_id, market, label)
        try:
            outcome: Placement | LaunchError | AwsSetupError = self.fleet.launch_placed(
                self.request(planned), repeat=repeat
            )
        except (LaunchError, AwsSetupError) as error:
            outcome = error
        self.settle(planned, outcome)

    def request(self, planned: PlannedLaunch) -> LaunchRequest:
        row = planned.row
        return LaunchRequest(
            job_id=self.job_id,
            segment_id=row.segment_id,
            attempt_id=planned.attempt_id,
            market=planned.market,
            start=row.start,
            stop=row.stop,
            input_key=row.input_key or self.spec.input_key,
            tuning=self.spec.tuning,
        )

    def settle(self, planned: PlannedLaunch, outcome: Placement | LaunchError | AwsSetupError) -> None:
        """Record what the fleet answered: the instance id, or the error (an AwsSetupError raised again)."""
        segment, attempt_id, market, label = planned.row.segment_id, *planned[1:]
        if isinstance(outcome, LaunchError):
            self._launch_failed(segment, attempt_id, market, label, outcome)
            return
        if isinstance(outcome, TeardownRefused):  # launched, but may not be ended: on the record, then stop
            self._launched(planned, Placement(outcome.instance_id, outcome.instance_type, outcome.zone))
            raise outcome
        if isinstance(outcome, AwsSetupError):  # a permission or quota: the controller stops the job
            self._end_unlaunched(attempt_id, label)
            self.state.set_failed_launch(self.job_id, segment, reason=f"{market}: {outcome}")
            self.fail(segment, "the account refused the launch", str(outcome))
            raise outcome
        crash_point("after-run-instances")
        self._launched(planned, outcome)

    def _launched(self, planned: PlannedLaunch, placement: Placement) -> None:
        segment, attempt_id, market, label = planned.row.segment_id, *planned[1:]
        instance_id, kind, zone, launch_time = placement
        launched = self.clock.at(launch_time) if launch_time else self.clock.now()  # found again: EC2's
        kind = kind or self.quotes.first_type  # "": the template's own type
        self.state.attempt_launched(
            attempt_id, instance_id=instance_id, launched_at=launched, instance_type=kind
        )
        active = ActiveAttempt(segment, attempt_id, instance_id, market, launch_time or time.time())
        self.active[segment] = Tracked(active, self.index[segment], launched, label, kind, zone)
        log.info("%s: launched %s (%s %s) on %s as %s", segment, instance_id, kind, zone, market, attempt_id)

    def _end_unlaunched(self, attempt_id: str, label: str, reason: str = "failed-launch") -> None:
        self.state.attempt_ended(
            attempt_id,
            ended_at=self.clock.now(),
            end_reason=reason,
            rows_kept=0,
            rows_wasted=0,
            billed_seconds=0,
            cost_usd=0.0,
        )
        self.guard.record_actual(label, 0.0)

    def _launch_failed(
        self, segment: str, attempt_id: str, market: str, label: str, error: LaunchError
    ) -> None:
        now = self.clock.now()
        throttled = isinstance(error, ThrottledError)  # no verdict on the market: not a launch failure
        self._end_unlaunched(attempt_id, label, "throttled" if throttled else "failed-launch")
        self.state.set_failed_launch(
            self.job_id, segment, reason=f"{market}: {error} (history: {error.history})"
        )
        self.not_before[segment] = now + self.spec.relaunch_backoff
        if market == "spot" and isinstance(error, CapacityError):
            self.spot_unavailable_until = now + self.spec.relaunch_backoff
        if not isinstance(error, CapacityError | ThrottledError):  # a bad template: retrying will not help
            self.fail(segment, "launch error that is not about capacity", str(error))
        log.warning("%s: launch of %s on %s failed: %s", segment, attempt_id, market, error)

    def estimate_usd(self, segment: str, market: str) -> float:
        """What the next attempt may cost: the rows left at the best rate seen (or the planned one), plus
        a minute of boot and the pricing margin, at the dearest of the job's types (its pool is not known)."""
        row = self.state.segment(self.job_id, segment)
        left = (row.stop - row.start) - rows_checkpointed(self.store, segment)
        seconds = 60.0 + left / max(self.best_rate_seen(), 1e-9)
        return cost_usd(self.quotes.dearest(market).rate_usd_per_hour, seconds) * (1 + ESTIMATE_MARGIN)

    def best_rate_seen(self) -> float:
        """Rows per cloud second: the best any ended attempt of the job had, else the planned rate."""
        seen = [a.rows_per_s for a in self.state.attempts(self.job_id) if a.rows_per_s]
        return max(seen) if seen else self.spec.planned_rows_per_s

    # -- ending -------------------------------------------------------------------------------------------

    def end(self, segment: str, end_reason: str, view: AttemptView | None) -> None:
        """Terminate and confirm, then price the attempt and settle its budget reservation."""
        tracked = self.active.pop(segment)
        self.switching.pop(segment, None)
        self.checkpointed.pop(segment, None)
        self.close(tracked, end_reason, view)

    def close(self, tracked: Tracked, end_reason: str, view: AttemptView | None) -> None:
        """`end` for an attempt that is no longer its segment's active one (a warned, leaving one)."""
        segment, attempt = tracked.active.segment_id, tracked.active
        self.fleet.terminate_and_confirm([attempt.instance_id])
        crash_point("after-terminate")
        ended = self.instance_end(tracked, view)
        rows_in_checkpoint = rows_checkpointed(self.store, segment)
        earlier = self.state.attempts(self.job_id, segment)
        kept_before = sum(a.rows_kept for a in earlier if a.ended_at is not None)
        beat = view.heartbeat if view else self.monitor.latest_heartbeat(attempt.attempt_id)
        rows_seen = beat.rows_done if beat else rows_in_checkpoint
        quote = self.quotes.of(attempt.market, tracked.instance_type)
        seconds = billed_seconds(quote.billing, tracked.launched_cloud, ended)
        cost = cost_usd(quote.rate_usd_per_hour, seconds)
        self.state.attempt_ended(
            attempt.attempt_id,
            ended_at=ended,
            end_reason=end_reason,
            rows_kept=max(0, rows_in_checkpoint - kept_before),
            rows_wasted=max(0, rows_seen - rows_in_checkpoint),
            rows_per_s=self.clock_rate(beat.rows_per_s if beat else 0.0),
            billed_seconds=seconds,
            cost_usd=cost,
            heartbeat_puts=beat.beats if beat else 0,
        )
        crash_point("before-record-actual")
        self.guard.record_actual(tracked.budget_label, cost)
        self.monitor.forget(attempt.attempt_id)
        for hook in self.after_end:
            hook(attempt, end_reason)
        log.info(
            "%s %s %s ended (%s) after %.0f cloud s: $%.4f",
            segment,
            attempt.attempt_id,
            attempt.instance_id,
            end_reason,
            ended - tracked.launched_cloud,
            cost,
        )

    def instance_end(self, tracked: Tracked, view: AttemptView | None) -> float:
        """When the instance stopped billing, in cloud seconds: now, unless it had already shut itself down
        after its worker's last heartbeat (the boot script powers off when the worker exits), as when it
        ended while the coordinator was down: then the last heartbeat's time, not the time it was noticed."""
        now = self.clock.now()
        beat = view.heartbeat if view else None
        if view is None or beat is None or beat.state not in FINAL_BEATS:
            return now
        if view.instance_state is not None and view.instance_state not in GONE_STATES:
            return now  # still running: it bills until the terminate just confirmed
        return max(tracked.launched_cloud, min(now, self.clock.at(beat.ts)))

    # -- reading ------------------------------------------------------------------------------------------

    def history(self, segment: str) -> SegmentHistory:
        attempts = [a for a in self.state.attempts(self.job_id, segment) if a.ended_at is not None]

        def count(market: str, reasons: tuple[str, ...]) -> int:
            return sum(a.market == market and a.end_reason in reasons for a in attempts)

        last: Market | None = attempts[-1].market if attempts else None
        leaving = self.leaving.get(segment)  # warned: an interruption already, though not yet ended
        if leaving is not None:
            last = "spot" if leaving.active.market == "spot" else "on-demand"
        return SegmentHistory(
            spot_interruptions=count("spot", ("interrupted", "lost"))
            + (last == "spot" and leaving is not None),
            spot_launch_failures=count("spot", ("failed-launch",)),
            on_demand_launch_failures=count("on-demand", ("failed-launch",)),
            worker_crashes=count("spot", ("crashed",)) + count("on-demand", ("crashed",)),
            silent_boots=sum(a.end_reason in SILENT_ENDS and a.heartbeat_puts == 0 for a in attempts),
            last_market=last,
        )
