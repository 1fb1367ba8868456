"""The coordinator's control loop: launch a worker per segment, watch it, recover it, finish the job.

One cycle, every `cycle_seconds` (wall):

1. observe every active attempt (monitor: heartbeat + instance state) and act on what it says: first
   heartbeat -> RUNNING; done -> DONE; draining (a notice or SIGTERM, checkpoint written) -> INTERRUPTED;
   lost (stale heartbeat, instance gone, never booted) -> LOST -> INTERRUPTED; failed -> FAILED. An attempt
   that ends is terminated and confirmed gone, priced, and its actual cost recorded with the budget guard;
2. launch: PENDING segments on the market `policy.launch()` picks; INTERRUPTED and FAILED_LAUNCH segments
   as `policy.recover()` decides (or FAILED when it gives up). Every launch asks the budget guard first.
   A deadline policy (`deadline_policies.py`) is asked `choose()` instead, for every segment without an
   instance (spot, on-demand, or wait) and for every segment running on on-demand: when it says spot, the
   on-demand instance is terminated, its worker drains (SIGTERM: checkpoint, heartbeat `draining`) and the
   segment is relaunched on spot from that checkpoint ("switched", not an interruption);
3. log a status line per active segment every `status_every` cloud seconds.

The job ends when every segment is DONE or FAILED; then every instance of the job is terminated and the
re-listing must come back empty (`LeakError` otherwise). Everything the loop decides goes through the SQLite
state first, so a coordinator killed at any point and started again with the same job id carries on:
`reconcile()` adopts instances that are still alive, recovers those that are gone, and repeats an
interrupted launch call with the same attempt id (the fleet adopts instead of launching twice).

Usage::

    controller = Controller(spec=spec, state=state, fleet=fleet, store=job_store, guard=guard,
                            quotes=quotes, clock=clock)
    outcome = controller.run()          # JobOutcome: segments done/failed, attempts priced
"""

from __future__ import annotations

import logging
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from coordinator.cost.billing import billed_seconds, cost_usd
from coordinator.cost.budget import BudgetGuard
from coordinator.cost.ledger import AttemptRecord
from coordinator.cost.pricing import ESTIMATE_MARGIN, PriceQuote
from coordinator.errors import BudgetGuardExceeded, CapacityError, DeadlineRequired, LaunchError, LeakError
from coordinator.job import state as states
from coordinator.job.clock import CloudClock
from coordinator.job.fleet import Fleet, LaunchRequest
from coordinator.job.monitor import ActiveAttempt, AttemptView, Monitor
from coordinator.job.state import CoordinatorState, SegmentRow
from coordinator.policies.deadline import DeadlinePolicy, DeadlineView
from coordinator.policies.recovery import Cause, Market, RecoveryPolicy, SegmentHistory
from inference.checkpoint import load_checkpoint
from inference.storage import ObjectStore

CYCLE_SECONDS = 5.0  # wall, on AWS: notices give 120 s, so a 5 s look costs little; the simulator shrinks it
HEARTBEAT_TIMEOUT_SECONDS = 30.0  # wall: 15 missed 2-second beats; S3 hiccups last seconds, not this long
BOOT_TIMEOUT_SECONDS = 900.0  # wall: an EC2 boot + image pull + model load is 2-5 minutes; 15 is broken
STATUS_EVERY_SECONDS = 30.0  # cloud: one status line per active instance
RELAUNCH_BACKOFF_SECONDS = 60.0  # cloud: after a failed launch, wait before asking the same market again
# cloud: boot + image + model load before a first row on EC2 (2-5 min), until the job measures it
CHANGEOVER_SECONDS = 300.0
# cloud: a reclaim's cost before its replacement is launched: the worker's 1-s notice poll, the batch in hand,
# its 2-s draining heartbeat, a 5-s cycle. Deadline policies keep this much slack on top of a changeover
RECLAIM_OVERHEAD_SECONDS = 10.0
log = logging.getLogger("coordinator")


