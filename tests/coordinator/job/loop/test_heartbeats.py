"""Heartbeats read by change: one listing a cycle, and a GET only for the objects that moved."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import boto3
import pytest

from coordinator.job.loop.heartbeats import HeartbeatReader, parse_heartbeat
from inference.heartbeat import Heartbeat
from inference.layout import heartbeat_key
from inference.s3_store import S3Store
from inference.storage import LocalStore, ObjectStore


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path, aws_credentials: None) -> Iterator[ObjectStore]:
    if request.param == "local":
        yield LocalStore(tmp_path)
        return
    from moto import mock_aws

    with mock_aws():
        client = boto3.client("s3")
        client.create_bucket(Bucket="beats")
        yield S3Store("beats", "jobs/j", client=client)


def beat(store: ObjectStore, segment: str, rows: int) -> None:
    record = Heartbeat(segment, "i-1", "spot", f"j/{segment}/1", 100, rows_done=rows, ts=time.time())
    store.put(heartbeat_key(segment), json.dumps(asdict(record)).encode())


def test_only_the_heartbeats_that_changed_are_fetched(store: ObjectStore) -> None:
    segments = [f"seg-{n:04d}" for n in range(5)]
    for segment in segments:
        beat(store, segment, 1)
    store.put("checkpoints/seg-0000.json", b"{}")  # not a heartbeat: never listed nor fetched
    reader = HeartbeatReader(store)

    first = reader.changed(segments)
    assert {s: b.rows_done for s, b in first.items()} == dict.fromkeys(segments, 1)
    assert (reader.requests.lists, reader.requests.gets) == (1, 5)

    assert reader.changed(segments) == {}  # nothing moved: one listing, no GET
    assert (reader.requests.lists, reader.requests.gets) == (2, 5)

    beat(store, "seg-0001", 2)
    beat(store, "seg-0003", 2)
    moved = reader.changed(segments)
    assert {s: b.rows_done for s, b in moved.items()} == {"seg-0001": 2, "seg-0003": 2}
    assert (reader.requests.lists, reader.requests.gets) == (3, 7)

    assert reader.changed(["seg-0004"]) == {} and reader.changed([]) == {}


def test_a_torn_heartbeat_is_no_beat_and_is_read_again_once_rewritten(store: ObjectStore) -> None:
    store.put(heartbeat_key("seg-0000"), b'{"segment_id": "seg-0000", "torn')
    reader = HeartbeatReader(store)
    assert reader.changed(["seg-0000"]) == {}
    assert reader.changed(["seg-0000"]) == {} and reader.requests.gets == 1  # not fetched again unchanged
    beat(store, "seg-0000", 7)
    assert reader.changed(["seg-0000"])["seg-0000"].rows_done == 7


@pytest.mark.parametrize(
    ("code", "status", "raised", "says"),
    [
        ("AccessDenied", 403, "PermissionDenied", "may not call s3:ListBucket; grant it in the coordinator"),
        ("InternalError", 500, "ThrottledError", "listing the job's heartbeats"),
    ],
)
def test_a_failed_listing_is_a_setup_error_or_a_look_skipped(
    aws_credentials: None, code: str, status: int, raised: str, says: str
) -> None:
    """Denied: the job stops and says what to grant (no traceback); S3 busy past its retries: this cycle
    looks at nothing and the next one lists again."""
    from botocore.stub import Stubber

    from coordinator import errors

    client = boto3.client("s3", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_client_error("list_objects_v2", service_error_code=code, http_status_code=status)
        reader = HeartbeatReader(S3Store("beats", "jobs/j", client=client))
        with pytest.raises(getattr(errors, raised), match=says):
            reader.changed(["seg-0000"])


def _forged(segment: str = "seg-0001", **fields: object) -> bytes:
    record = asdict(Heartbeat(segment, "i-1", "spot", f"j/{segment}/1", 100, rows_done=5, ts=time.time()))
    return json.dumps({**record, **fields}).encode()


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\xff\xfe{}", "not UTF-8"),
        (b"[" * 5_000 + b"]" * 5_000, "nested deeper"),
        (_forged(ts="1796378400"), "ts '1796378400' is not"),
        (_forged(ts=float("nan")), "NaN is not a number"),
        (_forged()[:-1] + b', "rows_done": ' + b"9" * 5_000 + b"}", "an integer of 5,000 digits"),
        (_forged()[:-1] + b', "ts": 1' + b"0" * 400 + b"}", "an integer of 401 digits"),
        (_forged()[:-1] + b', "ts": 1e999}', "1e999 is not a finite number"),
        (_forged(rows_done=-5), "rows_done -5 is negative"),
        (_forged(rows_done=101), "rows_done 101 is more than rows_total"),
        (_forged(rows_done=True), "rows_done True is not int"),
        (_forged(state="finished"), "state 'finished'"),
        (_forged(segment="seg-0002"), "names segment 'seg-0002'"),
        (json.dumps([1, 2]).encode(), "list, not an object"),
        (b"x" * 20_000, "more than"),
    ],
)
def test_a_heartbeat_that_is_not_a_workers_is_no_beat_and_says_why(
    data: bytes, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Any worker of the job may write any heartbeat object: one that raised out of the loop (non-UTF-8,
    deep nesting, a string ts) stopped the job for good; now it is no beat, with one warning line."""
    assert parse_heartbeat("seg-0001", data) is None
    assert why in caplog.text


def test_a_workers_heartbeat_parses() -> None:
    beat = parse_heartbeat("seg-0001", _forged(rows_per_s=3))
    assert beat is not None and beat.rows_done == 5 and beat.rows_per_s == 3
