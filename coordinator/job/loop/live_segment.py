"""One segment of the live job as a policy's driver sees it (`policies/drivers.SegmentWorld`): where it is in
the job, whether it was launched before, its history, the deadline view, whether a market refused it a
moment ago. The what-if engine shows the same driver a segment of a trace (`whatif/trace_segment.py`), so
the two decide alike (`tests/coordinator/test_live_and_whatif_decide_alike.py`).

Usage::

    job = LiveJob(table=table, launcher=launcher, monitor=monitor, spec=spec, clock=clock)
    world = LiveSegment(job, row, JobSpeed(job))
    driver.place(world, "interrupted")
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import cached_property

from coordinator.cost.pricing import Market
from coordinator.job.core import CloudClock, JobSpec, SegmentRow, SegmentState
from coordinator.job.loop.launcher import Launcher
from coordinator.job.loop.monitor import SILENT_ENDS, Monitor
from coordinator.job.loop.segment_table import SegmentTable
from coordinator.policies.base import SegmentHistory
from coordinator.policies.deadline import DeadlineView


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveJob:
    """What the policy pass reads of the live job: the segment table, the launcher's backoffs, the
    monitor's heartbeats, the spec and the clock."""

    table: SegmentTable
    launcher: Launcher
    monitor: Monitor
    spec: JobSpec
    clock: CloudClock


class JobSpeed:
    """(rows per cloud second of one instance, changeover in cloud seconds): measured, else planned."""

    def __init__(self, job: LiveJob) -> None:
        self.job = job

    @cached_property
    def measured(self) -> tuple[float, float]:
        boots = self.job.table.boots_seen()
        changeover = statistics.median(boots) if boots else self.job.spec.changeover_seconds
        return max(self.per_instance_rate(), 1e-9), changeover

    def per_instance_rate(self) -> float:
        """Rows per cloud second of one instance: the running workers' median, else the best seen."""
        job = self.job
        beats = [job.monitor.latest_heartbeat(a.attempt_id) for a in job.table.active_attempts()]
        running = [b.rows_per_s for b in beats if b is not None and b.rows_per_s > 0]
        if running:
            return job.clock.per_cloud_second(statistics.median(running))
        return job.launcher.best_rate_seen()


class LiveSegment:
    """One segment as the driver sees it in the live loop."""

    def __init__(self, job: LiveJob, row: SegmentRow, speed: JobSpeed) -> None:
        self.job, self.row, self.speed = job, row, speed
        self.last_view: DeadlineView | None = None

    @property
    def index(self) -> int:
        return self.job.table.index_of(self.row.segment_id)

    @property
    def count(self) -> int:
        return self.job.table.count

    def launched_before(self) -> bool:
        return self.row.state != SegmentState.PENDING

    def history(self) -> SegmentHistory:
        """Its ended attempts by market and outcome; a warned attempt still leaving counts as the
        interruption it is."""
        table, segment = self.job.table, self.row.segment_id
        attempts = [a for a in table.attempts(segment) if not a.is_open]

        def count(market: str, reasons: tuple[str, ...]) -> int:
            return sum(a.market == market and a.end_reason in reasons for a in attempts)

        last: Market | None = attempts[-1].market if attempts else None
        leaving = table.leaving(segment)
        if leaving is not None:
            last = "spot" if leaving.market == "spot" else "on-demand"
        return SegmentHistory(
            spot_interruptions=count("spot", ("interrupted", "lost"))
            + (last == "spot" and leaving is not None),
            spot_launch_failures=count("spot", ("failed-launch",)),
            on_demand_launch_failures=count("on-demand", ("failed-launch",)),
            worker_crashes=count("spot", ("crashed",)) + count("on-demand", ("crashed",)),
            silent_boots=sum(a.end_reason in SILENT_ENDS and a.heartbeat_puts == 0 for a in attempts),
            went_silent=sum(a.end_reason == "lost" and a.heartbeat_puts > 0 for a in attempts),
            last_market=last,
        )

    def refused_lately(self, market: Market | None) -> bool:
        """Within a failed launch's backoff: any market (None), or `market` if it was the one refused."""
        if not self.job.launcher.backing_off(self.row.segment_id):
            return False
        if market is None:
            return True
        return self.row.state == SegmentState.FAILED_LAUNCH and self.history().last_market == market

    def view(self, running: Market | None) -> DeadlineView:
        job, row = self.job, self.row
        spec = job.spec
        assert spec.deadline_seconds is not None
        rate, changeover = self.speed.measured
        now = job.clock.now()
        attempt = job.table.active(row.segment_id)
        beat = job.monitor.latest_heartbeat(attempt.attempt_id) if attempt else None
        rows_done = beat.rows_done if beat is not None else self._rows_kept()
        waited = now - attempt.launched_at if attempt and attempt.launched_at is not None else 0.0
        boot_left = max(0.0, changeover - waited) if attempt and beat is None else 0.0
        self.last_view = DeadlineView(
            now_s=now - job.clock.origin,
            deadline_s=spec.deadline_seconds,
            work_left_s=(row.stop - row.start - rows_done) / rate,
            changeover_s=changeover,
            tick_s=job.clock.cloud(spec.cycle_seconds),
            spot_available=job.launcher.spot_available(),
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
        table, segment = self.job.table, self.row.segment_id
        leaving = table.leaving(segment)
        beat = self.job.monitor.latest_heartbeat(leaving.attempt_id) if leaving else None
        return max(table.checkpointed_rows(segment), beat.rows_done if beat is not None else 0)
