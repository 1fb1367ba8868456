"""Launching attempts: the budget guard first, the state file next, then EC2, and what EC2 answered.

A launch is one whole move: the guard reserves the attempt's estimate (refused: the segment fails, with the
guard's figures as its cause), the segment goes LAUNCHING and the attempt is recorded (its id is the
launch's idempotency token), then the fleet tries the job's capacity pools. A placed instance is recorded
and handed to the segment table to watch; a capacity error or throttling leaves the segment FAILED_LAUNCH
for the policy to retry after `relaunch_backoff` (a spot capacity error makes spot unavailable that long);
any other launch error fails the segment (a bad template: retrying will not help); a permission or quota
(`AwsSetupError`) fails it and is raised for the controller to stop the job.

A cycle's launches are made together (`together()`): the policy pass decides one segment after another
(the guard asked and the state written for each, in order), then the RunInstances calls go out at once, at
most `LAUNCHERS` in flight, as EC2 Fleet and Karpenter launch many instances per request, and their answers
are recorded one by one. A cycle that starts 1,000 segments waits for the slowest of its calls, not for
their sum; botocore's adaptive retry mode slows the client if EC2 throttles the burst.

Usage::

    launcher = Launcher(spec=spec, state=state, fleet=fleet, store=store, guard=guard, quotes=quotes,
                        clock=clock, table=table, book=book)
    with launcher.together():                     # launcher.launch(...) inside only plans the call
        launcher.launch(row, "spot", "initial launch on spot (hybrid)")
    # here every planned launch has been made and recorded (an AwsSetupError raised after all are)
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from coordinator.cost.billing import cost_usd
from coordinator.cost.budget import BudgetGuard
from coordinator.cost.job_quotes import JobQuotes
from coordinator.cost.pricing import ESTIMATE_MARGIN, Market
from coordinator.errors import (
    AwsSetupError,
    BudgetGuardExceeded,
    CapacityError,
    LaunchError,
    TeardownRefused,
    ThrottledError,
)
from coordinator.job.aws import Fleet, Placement
from coordinator.job.core import (
    AttemptRow,
    CloudClock,
    CoordinatorState,
    JobSpec,
    LaunchRequest,
    SegmentRow,
    budget_label,
    crash_point,
)
from coordinator.job.loop.attempt_book import AttemptBook
from coordinator.job.loop.segment_table import SegmentTable
from inference.checkpoint import rows_checkpointed
from inference.storage import ObjectStore

log = logging.getLogger("coordinator")
LAUNCHERS = 8  # RunInstances calls in flight at once
Outcome = Placement | LaunchError | AwsSetupError  # the instance and its pool, or why there is none
BOOT_ESTIMATE_SECONDS = 60.0  # cloud: a launch's estimate adds a minute of boot to the rows left


class Launcher:
    def __init__(
        self,
        *,
        spec: JobSpec,
        state: CoordinatorState,
        fleet: Fleet,
        store: ObjectStore,
        guard: BudgetGuard,
        quotes: JobQuotes,
        clock: CloudClock,
        table: SegmentTable,
        book: AttemptBook,
    ) -> None:
        self._spec, self._state, self._fleet, self._store = spec, state, fleet, store
        self._guard, self._quotes, self._clock = guard, quotes, clock
        self._table, self._book = table, book
        self._not_before: dict[str, float] = {}  # segment -> cloud time of its next launch try
        self._spot_unavailable_until = 0.0  # cloud: a spot launch failed for capacity; none until then
        self._planned: list[AttemptRow] | None = None  # launches held to be made together, when a list

    # -- what the policy pass asks ------------------------------------------------------------------------

    def backing_off(self, segment: str) -> bool:
        """A launch of the segment failed a moment ago: not again before its backoff ends."""
        return self._clock.now() < self._not_before.get(segment, 0.0)

    def spot_available(self) -> bool:
        """No spot launch of the job failed for capacity within the backoff."""
        return self._clock.now() >= self._spot_unavailable_until

    def avoid_pool_of(self, attempt: AttemptRow) -> None:
        """Its pool (type in zone) tried last for spot a while: its capacity is at risk (a rebalance)."""
        zone = attempt.zone  # known from its launch; not for an attempt launched before zones were kept
        if not zone and attempt.instance_id is not None:
            try:
                info = self._fleet.instances([attempt.instance_id]).get(attempt.instance_id)
            except LaunchError as error:  # EC2 busy: the replacement may land in the same pool, no worse
                log.warning("zone of %s unknown (%s); not avoided", attempt.instance_id, error)
                return
            zone = info.zone if info is not None else ""
        if zone:
            self._fleet.pools.avoid("spot", attempt.instance_type, zone)

    # -- launching ----------------------------------------------------------------------------------------

    def launch(self, row: SegmentRow, market: Market, reason: str) -> None:
        """Ask the budget guard, record the attempt, then call the fleet (or plan the call: `together`)."""
        job, segment = self._spec.job_id, row.segment_id
        attempt_id = f"{job}/{segment}/{row.attempts + 1}"
        label = budget_label(attempt_id, market)
        try:  # once: a coordinator that died right after this call does not reserve the launch twice
            self._guard.authorize_once(label, self.estimate_usd(segment, market))
        except BudgetGuardExceeded as refusal:
            self._state.set_launching(job, segment, market=market, reason=reason)
            self._state.set_failed_launch(job, segment, reason=f"budget guard: {refusal}")
            self._table.fail(
                segment, "budget refusals are not retried", f"budget guard refused the launch: {refusal}"
            )
            log.error("%s: budget guard refused %s: %s", segment, attempt_id, refusal)
            return
        crash_point("after-authorize")
        self._state.set_launching(job, segment, market=market, reason=reason)
        kind = self._quotes.first_type  # until EC2 says which pool it landed in
        attempt = self._state.add_attempt(attempt_id, job, segment, market=market, instance_type=kind)
        if self._planned is not None:  # made with the cycle's other launches
            self._planned.append(attempt)
            return
        self._make([attempt])

    def repeat(self, attempt: AttemptRow) -> None:
        """After a restart: an attempt recorded but never told launched. Its call is made again with the
        same id: the fleet finds the instance if the first call had made one."""
        log.info("%s: repeating the launch call of %s", attempt.segment_id, attempt.attempt_id)
        self._make([attempt], repeat=True)

    @contextmanager
    def together(self, launchers: int = LAUNCHERS) -> Iterator[None]:
        """Launches inside only plan their call; on the way out every call is made, at most `launchers` at
        once, and every answer recorded in plan order (an `AwsSetupError` raised after all are)."""
        self._planned = []
        try:
            yield
        finally:
            planned, self._planned = self._planned, None
        self._make(planned, launchers=launchers)

    def _make(self, planned: list[AttemptRow], *, repeat: bool = False, launchers: int = LAUNCHERS) -> None:
        def call(request: LaunchRequest) -> Outcome:
            try:
                return self._fleet.launch_placed(request, repeat=repeat)
            except (LaunchError, AwsSetupError) as error:
                return error

        requests = [self._request(attempt) for attempt in planned]  # the state file is this thread's
        if len(requests) <= 1:
            outcomes = [call(request) for request in requests]
        else:
            with ThreadPoolExecutor(max_workers=min(launchers, len(requests))) as pool:
                outcomes = list(pool.map(call, requests))
        refused: AwsSetupError | None = None
        for attempt, outcome in zip(planned, outcomes, strict=True):
            try:
                self._settle(attempt, outcome)
            except AwsSetupError as error:  # every answer recorded first: instances that exist are tracked
                refused = refused or error
        if refused is not None:
            raise refused

    def _request(self, attempt: AttemptRow) -> LaunchRequest:
        row = self._table.segment(attempt.segment_id)
        return LaunchRequest(
            job_id=self._spec.job_id,
            segment_id=row.segment_id,
            attempt_id=attempt.attempt_id,
            market=attempt.market,
            start=row.start,
            stop=row.stop,
            input_key=row.input_key or self._spec.input_key,
            tuning=self._spec.tuning,
        )

    def _settle(self, attempt: AttemptRow, outcome: Outcome) -> None:
        """Record what the fleet answered: the instance, or the error (an AwsSetupError raised again)."""
        segment = attempt.segment_id
        if isinstance(outcome, LaunchError):
            self._launch_failed(attempt, outcome)
            return
        if isinstance(outcome, TeardownRefused):  # launched, but may not be ended: on the record, then stop
            self._launched(attempt, Placement(outcome.instance_id, outcome.instance_type, outcome.zone))
            raise outcome
        if isinstance(outcome, AwsSetupError):  # a permission or quota: the controller stops the job
            self._book.end_unlaunched(attempt, "failed-launch")
            self._state.set_failed_launch(self._spec.job_id, segment, reason=f"{attempt.market}: {outcome}")
            self._table.fail(segment, "the account refused the launch", str(outcome))
            raise outcome
        crash_point("after-run-instances")
        self._launched(attempt, outcome)

    def _launched(self, attempt: AttemptRow, placement: Placement) -> None:
        instance_id, kind, zone, launch_time = placement
        launched = self._clock.at(launch_time) if launch_time else self._clock.now()  # found again: EC2's
        row = self._state.attempt_launched(
            attempt.attempt_id,
            instance_id=instance_id,
            launched_at=launched,
            instance_type=kind or self._quotes.first_type,  # "": the template's own type
            zone=zone,
        )
        self._table.track(row)
        log.info(
            "%s: launched %s (%s %s) on %s as %s",
            row.segment_id,
            instance_id,
            row.instance_type,
            zone,
            row.market,
            row.attempt_id,
        )

    def _launch_failed(self, attempt: AttemptRow, error: LaunchError) -> None:
        now, segment, market = self._clock.now(), attempt.segment_id, attempt.market
        throttled = isinstance(error, ThrottledError)  # no verdict on the market: not a launch failure
        self._book.end_unlaunched(attempt, "throttled" if throttled else "failed-launch")
        self._state.set_failed_launch(
            self._spec.job_id, segment, reason=f"{market}: {error} (history: {error.history})"
        )
        self._not_before[segment] = now + self._spec.relaunch_backoff
        if market == "spot" and isinstance(error, CapacityError):
            self._spot_unavailable_until = now + self._spec.relaunch_backoff
        if not isinstance(error, CapacityError | ThrottledError):  # a bad template: retrying will not help
            self._table.fail(segment, "launch error that is not about capacity", str(error))
        log.warning("%s: launch of %s on %s failed: %s", segment, attempt.attempt_id, market, error)

    def estimate_usd(self, segment: str, market: str) -> float:
        """What the next attempt may cost: the rows left at the best rate seen (or the planned one), plus
        a minute of boot and the pricing margin, at the dearest of the job's types (its pool is not known)."""
        row = self._table.segment(segment)
        left = (row.stop - row.start) - rows_checkpointed(self._store, segment, row.rows)
        rate = self.best_rate_seen()
        seconds = BOOT_ESTIMATE_SECONDS + left / max(rate, 1e-9)
        return cost_usd(self._quotes.dearest(market).rate_usd_per_hour, seconds) * (1 + ESTIMATE_MARGIN)

    def best_rate_seen(self) -> float:
        """Rows per cloud second of one instance: the best any ended attempt of the job had, else the
        planned rate."""
        seen = [a.rows_per_s for a in self._table.attempts() if a.rows_per_s]
        return max(seen) if seen else self._spec.planned_rows_per_s
