"""The last lines of an attempt that ended badly, from CloudWatch Logs (moto in process): the worker's
stream, and the boot script's when the worker never ran or crashed."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from coordinator.job.aws.worker_logs import WorkerLogTail
from coordinator.job.core.tables import AttemptRow
from tests.coordinator.job.rows import launched_attempt

GROUP = "/spotbatch/t/workers"


@pytest.fixture
def logs(aws_credentials: None) -> Iterator[Any]:
    from moto import mock_aws

    with mock_aws():
        client = boto3.client("logs", region_name="us-east-1")
        client.create_log_group(logGroupName=GROUP)
        yield client


def stream(logs: Any, name: str, lines: list[str]) -> None:
    logs.create_log_stream(logGroupName=GROUP, logStreamName=name)
    now = int(time.time() * 1000)  # CloudWatch refuses events older than 14 days
    events = [{"timestamp": now + i, "message": line} for i, line in enumerate(lines)]
    logs.put_log_events(logGroupName=GROUP, logStreamName=name, logEvents=events)


def attempt(instance: str = "i-0abc") -> AttemptRow:
    return launched_attempt("seg-0001", instance_id=instance, job_id="job-1")


def test_a_boot_that_failed_before_the_worker_is_explained_from_the_boot_stream(
    logs: Any, caplog: pytest.LogCaptureFixture
) -> None:
    stream(
        logs,
        "job-1/seg-0001/i-0abc/boot",
        ["spotbatch: i-0abc boots job-1/seg-0001", "Error response from daemon: pull access denied for x"],
    )
    tail = WorkerLogTail(logs, GROUP, job_id="job-1")
    with caplog.at_level(logging.WARNING):
        tail.attempt_ended(attempt(), "crashed")
    assert "pull access denied" in caplog.text and "job-1/seg-0001/i-0abc/boot" in caplog.text
    assert tail.reasons["seg-0001"] == "Error response from daemon: pull access denied for x"


def test_a_worker_that_crashed_is_explained_by_its_own_stream_then_the_boot(
    logs: Any, caplog: pytest.LogCaptureFixture
) -> None:
    stream(logs, "job-1/seg-0001/i-0def", ["batch 1/4 ...", "MemoryError"])
    stream(logs, "job-1/seg-0001/i-0def/boot", ["docker run exited 137"])
    tail = WorkerLogTail(logs, GROUP, job_id="job-1")
    with caplog.at_level(logging.WARNING):
        tail.attempt_ended(attempt("i-0def"), "crashed")
    assert caplog.text.index("MemoryError") < caplog.text.index("docker run exited 137")
    assert tail.reasons["seg-0001"] == "MemoryError"


def test_an_attempt_that_ended_as_it_should_reads_no_log(logs: Any, caplog: pytest.LogCaptureFixture) -> None:
    tail = WorkerLogTail(logs, GROUP, job_id="job-1")
    with caplog.at_level(logging.WARNING):
        tail.attempt_ended(attempt(), "interrupted")
    assert caplog.text == "" and tail.reasons == {}
