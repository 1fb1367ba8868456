"""The contract between the coordinator and a worker instance: the tags a launch sets, the env they become.

The fleet writes these tags on every instance it launches. On the instance, the launch template's user-data
(`terraform/modules/worker_templates/user_data.sh.tftpl`) reads them from the instance metadata and starts
the worker with the `SPOTBATCH_*` environment that `worker_env()` describes (on EC2 and in the simulator,
which runs that same script). A test holds the template to this module.

Usage::

    request = LaunchRequest(job_id="job-1", segment_id="seg-0000", attempt_id="job-1/seg-0000/1",
                            market="spot", start=0, stop=2500, input_key="data/x.parquet")
    tags = tags_for(request)                       # {"Project": "spotbatch", "spotbatch:job": "job-1", ...}
    env = worker_env(tags, bucket="b", instance_id="i-0abc")
"""

from __future__ import annotations

from dataclasses import dataclass, field

from inference.config import DEFAULT_BATCH_SIZE, DEFAULT_CHECKPOINT_EVERY
from inference.heartbeat import HEARTBEAT_SECONDS, STEADY_HEARTBEAT_SECONDS
from inference.interruption import NOTICE_POLL_SECONDS
from inference.layout import job_prefix

PROJECT_TAG = "Project"
PROJECT = "spotbatch"  # every instance of the project carries Project=spotbatch: how strays are found
TAG_JOB = "spotbatch:job"
TAG_SEGMENT = "spotbatch:segment"
TAG_ATTEMPT = "spotbatch:attempt"
TAG_MARKET = "spotbatch:market"
TAG_START = "spotbatch:start"
TAG_STOP = "spotbatch:stop"
TAG_INPUT_KEY = "spotbatch:input-key"
TAG_BATCH_SIZE = "spotbatch:batch-size"
TAG_CHECKPOINT_EVERY = "spotbatch:checkpoint-every"  # batches between checkpoints
TAG_HEARTBEAT_SECONDS = "spotbatch:heartbeat-seconds"
TAG_STEADY_HEARTBEAT_SECONDS = "spotbatch:steady-heartbeat-seconds"
TAG_NOTICE_POLL_SECONDS = "spotbatch:notice-poll-seconds"
TAG_MAX_LIFETIME = "spotbatch:max-lifetime-seconds"  # set by the launch template, enforced by user-data


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerTuning:
    """How a worker works, set per job (the simulator shrinks the intervals with its clock)."""

    batch_size: int = DEFAULT_BATCH_SIZE
    checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY
    heartbeat_seconds: float = HEARTBEAT_SECONDS  # starting and draining
    steady_heartbeat_seconds: float = STEADY_HEARTBEAT_SECONDS  # running
    notice_poll_seconds: float = NOTICE_POLL_SECONDS


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchRequest:
    job_id: str
    segment_id: str
    attempt_id: str
    market: str
    start: int
    stop: int
    input_key: str
    tuning: WorkerTuning = field(default_factory=WorkerTuning)
    extra_tags: dict[str, str] = field(default_factory=dict)


def tags_for(request: LaunchRequest) -> dict[str, str]:
    return {
        PROJECT_TAG: PROJECT,
        TAG_JOB: request.job_id,
        TAG_SEGMENT: request.segment_id,
        TAG_ATTEMPT: request.attempt_id,
        TAG_MARKET: request.market,
        TAG_START: str(request.start),
        TAG_STOP: str(request.stop),
        TAG_INPUT_KEY: request.input_key,
        TAG_BATCH_SIZE: str(request.tuning.batch_size),
        TAG_CHECKPOINT_EVERY: str(request.tuning.checkpoint_every),
        TAG_HEARTBEAT_SECONDS: f"{request.tuning.heartbeat_seconds:g}",
        TAG_STEADY_HEARTBEAT_SECONDS: f"{request.tuning.steady_heartbeat_seconds:g}",
        TAG_NOTICE_POLL_SECONDS: f"{request.tuning.notice_poll_seconds:g}",
        **request.extra_tags,
    }


def worker_env(tags: dict[str, str], *, bucket: str, instance_id: str) -> dict[str, str]:
    """The worker's `SPOTBATCH_*` settings that come from the instance's tags (what user-data exports)."""
    return {
        "SPOTBATCH_INPUT": f"s3://{bucket}/{tags[TAG_INPUT_KEY]}",
        "SPOTBATCH_START": tags[TAG_START],
        "SPOTBATCH_STOP": tags[TAG_STOP],
        "SPOTBATCH_SEGMENT_ID": tags[TAG_SEGMENT],
        "SPOTBATCH_OUTPUT_PREFIX": f"s3://{bucket}/{job_prefix(tags[TAG_JOB])}",
        "SPOTBATCH_INSTANCE_ID": instance_id,
        "SPOTBATCH_MARKET": tags.get(TAG_MARKET, ""),
        "SPOTBATCH_ATTEMPT": tags.get(TAG_ATTEMPT, ""),
        "SPOTBATCH_BATCH_SIZE": tags[TAG_BATCH_SIZE],
        "SPOTBATCH_CHECKPOINT_EVERY": tags[TAG_CHECKPOINT_EVERY],
        "SPOTBATCH_HEARTBEAT_EVERY": tags[TAG_HEARTBEAT_SECONDS],
        "SPOTBATCH_STEADY_HEARTBEAT_EVERY": tags[TAG_STEADY_HEARTBEAT_SECONDS],
        "SPOTBATCH_NOTICE_POLL_EVERY": tags[TAG_NOTICE_POLL_SECONDS],
    }
