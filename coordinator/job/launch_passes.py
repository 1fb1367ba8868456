"""Who gets an instance this cycle: the recovery pass and the deadline pass, one per kind of policy.

- `RecoveryPass` (on-demand, spot-only, hybrid): PENDING segments launch on the market `policy.launch()`
  picks; INTERRUPTED and FAILED_LAUNCH segments, once their backoff has passed, as `policy.recover()`
  decides (or FAILED when it gives up).
- `DeadlinePass` (greedy, safety-greedy, uniform-progress, deadline): the policy is asked `choose(view)`
  for every segment without an instance (spot, on-demand, or wait) and for every segment running on
  on-demand: when it says spot, the on-demand instance is terminated, its worker drains (SIGTERM:
  checkpoint, heartbeat `draining`) and the segment is relaunched on spot from that checkpoint
  ("switched", not an interruption).

Every launch goes through the attempt book, which asks the budget guard first.
"""

from __future__ import annotations

import logging
import statistics
from typing import Protocol

from coordinator.cost.pricing import Market
from coordinator.job.attempts import AttemptBook
from coordinator.job.state_schema import SegmentRow, SegmentState
from coordinator.policies.base import Cause, beyond_retry
from coordinator.policies.deadline import DeadlinePolicy, DeadlineView
from coordinator.policies.recovery import RecoveryPolicy

log = logging.getLogger("coordinator")
WAITING = (SegmentState.PENDING, SegmentState.INTERRUPTED, SegmentState.FAILED_LAUNCH)


class LaunchPass(Protocol):
    def run(self) -> None: ...


class RecoveryPass:
    def __init__(self, book: AttemptBook, policy: RecoveryPolicy) -> None:
        self.book = book
        self.policy = policy

    def run(self) -> None:
        book, now = self.book, self.book.clock.now()
        for row in book.state.segments(book.job_id):
            if row.state == SegmentState.PENDING:
                market = self.policy.launch(book.index[row.segment_id], len(book.index))
                book.launch(row, market, f"initial launch on {market} ({self.policy.name})")
            elif row.state in (SegmentState.INTERRUPTED, SegmentState.FAILED_LAUNCH):
                if now < book.not_before.get(row.segment_id, 0.0):
                    continue
                cause: Cause = "interrupted" if row.state == SegmentState.INTERRUPTED else "failed-launch"
                decision = self.policy.recover(book.history(row.segment_id), cause)
                if decision.market is None:
                    book.fail(row.segment_id, decision.reason)
                else:
                    book.launch(row, decision.market, decision.reason)


class DeadlinePass:
    def __init__(self, book: AttemptBook, policy: DeadlinePolicy) -> None:
        self.book = book
        self.policy = policy

    def run(self) -> None:
        speed = self.job_speed()  # the same for every segment in this pass
        for row in self.book.state.segments(self.book.job_id):
            if row.state in WAITING:
                self._place(row, speed)
            elif row.state == SegmentState.RUNNING and row.segment_id not in self.book.switching:
                self._maybe_back_to_spot(row, speed)

    def _place(self, row: SegmentRow, speed: tuple[float, float]) -> None:
        book, segment = self.book, row.segment_id
        view = self.view(row, running=None, speed=speed)
        market = self.policy.choose(view)
        if market is None:
            return  # wait for spot: the slack allows it
        history = book.history(segment)
        failed_here = row.state == SegmentState.FAILED_LAUNCH and history.last_market == market
        if failed_here and book.clock.now() < book.not_before.get(segment, 0.0):
            return  # this market refused this segment a moment ago
        exhausted = beyond_retry(history)
        if exhausted is not None:
            book.fail(segment, exhausted.reason)
            return
        book.launch(row, market, f"{self.policy.name}: {market} (slack {view.slack_s:.0f} s)")

    def _maybe_back_to_spot(self, row: SegmentRow, speed: tuple[float, float]) -> None:
        tracked = self.book.active.get(row.segment_id)
        if tracked is None or tracked.active.market != "on-demand":
            return
        view = self.view(row, running="on-demand", speed=speed)
        if self.policy.choose(view) == "spot":
            self.book.switch(row.segment_id)
            self.book.fleet.terminate([tracked.active.instance_id])
            log.info(
                "%s: back to spot (slack %.0f s): stopping %s, it drains to its checkpoint",
                row.segment_id,
                view.slack_s,
                tracked.active.instance_id,
            )

    def per_instance_rate(self) -> float:
        """Rows per cloud second of one instance: the running workers' median, else the best seen."""
        book = self.book
        beats = [book.monitor.latest_heartbeat(t.active.attempt_id) for t in book.active.values()]
        running = [b.rows_per_s for b in beats if b is not None and b.rows_per_s > 0]
        if running:
            return book.clock_rate(statistics.median(running))
        return book.best_rate_seen()

    def job_speed(self) -> tuple[float, float]:
        """(rows per cloud second of one instance, changeover in cloud seconds): measured, else planned."""
        boots = self.book.boots_seen
        changeover = statistics.median(boots) if boots else self.book.spec.changeover_seconds
        return max(self.per_instance_rate(), 1e-9), changeover

    def view(self, row: SegmentRow, *, running: Market | None, speed: tuple[float, float]) -> DeadlineView:
        book, spec = self.book, self.book.spec
        assert spec.deadline_seconds is not None
        rate, changeover = speed
        now = book.clock.now()
        tracked = book.active.get(row.segment_id)
        beat = book.monitor.latest_heartbeat(tracked.active.attempt_id) if tracked else None
        rows_done = beat.rows_done if beat is not None else self._rows_kept(row.segment_id)
        waited = now - tracked.launched_cloud if tracked else 0.0
        boot_left = max(0.0, changeover - waited) if tracked and beat is None else 0.0
        return DeadlineView(
            now_s=now - book.clock.origin,
            deadline_s=spec.deadline_seconds,
            work_left_s=(row.stop - row.start - rows_done) / rate,
            changeover_s=changeover,
            tick_s=book.clock.cloud(spec.cycle_seconds),
            spot_available=now >= book.spot_unavailable_until,
            running=running,
            boot_left_s=boot_left,
            loss_s=spec.reclaim_overhead_seconds,
            total_work_s=(row.stop - row.start) / rate,
        )

    def _rows_kept(self, segment: str) -> int:
        """The rows a resume starts from: the checkpoint's, or, while a warned attempt drains, the rows its
        heartbeat has done (its drain checkpoints them: deciding on the older checkpoint would count up to
        a checkpoint interval as work left twice, and lean to on-demand)."""
        leaving = self.book.leaving.get(segment)
        beat = self.book.monitor.latest_heartbeat(leaving.active.attempt_id) if leaving else None
        return max(self.book.checkpointed_rows(segment), beat.rows_done if beat is not None else 0)


def launch_pass_for(book: AttemptBook, policy: RecoveryPolicy | DeadlinePolicy) -> LaunchPass:
    if isinstance(policy, DeadlinePolicy):
        return DeadlinePass(book, policy)
    return RecoveryPass(book, policy)
