"""Object storage: a local directory and an S3 prefix behind one interface; bad URIs named."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest

from inference.storage import LocalStore, ObjectNotFound, S3Store, open_store, split_uri


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