@dataclass(frozen=True, slots=True, kw_only=True)
class JobSpec:
    job_id: str
    input_key: str  # the dataset's key in the bucket
    rows: int
    segments: int
    policy: str
    policy_options: dict[str, float] = field(default_factory=dict)
    provider: str = "aws"
    region: str = "us-east-1"
    instance_type: str = "p3.2xlarge"
    planned_rows_per_s: float = 10.0  # cloud rows/s of one instance, for budget estimates before any beat
    cycle_seconds: float = CYCLE_SECONDS
    heartbeat_timeout: float = HEARTBEAT_TIMEOUT_SECONDS
    boot_timeout: float = BOOT_TIMEOUT_SECONDS
    status_every: float = STATUS_EVERY_SECONDS
    relaunch_backoff: float = RELAUNCH_BACKOFF_SECONDS
    deadline_seconds: float | None = None  # cloud seconds from the job's start; deadline policies need one
    changeover_seconds: float = CHANGEOVER_SECONDS  # until the job has seen a first heartbeat
    reclaim_overhead_seconds: float = RECLAIM_OVERHEAD_SECONDS


@dataclass(slots=True)
class Tracked:
    """An attempt the loop is watching."""

    active: ActiveAttempt
    segment_index: int
    launched_cloud: float
    budget_label: str


