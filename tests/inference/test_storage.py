"""Object storage: a local directory and an S3 prefix behind one interface; bad URIs named."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from inference.checkpoint import load_checkpoint
from inference.dataset import SegmentReader
from inference.errors import InputDataError
from inference.s3_store import S3Store
from inference.storage import LocalStore, open_store, split_uri
from inference.store_errors import ConditionFailed, ObjectNotFound
from tests.aws_errors import queue_error


def exercise(store: LocalStore | S3Store) -> None:
    store.put("a/one.json", b"1")
    store.put("a/two.json", b"2")
    store.put("a/one.json", b"one")  # overwrite in one step
    assert store.get("a/one.json") == b"one"
    assert store.list("a/") == ["a/one.json", "a/two.json"]
    assert store.exists("a/two.json") and not store.exists("a/three.json")
    with store.open_read("a/two.json") as handle:
        assert handle.read() == b"2"
    before = store.fingerprints("a/")
    assert set(before) == {"a/one.json", "a/two.json"} and store.fingerprints("a/") == before
    store.put("a/one.json", b"uno")
    after = store.fingerprints("a/")
    assert after["a/one.json"] != before["a/one.json"] and after["a/two.json"] == before["a/two.json"]
    store.delete("a/two.json")
    with pytest.raises(ObjectNotFound):
        store.get("a/two.json")
    conditional_writes(store)


def conditional_writes(store: LocalStore | S3Store) -> None:
    """Of two writers that read one version, only the first write lands (S3's If-Match/If-None-Match)."""
    first = store.put_if("c/claim.json", b"A", None)  # only where there is none
    with pytest.raises(ConditionFailed):
        store.put_if("c/claim.json", b"B", None)
    data, version = store.get_versioned("c/claim.json")
    assert (data, version) == (b"A", first)
    second = store.put_if("c/claim.json", b"A2", version)
    with pytest.raises(ConditionFailed):  # a writer still holding the first version is refused
        store.put_if("c/claim.json", b"stale", version)
    assert store.get_versioned("c/claim.json") == (b"A2", second) and second != first
    with pytest.raises(ObjectNotFound):
        store.get_versioned("c/none.json")


def test_local_store(tmp_path: Path) -> None:
    store = open_store(f"file://{tmp_path}")
    assert isinstance(store, LocalStore)
    exercise(store)
    assert not list(tmp_path.rglob("*.tmp"))  # atomic writes leave no temporary files
    with pytest.raises(ValueError, match="escapes"):
        store.put("../outside", b"x")


def test_s3_store_in_process_moto(aws_credentials: None) -> None:
    from moto import mock_aws

    with mock_aws():
        boto3.client("s3").create_bucket(Bucket="spotbatch-unit")
        store = open_store("s3://spotbatch-unit/jobs/j1")
        assert isinstance(store, S3Store) and store.uri == "s3://spotbatch-unit/jobs/j1"
        exercise(store)


def test_uri_errors() -> None:
    with pytest.raises(ValueError, match="unsupported storage scheme 'gs'"):
        open_store("gs://bucket/x")
    with pytest.raises(ValueError, match="needs a bucket"):
        open_store("s3:///x")
    assert split_uri("s3://b/data/x.parquet") == ("s3://b/data", "x.parquet")


def stubbed_store(bucket: str = "b", prefix: str = "jobs/j1") -> tuple[S3Store, Stubber]:
    client = boto3.client("s3", region_name="us-east-1")
    return S3Store(bucket, prefix, client=client), Stubber(client)


def listing(*keys: str) -> dict[str, object]:
    return {"Contents": [{"Key": k, "ETag": '"e"', "Size": 1} for k in keys], "KeyCount": len(keys)}


def test_a_missing_object_that_s3_answers_with_403_is_absent(aws_credentials: None) -> None:
    """A worker's role lists only under its job (`s3:ListBucket` with an `s3:prefix` condition), so S3
    answers a GET of a missing checkpoint 403, not 404 (GetObject's documented rule). The store tells the
    two apart with a listing of that key, which the role may make: absent, the first attempt starts."""
    store, stub = stubbed_store()
    with stub:
        queue_error(stub, "get-object-access-denied")
        stub.add_response(
            "list_objects_v2",
            listing(),
            {"Bucket": "b", "Prefix": "jobs/j1/checkpoints/seg-0000.json", "MaxKeys": 1},
        )
        assert load_checkpoint(store, "seg-0000") is None
        queue_error(stub, "head-object-forbidden")
        stub.add_response("list_objects_v2", listing())
        assert not store.exists("checkpoints/seg-0000.json")


def test_a_403_for_an_object_that_is_there_stays_a_refusal_named_once(aws_credentials: None) -> None:
    store, stub = stubbed_store()
    with stub:
        queue_error(stub, "get-object-access-denied")
        stub.add_response("list_objects_v2", listing("jobs/j1/checkpoints/seg-0000.json"))
        with pytest.raises(PermissionError, match=r"s3://b/jobs/j1/checkpoints/seg-0000.json: access denied"):
            store.get("checkpoints/seg-0000.json")
        queue_error(stub, "get-object-access-denied")
        stub.add_client_error("list_objects_v2", "AccessDenied", "Access Denied", 403)
        with pytest.raises(PermissionError, match="access denied, and listing it too"):
            store.get("checkpoints/seg-0000.json")


def test_an_unreadable_input_is_one_line_naming_it_not_a_traceback(aws_credentials: None) -> None:
    store, stub = stubbed_store(prefix="data")
    with stub:
        queue_error(stub, "head-object-forbidden")
        stub.add_response("list_objects_v2", listing("data/x.parquet"))
        with pytest.raises(InputDataError, match=r"s3://b/data/x.parquet: access denied"):
            SegmentReader(store, "x.parquet", 0, 10)
        queue_error(stub, "head-object-forbidden")
        stub.add_response("list_objects_v2", listing())
        with pytest.raises(InputDataError, match=r"s3://b/data/x.parquet: no such object"):
            SegmentReader(store, "x.parquet", 0, 10)


@pytest.mark.parametrize("data", [b"\xff\xfe not utf-8", b"[" * 100_000 + b"]" * 100_000, b'{"x": 1}', b"[]"])
def test_a_corrupt_checkpoint_is_one_checkpoint_error(tmp_path: Path, data: bytes) -> None:
    """Any worker of the job may write a segment's checkpoint: one that is not UTF-8 or nested past the
    recursion limit raised UnicodeDecodeError or RecursionError, a traceback, instead of naming the file."""
    from inference.errors import CheckpointError
    from inference.layout import checkpoint_key

    store = LocalStore(tmp_path)
    store.put(checkpoint_key("seg-0000"), data)
    with pytest.raises(CheckpointError, match="corrupt checkpoint"):
        load_checkpoint(store, "seg-0000")
