"""The job's core: what a job is (its spec, segments and clock), the segment states and their moves, the
state file, the crash points, and the contract with a worker instance. It imports no other room of the job.

Usage::

    from coordinator.job.core import CloudClock, CoordinatorState, JobSpec, SegmentState
"""

from coordinator.job.core.cloud_clock import CloudClock
from coordinator.job.core.crash_points import CRASH_ENV, POINTS, check_crash_setting, crash_point
from coordinator.job.core.segment_states import ALLOWED_FROM, SegmentState, moves
from coordinator.job.core.spec import (
    BOOT_TIMEOUT_SECONDS,
    CYCLE_SECONDS,
    HEARTBEAT_TIMEOUT_SECONDS,
    RECLAIM_OVERHEAD_SECONDS,
    SHUTDOWN_WAIT_SECONDS,
    JobSpec,
    Segment,
    plan_segments,
    quotes_for,
    segment_name,
)
from coordinator.job.core.state_file import CoordinatorState
from coordinator.job.core.tables import AttemptRow, EventRow, SegmentRow, budget_label
from coordinator.job.core.worker_contract import (
    PROJECT,
    PROJECT_TAG,
    TAG_ATTEMPT,
    TAG_JOB,
    TAG_MARKET,
    TAG_MAX_LIFETIME,
    TAG_SEGMENT,
    LaunchRequest,
    WorkerTuning,
    tags_for,
    worker_env,
)

__all__ = [
    "ALLOWED_FROM",
    "BOOT_TIMEOUT_SECONDS",
    "CRASH_ENV",
    "CYCLE_SECONDS",
    "HEARTBEAT_TIMEOUT_SECONDS",
    "POINTS",
    "PROJECT",
    "PROJECT_TAG",
    "RECLAIM_OVERHEAD_SECONDS",
    "SHUTDOWN_WAIT_SECONDS",
    "TAG_ATTEMPT",
    "TAG_JOB",
    "TAG_MARKET",
    "TAG_MAX_LIFETIME",
    "TAG_SEGMENT",
    "AttemptRow",
    "CloudClock",
    "CoordinatorState",
    "EventRow",
    "JobSpec",
    "LaunchRequest",
    "Segment",
    "SegmentRow",
    "SegmentState",
    "WorkerTuning",
    "budget_label",
    "check_crash_setting",
    "crash_point",
    "moves",
    "plan_segments",
    "quotes_for",
    "segment_name",
    "tags_for",
    "worker_env",
]
