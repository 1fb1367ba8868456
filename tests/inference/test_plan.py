"""The batch plan and the storage interface, through their public functions."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest

from coordinator.job.segments import plan_segments
from inference.plan import plan_batches
from inference.storage import LocalStore, ObjectNotFound, S3Store, open_store, split_uri


def test_plan_sorts_by_length_inside_chunks_and_covers_every_row_once() -> None:
    lengths = [(i * 37) % 50 + 3 for i in range(1_000)]
    plan = plan_batches(lengths, batch_size=16, checkpoint_every=5)
    rows = [offset for batch in plan.batches for offset in batch.rows]
    assert sorted(rows) == list(range(1_000))
    for batch in plan.batches:
        first, stop = plan.chunk_range(batch.chunk)
        assert all(first <= offset < stop for offset in batch.rows)  # never crosses a checkpoint chunk
        assert [lengths[o] for o in batch.rows] == sorted(lengths[o] for o in batch.rows)
    assert plan.batches == plan_batches(lengths, 16, 5).batches  # deterministic: resume relies on it
    assert [plan.is_chunk_end(b.index) for b in plan.batches].count(True) == 13  # ceil(1000 / 80)


def test_plan_rejects_nonsense_sizes() -> None:
    with pytest.raises(ValueError, match="batch size"):
        plan_batches([1, 2], batch_size=0, checkpoint_every=1)


def test_segments_are_contiguous_and_balanced() -> None:
    segments = plan_segments(10_000, 3, "s3://b/x.parquet")
    assert [(s.start, s.stop) for s in segments] == [(0, 3334), (3334, 6667), (6667, 10_000)]
    assert [s.segment_id for s in segments] == ["seg-0000", "seg-0001", "seg-0002"]
    with pytest.raises(ValueError, match="between 1 and 5"):
        plan_segments(5, 6, "x")


def exercise(store: LocalStore | S3Store) -> None:
    store.put("a/one.json", b"1")
    store.put("a/two.json", b"2")
    store.put("a/one.json", b"one")  # overwrite in one step
    assert store.get("a/one.json") == b"one"
    assert store.list("a/") == ["a/one.json", "a/two.json"]
    assert store.exists("a/two.json") and not store.exists("a/three.json")
    with store.open_read("a/two.json") as handle:
        assert handle.read() == b"2"
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
