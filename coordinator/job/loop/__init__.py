"""One job's control plane: the runner (a job from start to files), the controller's cycle, the segment
table (the one owner of a segment's moves), the launcher, the attempt book (ending and pricing), the
policy pass, the monitor and its heartbeats, EC2's warnings acted on, the restart, the lease, the spend
watch and the progress views.

Usage::

    from coordinator.job.loop import run_job
    result = run_job(spec, cloud=cloud, guard=guard, clock=clock, run_dir=run_dir)
"""

from coordinator.job.loop.controller import Controller, JobOutcome
from coordinator.job.loop.heartbeats import HeartbeatReader
from coordinator.job.loop.instance_watch import FULL_LOOK_SECONDS
from coordinator.job.loop.progress import SUMMARY_ABOVE, SegmentStatus, summarize
from coordinator.job.loop.runner import RunResult, run_job
from coordinator.job.loop.spend_watch import SpendWatch

__all__ = [
    "FULL_LOOK_SECONDS",
    "SUMMARY_ABOVE",
    "Controller",
    "HeartbeatReader",
    "JobOutcome",
    "RunResult",
    "SegmentStatus",
    "SpendWatch",
    "run_job",
    "summarize",
]
