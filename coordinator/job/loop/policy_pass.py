"""Who gets an instance this cycle: one pass over the job's segments, asking the policy's driver
(`policies/drivers.py`, the same one the what-if engine and the matrix model ask) about each through a
`LiveSegment`, the book's and the state's view of it.

- A segment without an instance (PENDING, INTERRUPTED, FAILED_LAUNCH) is launched on the market the driver
  places it on, fails when the driver gives up, or waits. A recovery policy's `launch()` picks a PENDING
  segment's market and `recover()` the rest's, once a failed launch's backoff has passed; a deadline
  policy's `choose(view)` decides from the clock, the work left and whether spot is available.
- A segment running on on-demand whose deadline policy says spot is switched: its instance is terminated,
  its worker drains (SIGTERM: checkpoint, heartbeat `draining`) and the segment is relaunched on spot from
  that checkpoint ("switched", not an interruption).

Every launch goes through the attempt book, which asks the budget guard first. A job none of whose
instances has ever started its worker stops after `MAX_SILENT_BOOTS_PER_JOB` such instances (`BootFailing`),
before launching more: a boot that fails on one instance fails on all.
"""

from __future__ import annotations

import logging
import statistics
from functools import cached_property

from coordinator.cost.pricing import Market
from coordinator.errors import BootFailing
from coordinator.job.core.segment_states import SegmentState
from coordinator.job.core.tables import SegmentRow
from coordinator.job.loop.attempt_book import AttemptBook
from coordinator.job.loop.monitor import SILENT_ENDS
from coordinator.policies.base import Cause, SegmentHistory
from coordinator.policies.deadline import DeadlineView
from coordinator.policies.drivers import Driver

log = logging.getLogger("coordinator")
WAITING = (SegmentState.PENDING, SegmentState.INTERRUPTED, SegmentState.FAILED_LAUNCH)
MAX_SILENT_BOOTS_PER_JOB = 5  # instances of the job that ended without a heartbeat while none ever sent one


class LaunchPass:
    def __init__(self, book: AttemptBook, driver: Driver) -> None:
        self.book = book
        self.driver = driver

    def run(self) -> None:
        self._stop_a_failing_boot()
        speed = JobSpeed(self.book)  # measured once, if the driver asks: the same for every segment
        for row in self.book.state.segments(self.book.job_id):
            world = LiveSegment(self.book, row, speed)
            if row.state in WAITING:
                self._place(world)
            elif row.state == SegmentState.RUNNING and row.segment_id not in self.book.switching:
                self._keep(world)

    def _stop_a_failing_boot(self) -> None:
        book = self.book
        ended = [a for a in book.state.attempts(book.job_id) if a.ended_at is not None]
        silent = [a for a in ended if a.end_reason in SILENT_ENDS and a.heartbeat_puts == 0]
        if len(silent) < MAX_SILENT_BOOTS_PER_JOB or any(a.heartbeat_puts for a in ended):
            return
        if any(book.monitor.latest_heartbeat(t.active.attempt_id) for t in book.active.values()):
            return
        last = silent[-1]
        raise BootFailing(
            f"{len(silent)} instances ended before their worker's first heartbeat, and no worker of the job "
            f"has ever started: the boot fails. See the boot log: stream {book.job_id}/{last.segment_id}/"
            f"{last.instance_id}/boot of the stack's log group, then run the same job id again"
        )

    def _place(self, world: LiveSegment) -> None:
        row = world.row
        cause: Cause = "interrupted" if row.state == SegmentState.INTERRUPTED else "failed-launch"
        decision = self.driver.place(world, cause)
        if decision is None:
            return  # wait: for spot, or for a failed launch's backoff
        if decision.market is None:
            self.book.fail(row.segment_id, decision.reason)
        else:
            self.book.launch(row, decision.market, decision.reason)

    def _keep(self, world: LiveSegment) -> None:
        tracked = self.book.active.get(world.row.segment_id)
        if tracked is None or tracked.active.market != "on-demand":
            return
        if self.driver.keep(world, "on-demand") == "spot":
            self.book.switch(world.row.segment_id)
            self.book.fleet.terminate([tracked.active.instance_id])
            log.info(
                "%s: back to spot (slack %.0f s): stopping %s, it drains to its checkpoint",
                world.row.segment_id,
                world.last_view.slack_s if world.last_view else 0.0,
                tracked.active.instance_id,
            )


class JobSpeed:
    """(rows per cloud second of one instance, changeover in cloud seconds): measured, else planned."""

    def __init__(self, book: AttemptBook) -> None:
        self.book = book

    @cached_property
    def measured(self) -> tuple[float, float]:
        boots = self.book.boots_seen
        changeover = statistics.median(boots) if boots else self.book.spec.changeover_seconds
        return max(self.per_instance_rate(), 1e-9), changeover

    def per_instance_rate(self) -> float:
        """Rows per cloud second of one instance: the running workers' median, else the best seen."""
        book = self.book
        beats = [book.monitor.latest_heartbeat(t.active.attempt_id) for t in book.active.values()]
        running = [b.rows_per_s for b in beats if b is not None and b.rows_per_s > 0]
        if running:
            return book.clock_rate(statistics.median(running))
        return book.best_rate_seen()


class LiveSegment:
    """One segment as the driver sees it in the live loop: its state row, the book's attempts, the clock."""

    def __init__(self, book: AttemptBook, row: SegmentRow, speed: JobSpeed) -> None:
        self.book, self.row, self.speed = book, row, speed
        self.last_view: DeadlineView | None = None

    @property
    def index(self) -> int:
        return self.book.index[self.row.segment_id]

    @property
    def count(self) -> int:
        return len(self.book.index)

    def launched_before(self) -> bool:
        return self.row.state != SegmentState.PENDING

    def history(self) -> SegmentHistory:
        return self.book.history(self.row.segment_id)

    def refused_lately(self, market: Market | None) -> bool:
        """Within a failed launch's backoff: any market (None), or `market` if it was the one refused."""
        book, segment = self.book, self.row.segment_id
        if book.clock.now() >= book.not_before.get(segment, 0.0):
            return False
        if market is None:
            return True
        return self.row.state == SegmentState.FAILED_LAUNCH and self.history().last_market == market

    def view(self, running: Market | None) -> DeadlineView:
        book, spec, row = self.book, self.book.spec, self.row
        assert spec.deadline_seconds is not None
        rate, changeover = self.speed.measured
        now = book.clock.now()
        tracked = book.active.get(row.segment_id)
        beat = book.monitor.latest_heartbeat(tracked.active.attempt_id) if tracked else None
        rows_done = beat.rows_done if beat is not None else self._rows_kept()
        waited = now - tracked.launched_cloud if tracked else 0.0
        boot_left = max(0.0, changeover - waited) if tracked and beat is None else 0.0
        self.last_view = DeadlineView(
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
        return self.last_view

    def _rows_kept(self) -> int:
        """The rows a resume starts from: the checkpoint's, or, while a warned attempt drains, the rows its
        heartbeat has done (its drain checkpoints them: deciding on the older checkpoint would count up to
        a checkpoint interval as work left twice, and lean to on-demand)."""
        segment = self.row.segment_id
        leaving = self.book.leaving.get(segment)
        beat = self.book.monitor.latest_heartbeat(leaving.active.attempt_id) if leaving else None
        return max(self.book.checkpointed_rows(segment), beat.rows_done if beat is not None else 0)
