"""Who gets an instance this cycle: one pass over the job's segments, asking the policy's driver
(`policies/drivers.py`, the same one the what-if engine and the matrix model ask) about each through a
`LiveSegment`, the segment table's and the launcher's view of it.

- A segment without an instance (PENDING, INTERRUPTED, FAILED_LAUNCH) is launched on the market the driver
  places it on, fails when the driver gives up, or waits. A recovery policy's `launch()` picks a PENDING
  segment's market and `recover()` the rest's, once a failed launch's backoff has passed; a deadline
  policy's `choose(view)` decides from the clock, the work left and whether spot is available.
- A segment running on on-demand whose deadline policy says spot is switched: its instance is told to stop,
  its worker drains (SIGTERM: checkpoint, heartbeat `draining`) and the segment is relaunched on spot from
  that checkpoint ("switched", not an interruption).

Every launch goes through the launcher, which asks the budget guard first. A job none of whose instances
has ever started its worker stops after `MAX_SILENT_BOOTS_PER_JOB` such instances (`BootFailing`), before
launching more: a boot that fails on one instance fails on all.

Usage::

    policy_pass = PolicyPass(driver, table=table, launcher=launcher, monitor=monitor, spec=spec, clock=clock)
    with launcher.together():
        policy_pass.run()
"""

from __future__ import annotations

import logging
import math

from coordinator.errors import BootFailing
from coordinator.job.core import CloudClock, JobSpec, SegmentState
from coordinator.job.loop.launcher import Launcher
from coordinator.job.loop.live_segment import JobSpeed, LiveJob, LiveSegment
from coordinator.job.loop.monitor import SILENT_ENDS, Monitor
from coordinator.job.loop.segment_table import SegmentTable
from coordinator.policies.base import Cause
from coordinator.policies.drivers import Driver

log = logging.getLogger("coordinator")
WAITING = (SegmentState.PENDING, SegmentState.INTERRUPTED, SegmentState.FAILED_LAUNCH)
MAX_SILENT_BOOTS_PER_JOB = 5  # instances of the job that ended without a heartbeat while none ever sent one


class PolicyPass:
    def __init__(
        self,
        driver: Driver,
        *,
        table: SegmentTable,
        launcher: Launcher,
        monitor: Monitor,
        spec: JobSpec,
        clock: CloudClock,
    ) -> None:
        self.driver = driver
        self._table, self._launcher, self._monitor = table, launcher, monitor
        self._job = LiveJob(table=table, launcher=launcher, monitor=monitor, spec=spec, clock=clock)
        self._job_id = spec.job_id
        self._max_instances = spec.max_instances

    def run(self) -> None:
        self._stop_a_failing_boot()
        speed = JobSpeed(self._job)  # measured once, if the driver asks: the same for every segment
        # a cap counts a leaving attempt too (it bills, and holds its vCPUs); no cap, no count: a warned
        # attempt's replacement must go out while it leaves (capped by one per segment, it waited for it)
        cap = self._max_instances
        room = math.inf if cap is None else cap - len(self._table.watched())
        for row in self._table.segments():
            world = LiveSegment(self._job, row, speed)
            if row.state in WAITING:
                if room > 0 and self._place(world):
                    room -= 1
            elif row.state == SegmentState.RUNNING and not self._table.switching(row.segment_id):
                self._keep(world)

    def _stop_a_failing_boot(self) -> None:
        ended = [a for a in self._table.attempts() if not a.is_open]
        silent = [a for a in ended if a.end_reason in SILENT_ENDS and a.heartbeat_puts == 0]
        if len(silent) < MAX_SILENT_BOOTS_PER_JOB or any(a.heartbeat_puts for a in ended):
            return
        if any(self._monitor.latest_heartbeat(a.attempt_id) for a in self._table.active_attempts()):
            return
        last = silent[-1]
        raise BootFailing(
            f"{len(silent)} instances ended before their worker's first heartbeat, and no worker of the job "
            f"has ever started: the boot fails. See the boot log: stream {self._job_id}/"
            f"{last.segment_id}/{last.instance_id}/boot of the stack's log group, then run the same job id "
            "again"
        )

    def _place(self, world: LiveSegment) -> bool:
        """The policy's placement of a waiting segment; True when it launched an instance."""
        row = world.row
        cause: Cause = "interrupted" if row.state == SegmentState.INTERRUPTED else "failed-launch"
        decision = self.driver.place(world, cause)
        if decision is None:
            return False  # wait: for spot, or for a failed launch's backoff
        if decision.market is None:
            self._table.fail(row.segment_id, decision.reason)
            return False
        self._launcher.launch(row, decision.market, decision.reason)
        return True

    def _keep(self, world: LiveSegment) -> None:
        attempt = self._table.active(world.row.segment_id)
        if attempt is None or attempt.market != "on-demand":
            return
        if self.driver.keep(world, "on-demand") == "spot":
            self._table.switch(world.row.segment_id)
            log.info(
                "%s: back to spot (slack %.0f s): stopping %s, it drains to its checkpoint",
                world.row.segment_id,
                world.last_view.slack_s if world.last_view else 0.0,
                attempt.instance_id,
            )
