"""A job's start in its state file: made once from its input, or found again after a restart.

Usage::

    clock = open_job(state, spec, S3Store(bucket, "", client=s3), CloudClock(scale=15.0))
"""

from __future__ import annotations

from dataclasses import asdict

from coordinator.errors import DataError
from coordinator.job.core import CloudClock, CoordinatorState, JobSpec, check_crash_setting
from coordinator.job.data.input_dataset import cut_segments, input_digests, list_input
from inference.s3_store import S3Store


def open_job(state: CoordinatorState, spec: JobSpec, bucket: S3Store, clock: CloudClock) -> CloudClock:
    """Create the job in its state, or find it there after a restart: then its own clock and segments, not
    new ones (a prefix listed again might name other files). A new job's segments are cut from the input's
    footers and each one's id digest computed (`input_dataset.py`)."""
    check_crash_setting()  # a misspelt crash point would never fire: named before anything starts
    if spec.job_id not in state.jobs():
        files = list_input(bucket, spec.input_key)
        rows = sum(file.rows for file in files)
        if rows != spec.rows:
            raise DataError(
                f"s3://{bucket.bucket}/{spec.input_key}: has {rows} rows, the job says {spec.rows}"
            )
        cut = cut_segments(files, count=spec.segments, segment_rows=spec.segment_rows, bucket=bucket.bucket)
        digests = input_digests(bucket, cut, id_column="id")
        config = {"spec": asdict(spec), "clock": {"scale": clock.scale, "origin": clock.origin}}
        segments = [(s.segment_id, s.start, s.stop, s.input_key, digests[s.segment_id]) for s in cut]
        state.create_job(spec.job_id, config=config, segments=segments)
        return clock
    saved = state.job_config(spec.job_id)["clock"]
    return CloudClock(scale=saved["scale"], origin=saved["origin"])