@dataclass(frozen=True, slots=True)
class SegmentStatus:
    """One row of the progress table."""

    segment_id: str
    state: str
    market: str
    rows_done: int
    rows_total: int
    rows_per_s: float
    attempts: int
    cost_usd: float


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
        policy: RecoveryPolicy,
        guard: BudgetGuard,
        quotes: dict[str, PriceQuote],
        clock: CloudClock,
        on_cycle: Callable[[list[SegmentStatus]], None] | None = None,
    ) -> None:
        self.spec = spec
        self.state = state
        self.fleet = fleet
        self.store = store
        self.policy = policy
        self.guard = guard
        self.quotes = quotes
        self.clock = clock
        self.on_cycle = on_cycle
        self.monitor = Monitor(
            store,
            fleet,
            spec.job_id,
            heartbeat_timeout=spec.heartbeat_timeout,
            boot_timeout=spec.boot_timeout,
        )
        if isinstance(policy, DeadlinePolicy) and spec.deadline_seconds is None:
            raise DeadlineRequired(f"policy {policy.name!r} needs the job's deadline (deadline_seconds)")
        self.deadline_policy = policy if isinstance(policy, DeadlinePolicy) else None
        self.active: dict[str, Tracked] = {}
        self.switching: dict[str, float] = {}  # segment -> wall time its on-demand instance was told to stop
        self.boots_seen: list[float] = []  # cloud seconds from launch to first heartbeat
        self.spot_unavailable_until = 0.0  # cloud: a spot launch failed for capacity; assume none until then
        # segment -> rows its checkpoint holds, read once per attempt
        self._checkpointed: dict[str, int] = {}
        self.not_before: dict[str, float] = {}  # segment -> cloud time of its next launch try
        self.failures: dict[str, str] = {}
        self._next_status = 0.0
        self._index = {row.segment_id: i for i, row in enumerate(state.segments(spec.job_id))}

    # -- the loop ---------------------------------------------------------------------------------------------

    def run(self) -> JobOutcome:
        started_wall = time.time()
        started_cloud = self.clock.now()
        self.reconcile()
        try:
            while not self._finished():
                self.cycle()
                time.sleep(self.spec.cycle_seconds)
        except BaseException:
            self.abandon("coordinator stopped")
            raise
        self.confirm_nothing_left()
        attempts = self.attempt_records()
        done = sum(row.state == states.DONE for row in self.state.segments(self.spec.job_id))
        failures = {
            row.segment_id: self.failures.get(row.segment_id, self._last_reason(row.segment_id))
            for row in self.state.segments(self.spec.job_id)
            if row.state == states.FAILED
        }
        return JobOutcome(
            self.spec.job_id, len(self._index), done, failures, attempts, started_cloud, self.clock.now(),
            time.time() - started_wall, self.fleet.api_retries,
        )  # fmt: skip

    def cycle(self) -> None:
        now_wall = time.time()
        for view in self.monitor.observe([t.active for t in self.active.values()], now=now_wall):
            self._act(view)
        self._launch_waiting()
        self._status()

    def _finished(self) -> bool:
        return all(row.state in states.TERMINAL for row in self.state.segments(self.spec.job_id))

    # -- acting on what the monitor saw -----------------------------------------------------------------------

    def _act(self, view: AttemptView) -> None:
        job, segment = self.spec.job_id, view.attempt.segment_id
        current = self.state.segment(job, segment).state
        switching = segment in self.switching
        if (
            view.verdict == "lost"
            and switching
            and time.time() - self.switching[segment] < self.spec.heartbeat_timeout
        ):
            return  # terminated on purpose: its drain heartbeat is on the way
        if view.verdict in ("running", "done", "draining", "failed") and current == states.LAUNCHING:
            self.state.set_running(job, segment, reason=f"first heartbeat from {view.attempt.instance_id}")
            self.boots_seen.append(self.clock.now() - self.active[segment].launched_cloud)
        if view.verdict == "done":
            self.state.set_done(job, segment, reason=view.reason)
            self._end_attempt(segment, "done", view)
        elif view.verdict == "draining":
            self.state.set_draining(job, segment, reason=view.reason)
            self._end_attempt(segment, "switched" if switching else "interrupted", view)
            why = "switched to spot" if switching else "drained"
            self.state.set_interrupted(job, segment, reason=f"{why}: checkpoint written, instance released")
        elif view.verdict == "lost":
            self.state.set_lost(job, segment, reason=view.reason)
            self._end_attempt(segment, "lost", view)
            self.state.set_interrupted(job, segment, reason="lost: resuming from the last checkpoint")
        elif view.verdict == "failed":
            self.state.set_failed(job, segment, reason=view.reason)
            self.failures[segment] = view.reason
            self._end_attempt(segment, "failed", view)

    def _end_attempt(self, segment: str, end_reason: str, view: AttemptView | None) -> None:
        """Terminate and confirm, then price the attempt and settle its budget reservation."""
        tracked = self.active.pop(segment)
        self.switching.pop(segment, None)
        self._checkpointed.pop(segment, None)
        attempt = tracked.active
        self.fleet.terminate_and_confirm([attempt.instance_id])
        ended = self.clock.now()
        checkpoint = load_checkpoint(self.store, segment)
        rows_checkpointed = checkpoint.rows_done if checkpoint else 0
        kept_before = sum(a["rows_kept"] for a in self.state.attempts(self.spec.job_id, segment) if a["ended_at"] is not None)  # fmt: skip
        beat = view.heartbeat if view else self.monitor.latest_heartbeat(attempt.attempt_id)
        rows_seen = beat.rows_done if beat else rows_checkpointed
        quote = self.quotes[attempt.market]
        seconds = billed_seconds(quote.billing, tracked.launched_cloud, ended)
        cost = cost_usd(quote.rate_usd_per_hour, seconds)
        self.state.attempt_ended(
            attempt.attempt_id, ended_at=ended, end_reason=end_reason,
            rows_kept=max(0, rows_checkpointed - kept_before), rows_wasted=max(0, rows_seen - rows_checkpointed),
            rows_per_s=self.clock_rate(beat.rows_per_s if beat else 0.0), billed_seconds=seconds, cost_usd=cost,
        )  # fmt: skip
        self.guard.record_actual(tracked.budget_label, cost)
        self.monitor.forget(attempt.attempt_id)
        log.info("%s %s %s ended (%s) after %.0f cloud s: $%.4f", segment, attempt.attempt_id,
                 attempt.instance_id, end_reason, ended - tracked.launched_cloud, cost)  # fmt: skip

    def clock_rate(self, wall_rows_per_s: float) -> float:
        """A heartbeat's rows/s (wall) as rows per cloud second."""
        return wall_rows_per_s / self.clock.scale

    # -- launching --------------------------------------------------------------------------------------------

    def _launch_waiting(self) -> None:
        if self.deadline_policy is not None:
            self._decide_by_deadline(self.deadline_policy)
            return
        now = self.clock.now()
        for row in self.state.segments(self.spec.job_id):
            if row.state == states.PENDING:
                market = self.policy.launch(self._index[row.segment_id], len(self._index))
                self._launch(row, market, f"initial launch on {market} ({self.policy.name})")
            elif row.state in (states.INTERRUPTED, states.FAILED_LAUNCH):
                if now < self.not_before.get(row.segment_id, 0.0):
                    continue
                cause: Cause = "interrupted" if row.state == states.INTERRUPTED else "failed-launch"
                decision = self.policy.recover(self.history(row.segment_id), cause)
                if decision.market is None:
                    self.state.set_failed(self.spec.job_id, row.segment_id, reason=decision.reason)
                    self.failures[row.segment_id] = decision.reason
                else:
                    self._launch(row, decision.market, decision.reason)

    def _decide_by_deadline(self, policy: DeadlinePolicy) -> None:
        now = self.clock.now()
        speed = self.job_speed()  # the same for every segment in this pass
        for row in self.state.segments(self.spec.job_id):
            segment = row.segment_id
            if row.state in (states.PENDING, states.INTERRUPTED, states.FAILED_LAUNCH):
                view = self.deadline_view(row, running=None, speed=speed)
                market = policy.choose(view)
                if market is None:
                    continue  # wait for spot: the slack allows it
                history = self.history(segment)
                failed_here = row.state == states.FAILED_LAUNCH and history.last_market == market
                if failed_here and now < self.not_before.get(segment, 0.0):
                    continue  # this market refused this segment a moment ago
                exhausted = RecoveryPolicy.on_demand_exhausted(history)
                if exhausted is not None:
                    self.state.set_failed(self.spec.job_id, segment, reason=exhausted.reason)
                    self.failures[segment] = exhausted.reason
                    continue
                self._launch(row, market, f"{policy.name}: {market} (slack {view.slack_s:.0f} s)")
            elif row.state == states.RUNNING and segment not in self.switching:
                tracked = self.active.get(segment)
                if tracked is None or tracked.active.market != "on-demand":
                    continue
                view = self.deadline_view(row, running="on-demand", speed=speed)
                if policy.choose(view) == "spot":
                    self.switching[segment] = time.time()
                    self.fleet.terminate([tracked.active.instance_id])
                    log.info("%s: back to spot (slack %.0f s): stopping %s, it drains to its checkpoint",
                             segment, view.slack_s, tracked.active.instance_id)  # fmt: skip

    def per_instance_rate(self) -> float:
        """Rows per cloud second of one instance: the running workers' median, else the best seen, else planned."""
        beats = [self.monitor.latest_heartbeat(t.active.attempt_id) for t in self.active.values()]
        running = [b.rows_per_s for b in beats if b is not None and b.rows_per_s > 0]
        if running:
            return self.clock_rate(statistics.median(running))
        seen = [a["rows_per_s"] for a in self.state.attempts(self.spec.job_id) if a["rows_per_s"]]
        return max(seen) if seen else self.spec.planned_rows_per_s

    def job_speed(self) -> tuple[float, float]:
        """(rows per cloud second of one instance, changeover in cloud seconds): measured, else planned."""
        changeover = statistics.median(self.boots_seen) if self.boots_seen else self.spec.changeover_seconds
        return max(self.per_instance_rate(), 1e-9), changeover

    def deadline_view(
        self, row: SegmentRow, *, running: Market | None, speed: tuple[float, float]
    ) -> DeadlineView:
        assert self.spec.deadline_seconds is not None
        rate, changeover = speed
        segment = row.segment_id
        now = self.clock.now()
        tracked = self.active.get(segment)
        beat = self.monitor.latest_heartbeat(tracked.active.attempt_id) if tracked else None
        if beat is not None:
            rows_done = beat.rows_done
        else:
            if segment not in self._checkpointed:
                checkpoint = load_checkpoint(self.store, segment)
                self._checkpointed[segment] = checkpoint.rows_done if checkpoint else 0
            rows_done = self._checkpointed[segment]
        boot_left = max(0.0, changeover - (now - tracked.launched_cloud)) if tracked and beat is None else 0.0
        return DeadlineView(
            now_s=now - self.clock.origin, deadline_s=self.spec.deadline_seconds,
            work_left_s=(row.stop - row.start - rows_done) / rate, changeover_s=changeover,
            tick_s=self.clock.cloud(self.spec.cycle_seconds), spot_available=now >= self.spot_unavailable_until,
            running=running, boot_left_s=boot_left, loss_s=self.spec.reclaim_overhead_seconds,
            total_work_s=(row.stop - row.start) / rate,
        )  # fmt: skip

    def history(self, segment: str) -> SegmentHistory:
        attempts = [a for a in self.state.attempts(self.spec.job_id, segment) if a["ended_at"] is not None]

        def count(market: str, reasons: tuple[str, ...]) -> int:
            return sum(a["market"] == market and a["end_reason"] in reasons for a in attempts)

        last: Market | None = attempts[-1]["market"] if attempts else None
        return SegmentHistory(
            spot_interruptions=count("spot", ("interrupted", "lost")),
            spot_launch_failures=count("spot", ("failed-launch",)),
            on_demand_launch_failures=count("on-demand", ("failed-launch",)),
            last_market=last,
        )

    def estimate_usd(self, segment: str, market: str) -> float:
        """What the next attempt may cost: the rows left at the best rate seen (or the planned one), plus
        a minute of boot and the pricing margin."""
        row = self.state.segment(self.spec.job_id, segment)
        checkpoint = load_checkpoint(self.store, segment)
        left = (row.stop - row.start) - (checkpoint.rows_done if checkpoint else 0)
        seen = [a["rows_per_s"] for a in self.state.attempts(self.spec.job_id) if a["rows_per_s"]]
        rate = max(seen) if seen else self.spec.planned_rows_per_s
        seconds = 60.0 + left / max(rate, 1e-9)
        return cost_usd(self.quotes[market].rate_usd_per_hour, seconds) * (1 + ESTIMATE_MARGIN)

    def _launch(self, row: SegmentRow, market: str, reason: str) -> None:
        job, segment = self.spec.job_id, row.segment_id
        number = row.attempts + 1
        attempt_id = f"{job}/{segment}/{number}"
        label = f"{attempt_id} {market}"
        try:
            self.guard.authorize(label, self.estimate_usd(segment, market))
        except BudgetGuardExceeded as refusal:
            self.state.set_launching(job, segment, market=market, reason=reason)
            self.state.set_failed_launch(job, segment, reason=f"budget guard: {refusal}")
            self.state.set_failed(job, segment, reason="budget refusals are not retried")
            self.failures[segment] = f"budget guard refused the launch: {refusal}"
            log.error("%s: budget guard refused %s: %s", segment, attempt_id, refusal)
            return
        self.state.set_launching(job, segment, market=market, reason=reason)
        self.state.add_attempt(attempt_id, job, segment, market=market, instance_type=self.spec.instance_type)
        self._call_launch(row, attempt_id, market, label)

    def _request(self, row: SegmentRow, attempt_id: str, market: str) -> LaunchRequest:
        return LaunchRequest(
            job_id=self.spec.job_id, segment_id=row.segment_id, attempt_id=attempt_id, market=market,
            start=row.start, stop=row.stop, input_key=self.spec.input_key,
        )  # fmt: skip

    def _call_launch(
        self, row: SegmentRow, attempt_id: str, market: str, label: str, *, repeat: bool = False
    ) -> None:
        job, segment = self.spec.job_id, row.segment_id
        try:
            instance_id = self.fleet.launch(self._request(row, attempt_id, market), repeat=repeat)
        except LaunchError as error:
            now = self.clock.now()
            self.state.attempt_ended(attempt_id, ended_at=now, end_reason="failed-launch", rows_kept=0, rows_wasted=0, billed_seconds=0, cost_usd=0.0)  # fmt: skip
            self.guard.record_actual(label, 0.0)
            self.state.set_failed_launch(job, segment, reason=f"{market}: {error} (history: {error.history})")
            self.not_before[segment] = now + self.spec.relaunch_backoff
            if market == "spot" and isinstance(error, CapacityError):
                self.spot_unavailable_until = now + self.spec.relaunch_backoff
            if not isinstance(error, CapacityError):  # a bad template or permissions: retrying will not help
                self.state.set_failed(job, segment, reason="launch error that is not about capacity")
                self.failures[segment] = str(error)
            log.warning("%s: launch of %s on %s failed: %s", segment, attempt_id, market, error)
            return
        launched = self.clock.now()
        self.state.attempt_launched(attempt_id, instance_id=instance_id, launched_at=launched)
        self.active[segment] = Tracked(
            ActiveAttempt(segment, attempt_id, instance_id, market, time.time()),
            self._index[segment], launched, label,
        )  # fmt: skip
        log.info("%s: launched %s on %s as %s", segment, instance_id, market, attempt_id)

    # -- restart, stop, leaks ---------------------------------------------------------------------------------

    def reconcile(self) -> None:
        """After a restart: adopt live instances of open attempts, recover those that are gone."""
        job = self.spec.job_id
        instances = self.fleet.job_instances(job)
        open_attempts = self.state.open_attempts(job)
        for attempt in open_attempts:
            row = self.state.segment(job, attempt["segment_id"])
            label = f"{attempt['attempt_id']} {attempt['market']}"
            if attempt["instance_id"] is None:  # stopped around the launch call: repeat it (adopts if it ran)
                log.info("%s: repeating the launch call of %s", row.segment_id, attempt["attempt_id"])
                self._call_launch(row, attempt["attempt_id"], attempt["market"], label, repeat=True)
                continue
            launched_wall = (
                self.clock.origin + (attempt["launched_at"] - self.clock.origin) / self.clock.scale
            )
            self.active[row.segment_id] = Tracked(
                ActiveAttempt(
                    row.segment_id,
                    attempt["attempt_id"],
                    attempt["instance_id"],
                    attempt["market"],
                    launched_wall,
                ),
                self._index[row.segment_id],
                attempt["launched_at"],
                label,
            )
            info = instances.get(attempt["instance_id"])
            log.info("%s: adopted %s (%s) after a restart", row.segment_id, attempt["instance_id"], info["state"] if info else "not listed")  # fmt: skip
        with_attempt = {a["segment_id"] for a in open_attempts}
        for row in self.state.segments(job):
            if row.segment_id in with_attempt:
                continue
            if row.state == states.LAUNCHING:
                self.state.set_failed_launch(
                    job, row.segment_id, reason="restart: stopped before the launch call"
                )
            elif row.state in (states.RUNNING, states.DRAINING, states.LOST):
                if row.state == states.RUNNING:
                    self.state.set_lost(job, row.segment_id, reason="restart: its attempt had ended")
                self.state.set_interrupted(
                    job, row.segment_id, reason="restart: resuming from the checkpoint"
                )

    def abandon(self, why: str) -> None:
        """On Ctrl-C or a crash of the loop: terminate every instance of the job and confirm."""
        alive = self.fleet.alive(self.spec.job_id)
        if alive:
            log.warning("%s: terminating %d instance(s): %s", why, len(alive), ", ".join(alive))
            self.fleet.terminate_and_confirm(alive)
        for segment in list(self.active):
            self._end_attempt(segment, "terminated", None)

    def confirm_nothing_left(self) -> None:
        alive = self.fleet.alive(self.spec.job_id)
        if alive:
            self.fleet.terminate_and_confirm(alive)
        left = self.fleet.alive(self.spec.job_id)
        if left:
            raise LeakError(f"job {self.spec.job_id}: instances alive after terminate: {', '.join(left)}")
        log.info("job %s: re-listed instances, none of the job is alive", self.spec.job_id)

    # -- reporting --------------------------------------------------------------------------------------------

    def _last_reason(self, segment: str) -> str:
        events = [e for e in self.state.events(self.spec.job_id) if e.segment_id == segment]
        return events[-1].reason if events else "unknown"

    def attempt_records(self) -> list[AttemptRecord]:
        """Every attempt that had an instance, priced (failed launch calls had none and cost nothing)."""
        records = []
        for a in self.state.attempts(self.spec.job_id):
            if a["instance_id"] is None or a["ended_at"] is None:
                continue
            quote = self.quotes[a["market"]]
            records.append(
                AttemptRecord(
                    job_id=self.spec.job_id,
                    segment_id=a["segment_id"],
                    attempt_id=a["attempt_id"],
                    instance_id=a["instance_id"],
                    provider=self.spec.provider,
                    region=self.spec.region,
                    instance_type=a["instance_type"],
                    market=a["market"],
                    gpus=1,
                    rate_usd_per_hour=quote.rate_usd_per_hour,
                    price_source=quote.source,
                    billing=quote.billing.name,
                    launched_at=a["launched_at"],
                    ended_at=a["ended_at"],
                    billed_seconds=a["billed_seconds"],
                    cost_usd=a["cost_usd"],
                    end_reason=a["end_reason"],
                    rows_kept=a["rows_kept"],
                    rows_wasted=a["rows_wasted"],
                    rows_per_s=a["rows_per_s"],
                )
            )
        return records

    def statuses(self) -> list[SegmentStatus]:
        costs: dict[str, float] = {}
        for a in self.state.attempts(self.spec.job_id):
            costs[a["segment_id"]] = costs.get(a["segment_id"], 0.0) + (a["cost_usd"] or 0.0)
        now = self.clock.now()
        rows = []
        for row in self.state.segments(self.spec.job_id):
            tracked = self.active.get(row.segment_id)
            beat = self.monitor.latest_heartbeat(tracked.active.attempt_id) if tracked else None
            running_cost = 0.0
            if tracked:
                quote = self.quotes[tracked.active.market]
                running_cost = cost_usd(quote.rate_usd_per_hour, max(0.0, now - tracked.launched_cloud))
            done_rows = row.stop - row.start if row.state == states.DONE else (beat.rows_done if beat else 0)
            rows.append(
                SegmentStatus(
                    row.segment_id,
                    row.state,
                    row.market or "",
                    done_rows,
                    row.stop - row.start,
                    self.clock_rate(beat.rows_per_s) if beat else 0.0,
                    row.attempts,
                    costs.get(row.segment_id, 0.0) + running_cost,
                )
            )
        return rows

    def _status(self) -> None:
        now = self.clock.now()
        if now < self._next_status and self.on_cycle is None:
            return
        statuses = self.statuses()
        if now >= self._next_status:
            self._next_status = now + self.spec.status_every
            elapsed = now - self.clock.origin
            for s in statuses:
                if s.segment_id in self.active:
                    tracked = self.active[s.segment_id]
                    log.info(
                        "status t=%s %s %s %s %s rows %d/%d %.2f rows/s attempts %d cost $%.4f",
                        _clock_text(elapsed), s.segment_id, tracked.active.instance_id, s.market, s.state,
                        s.rows_done, s.rows_total, s.rows_per_s, s.attempts, s.cost_usd,
                    )  # fmt: skip
        if self.on_cycle is not None:
            self.on_cycle(statuses)


def _clock_text(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    minutes, secs = divmod(int(seconds), 60)
    return f"+{minutes}m{secs:02d}s"
