"""One coordinator per job: the lease under the job's control prefix, written with S3's conditional writes
(moto answers them as S3 does) and judged on each reader's own monotonic clock: a second coordinator whose
clock ran 60-90 s ahead took a live job and both ran it; a renewal that failed once was never tried again;
a lease deleted mid-run went unnoticed; a forged `expires_at` of 1e300 stopped every resume."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError

from coordinator.errors import JobLeaseHeld, JobLeaseLost
from coordinator.job.loop.lease import JobLease, lease_key
from tests.host_load import scaled

BUCKET = "lease-bucket"
KEY = lease_key("job-1")
TERM = 0.6  # renewed every 0.2 s; a reader takes an unrenewed lease over after 0.6 s of its own clock


@pytest.fixture
def s3(aws_credentials: None) -> Iterator[Any]:
    from moto import mock_aws

    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def _lease(s3: Any, tmp_path: Path, term: float = TERM, **options: Any) -> JobLease:
    return JobLease(s3, BUCKET, KEY, run_dir=tmp_path / "run", term=term, **options)


def _write(s3: Any, body: bytes | dict[str, object]) -> None:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=data)


def _until(condition: Any, what: str, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + scaled(seconds)
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_the_lease_lives_under_the_control_prefix() -> None:
    assert KEY == "jobs/job-1/control/coordinator.lease"


def test_a_second_coordinator_that_sees_the_lease_renewed_is_refused_naming_the_holder(
    s3: Any, tmp_path: Path
) -> None:
    with (
        _lease(s3, tmp_path),
        pytest.raises(JobLeaseHeld, match=rf"process \d+ on {socket.gethostname()} \(run folder .*run\)"),
    ):
        _lease(s3, tmp_path / "elsewhere").start()
    with _lease(s3, tmp_path):  # released at the end: the next one takes it at once
        pass


def test_a_lease_released_while_a_second_coordinator_watches_it_is_not_taken(s3: Any, tmp_path: Path) -> None:
    """The holder finished its job and let go while the other watched: the other refuses (naming who held it)
    rather than run a job whose results it has not seen; run again, it takes the lease at once."""
    holder = _lease(s3, tmp_path, term=60.0).start()
    threading.Timer(0.3, holder.close).start()
    with pytest.raises(JobLeaseHeld, match=r"process \d+ on .* and released it while this one watched"):
        _lease(s3, tmp_path / "elsewhere", term=60.0).start()
    started = time.monotonic()
    with _lease(s3, tmp_path / "elsewhere", term=60.0):
        assert time.monotonic() - started < scaled(5)


def test_an_unrenewed_lease_is_taken_over_after_a_term_of_the_readers_clock(s3: Any, tmp_path: Path) -> None:
    """Nothing a lease says about time is believed: a holder elsewhere that said it expires next year,
    and never renews, loses the job a term of the reader's own clock after the reader first looked."""
    _write(
        s3, {"host": "elsewhere", "pid": 1, "run_dir": "/x", "token": "t", "expires_at": time.time() + 3e7}
    )
    started = time.monotonic()
    with _lease(s3, tmp_path) as lease:
        assert time.monotonic() - started >= TERM and lease.etag


def test_a_lease_of_this_hosts_gone_process_or_no_lease_at_all_is_taken_at_once(
    s3: Any, tmp_path: Path
) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a coordinator of this host, killed: its pid is free
    for body in (
        {"host": socket.gethostname(), "pid": gone.pid, "run_dir": "/x", "token": "t"},
        b"\xff\xfe not a lease",
        {"host": "elsewhere", "pid": 10**400, "run_dir": "/x", "token": "t", "expires_at": 1e300},
        {"host": ["a list"], "pid": 7, "run_dir": "/x", "token": "t"},
    ):
        _write(s3, body)
        started = time.monotonic()
        with _lease(s3, tmp_path, term=60.0):
            assert time.monotonic() - started < scaled(5)  # not a term of waiting


def test_two_coordinators_whose_clocks_stand_300_s_apart_cannot_both_hold_the_job(
    s3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one holding the job keeps it; the other, its clock 300 s ahead, is refused; the lease's code
    reads no wall clock at all (each side judges the other by what it saw change on its own clock)."""
    import coordinator.job.loop.lease as module

    class MonotonicOnly:
        monotonic = staticmethod(time.monotonic)

        def time(self) -> float:
            raise AssertionError("the lease read the wall clock")

    monkeypatch.setattr(module, "time", MonotonicOnly())
    with _lease(s3, tmp_path):
        ahead = _lease(s3, tmp_path / "ahead", clock=lambda: time.monotonic() + 300)
        with pytest.raises(JobLeaseHeld):
            ahead.start()


def test_a_holder_whose_lease_was_taken_over_or_deleted_stops(s3: Any, tmp_path: Path) -> None:
    for tamper in (
        lambda: _write(s3, {"host": "server-2", "pid": 7, "run_dir": "/y", "token": "u"}),
        lambda: s3.delete_object(Bucket=BUCKET, Key=KEY),
    ):
        lease = _lease(s3, tmp_path).start()
        try:
            lease.check()
            tamper()
            _until(lambda lease=lease: lease.lost, "the renewal never noticed")
            with pytest.raises(JobLeaseLost, match=r"server-2|was deleted"):
                lease.check()
        finally:
            lease.close()
        s3.delete_object(Bucket=BUCKET, Key=KEY)


class Flaky:
    """An S3 client whose puts fail (a network drop) while `down` is set."""

    def __init__(self, s3: Any) -> None:
        self.s3, self.down, self.failed = s3, threading.Event(), 0

    def put_object(self, **request: Any) -> Any:
        if self.down.is_set():
            self.failed += 1
            raise EndpointConnectionError(endpoint_url="https://s3.amazonaws.com")
        return self.s3.put_object(**request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.s3, name)


def test_a_renewal_that_fails_is_tried_again_and_a_holder_cut_off_stops_before_a_takeover(
    s3: Any, tmp_path: Path
) -> None:
    flaky = Flaky(s3)
    lease = JobLease(flaky, BUCKET, KEY, run_dir=tmp_path / "run", term=TERM).start()
    try:
        flaky.down.set()
        _until(lambda: flaky.failed >= 1, "no renewal was tried")
        flaky.down.clear()  # back within the term: the next retry holds, the job goes on
        time.sleep(TERM)
        lease.check()
        flaky.down.set()  # cut off for good: it stops by itself before a reader could take over
        cut = time.monotonic()
        _until(lambda: lease.lost, "a holder that cannot renew kept the job")
        assert time.monotonic() - cut < TERM + scaled(0.5)
        with pytest.raises(JobLeaseLost, match="could not be renewed"):
            lease.check()
    finally:
        lease.close()
    with _lease(s3, tmp_path / "next"):  # the next coordinator takes over once a term passed unrenewed
        pass
