"""One coordinator per job: the lease in the job's S3 prefix, written with S3's conditional writes (moto
answers them as S3 does: 412 PreconditionFailed). Two coordinators on one job double-launched."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from coordinator.errors import JobLeaseHeld, JobLeaseLost
from coordinator.job.loop.lease import JobLease
from tests.host_load import scaled

BUCKET, KEY = "lease-bucket", "jobs/job-1/coordinator.lease"


@pytest.fixture
def s3(aws_credentials: None) -> Iterator[Any]:
    from moto import mock_aws

    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def _lease(s3: Any, tmp_path: Path, term: float = 60.0) -> JobLease:
    return JobLease(s3, BUCKET, KEY, run_dir=tmp_path / "run", term=term)


def _write(s3: Any, **holder: object) -> None:
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=json.dumps(holder).encode())


def test_a_second_coordinator_is_refused_naming_the_holder(s3: Any, tmp_path: Path) -> None:
    with (
        _lease(s3, tmp_path),
        pytest.raises(JobLeaseHeld, match=rf"process \d+ on {socket.gethostname()} \(run folder .*run\)"),
    ):
        _lease(s3, tmp_path / "elsewhere").start()
    with _lease(s3, tmp_path):  # released at the end: the next one takes it
        pass


def test_a_lease_that_ran_out_or_whose_process_is_gone_is_taken_over(s3: Any, tmp_path: Path) -> None:
    _write(s3, host="elsewhere", pid=1, run_dir="/x", token="t", expires_at=time.time() - 1)
    with _lease(s3, tmp_path):
        pass
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a coordinator of this host, killed: its pid is free, its lease has not run out
    _write(s3, host=socket.gethostname(), pid=gone.pid, run_dir="/x", token="t", expires_at=time.time() + 600)
    with _lease(s3, tmp_path):
        pass
    _write(s3, host="elsewhere", pid=1, run_dir="/x", token="t", expires_at=time.time() + 600)
    with pytest.raises(JobLeaseHeld, match=r"process 1 on elsewhere \(run folder /x\) holds its lease"):
        _lease(s3, tmp_path).start()


def test_a_coordinator_whose_lease_was_taken_over_stops(s3: Any, tmp_path: Path) -> None:
    lease = _lease(s3, tmp_path, term=0.3).start()  # renewed every 0.1 s
    try:
        lease.check()
        _write(s3, host="server-2", pid=7, run_dir="/y", token="u", expires_at=time.time() + 600)
        deadline = time.monotonic() + scaled(5)
        while not lease.lost:
            assert time.monotonic() < deadline, "the renewal never noticed"
            time.sleep(0.05)
        with pytest.raises(JobLeaseLost, match=r"process 7 on server-2 .* holds .*: this one stops"):
            lease.check()
    finally:
        lease.close()
    assert json.loads(s3.get_object(Bucket=BUCKET, Key=KEY)["Body"].read())["host"] == "server-2"  # kept
