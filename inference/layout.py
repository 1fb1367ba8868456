"""Where a job's objects live in the bucket: one definition, read by the worker and by the coordinator.

    data/<dataset>.parquet                                   the input (workers may only read it)
    jobs/<job>/parts/<segment>/<start:08d>-<stop:08d>.<w>.parquet            a whole chunk's predictions
    jobs/<job>/parts/<segment>/<start>-<stop>.b<i:03d>-<j:03d>.<w>.parquet   batches [i, j) of a chunk
    jobs/<job>/checkpoints/<segment>.json                    which parts count, and where to resume
    jobs/<job>/heartbeats/<segment>.json                     the worker's latest beat
    jobs/<job>/manifests/<segment>.json                      a done segment's parts, rows and id digest
    jobs/<job>/control/coordinator.lease                     which coordinator runs the job
    jobs/<job>/control/manifest.json                         the job's result: every part, rows, digest

Keys below `jobs/<job>/` are relative to the job's prefix: the worker is given `s3://<bucket>/jobs/<job>` as
its output prefix. `<w>` is 12 hex digits of the writing attempt's id (no `.<w>` for a run outside a job):
a stale attempt's part never has the key of a part a newer attempt lists. A job's workers may write its
`WORKER_PREFIXES` and nothing else of it: `control/` is the coordinator's alone (its lease, the job's
manifest), so no worker can lock, take or fake the job (`coordinator/stack/permissions.py`; a test holds it
with moto's IAM enforcement). The Terraform worker role (`worker_iam`) bounds the data and jobs prefixes; a
test holds its defaults and the user-data template to this module.
"""

from __future__ import annotations

import hashlib

DATA_PREFIX = "data/"
JOBS_PREFIX = "jobs/"


def job_prefix(job_id: str) -> str:
    """The job's prefix in the bucket, without a trailing slash: the worker's output prefix."""
    return f"{JOBS_PREFIX}{job_id}"


def dataset_key(name: str) -> str:
    return f"{DATA_PREFIX}{name}"


def checkpoint_key(segment_id: str) -> str:
    return f"checkpoints/{segment_id}.json"


def heartbeat_key(segment_id: str) -> str:
    return f"heartbeats/{segment_id}.json"


def manifest_key(segment_id: str) -> str:
    return f"manifests/{segment_id}.json"


CONTROL_PREFIX = "control/"  # the coordinator's alone: no worker role may write under it
JOB_LEASE_KEY = f"{CONTROL_PREFIX}coordinator.lease"
JOB_MANIFEST_KEY = f"{CONTROL_PREFIX}manifest.json"
WORKER_PREFIXES = ("parts/", "checkpoints/", "heartbeats/", "manifests/")  # all a worker writes of its job


def parts_prefix(segment_id: str) -> str:
    return f"parts/{segment_id}/"


def part_key(
    segment_id: str, row_start: int, row_stop: int, batches: tuple[int, int] | None = None, attempt: str = ""
) -> str:
    """`batches` is the batch range inside the chunk, given only when the part covers part of the chunk."""
    stem = f"{row_start:08d}-{row_stop:08d}"
    if batches is not None:
        stem += f".b{batches[0]:03d}-{batches[1]:03d}"
    if attempt:
        stem += f".{writer_tag(attempt)}"
    return f"{parts_prefix(segment_id)}{stem}.parquet"


def writer_tag(attempt: str) -> str:
    """The mark of the attempt that wrote a part, in its key."""
    return hashlib.sha256(attempt.encode()).hexdigest()[:12]
