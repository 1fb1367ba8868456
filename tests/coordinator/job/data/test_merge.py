"""Verify and fetch: exactly once proven from manifests and input digests, reading no prediction row; then
the small job's local files, every row once in input order, or nothing written and the wrong ids named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from coordinator.errors import MergeError
from coordinator.job.core.segment_states import SegmentState
from coordinator.job.core.tables import SegmentRow
from coordinator.job.data.merge import merge_results
from coordinator.job.data.verify import JobManifest, verify_outputs
from inference.checkpoint import Checkpoint, encode_part, load_versioned_checkpoint, save_checkpoint
from inference.digest import as_text, id_digest
from inference.errors import CheckpointError
from inference.layout import JOB_MANIFEST_KEY, manifest_key
from inference.manifest import write_segment_manifest
from inference.storage import LocalStore


def _segment_output(
    store: LocalStore, segment: str, rows: list[tuple[Any, str, float]], start: int, *, manifest: bool = True
) -> None:
    key = f"parts/{segment}/{start:08d}-{start + len(rows):08d}.parquet"
    ids = pa.array([r[0] for r in rows], pa.int64())
    store.put(key, encode_part(ids, [r[1] for r in rows], [r[2] for r in rows]))
    checkpoint = Checkpoint(segment, start, start + len(rows), 64, 50, next_batch=1, rows_done=len(rows))
    checkpoint.parts, checkpoint.done, checkpoint.digest = [key], True, as_text(id_digest(ids))
    checkpoint.first_id, checkpoint.last_id = str(rows[0][0]), str(rows[-1][0])
    save_checkpoint(store, checkpoint, load_versioned_checkpoint(store, segment)[1])  # over what is there
    if manifest:
        write_segment_manifest(store, checkpoint)


def _segments(ids: list[list[int]]) -> list[SegmentRow]:
    rows, start = [], 0
    for index, chunk in enumerate(ids):
        digest = as_text(id_digest(pa.array(chunk, pa.int64())))
        name, stop = f"seg-{index:04d}", start + len(chunk)
        rows.append(SegmentRow("j", name, start, stop, SegmentState.DONE, "spot", 1, "in.parquet", digest))
        start += len(chunk)
    return rows


def _input(tmp_path: Path) -> LocalStore:
    (tmp_path / "data").mkdir()
    table = pa.table({"id": [5, 6, 7, 8], "text": list("abcd"), "label": ["x"] * 4})
    pq.write_table(table, tmp_path / "data" / "in.parquet", row_group_size=3)  # a group across segments
    return LocalStore(tmp_path / "data")


def test_verify_then_merge_writes_every_row_once_or_names_what_is_wrong(tmp_path: Path) -> None:
    data, job = _input(tmp_path), LocalStore(tmp_path / "job")
    segments = _segments([[5, 6], [7, 8]])
    _segment_output(job, "seg-0000", [(6, "negative", 0.8), (5, "positive", 0.9)], 0)  # a part out of order
    _segment_output(job, "seg-0001", [(7, "positive", 0.7), (8, "positive", 0.6)], 2, manifest=False)
    manifest = verify_outputs(job, segments, job_id="j")  # seg-0001's manifest: from its done checkpoint
    assert (manifest.rows, manifest.segments) == (4, 2)
    assert manifest.digest == as_text(id_digest(pa.array([5, 6, 7, 8])))
    assert JobManifest.from_json("m", job.get(JOB_MANIFEST_KEY)) == manifest
    assert json.loads(job.get(manifest_key("seg-0001")))["rows"] == 2
    report = merge_results(job, data, segments, tmp_path / "out", default_input_key="in.parquet")
    table = pq.read_table(report.parquet_path).to_pylist()
    assert [r["id"] for r in table] == [5, 6, 7, 8] and [r["prediction"] for r in table[:2]] == [
        "positive",
        "negative",
    ]
    assert report.csv_path.read_text().splitlines()[0] == '"id","text","label","prediction","score"'
    # a duplicated id and a missing one: the digest differs, the segment is named, no job manifest
    job.delete(JOB_MANIFEST_KEY)
    _segment_output(job, "seg-0001", [(6, "positive", 0.7), (8, "positive", 0.6)], 2)
    with pytest.raises(
        MergeError, match=r"1 of 2 segment\(s\).*seg-0001: ids digest [0-9a-f]{16}, the input's"
    ):
        verify_outputs(job, segments, job_id="j")
    assert not job.exists(JOB_MANIFEST_KEY)
    with pytest.raises(
        MergeError, match=r"seg-0001's outputs .* 1 missing \[7\], 0 duplicated, 1 unknown \[6\]"
    ):
        merge_results(job, data, segments, tmp_path / "out2", default_input_key="in.parquet")
    assert not list((tmp_path / "out2").glob("*"))


def test_a_segment_without_output_or_with_a_corrupt_manifest_is_named(tmp_path: Path) -> None:
    job = LocalStore(tmp_path / "job")
    segments = _segments([[5, 6], [7, 8]])
    _segment_output(job, "seg-0000", [(5, "positive", 0.9), (6, "negative", 0.8)], 0)
    job.put(manifest_key("seg-0001"), b'{"segment_id": 1}')
    with pytest.raises(MergeError, match=r"seg-0001: .*seg-0001.json: corrupt manifest"):
        verify_outputs(job, segments, job_id="j")
    job.delete(manifest_key("seg-0001"))
    with pytest.raises(MergeError, match=r"seg-0001: no manifest and no done checkpoint"):
        verify_outputs(job, segments, job_id="j")


@pytest.mark.parametrize("part", [b"\xff\xfe", b"", b"id,prediction,score\n7,positive,high\n"])
def test_a_corrupt_part_is_named_not_a_traceback(tmp_path: Path, part: bytes) -> None:
    (tmp_path / "data").mkdir()
    pq.write_table(pa.table({"id": [7], "text": ["a"]}), tmp_path / "data" / "in.parquet")
    job = LocalStore(tmp_path / "job")
    _segment_output(job, "seg-0000", [(7, "positive", 0.7)], 0)
    job.put("parts/seg-0000/00000000-00000001.parquet", part)
    with pytest.raises(CheckpointError, match=r"job/parts/seg-0000/00000000-00000001.parquet: corrupt part"):
        merge_results(
            job,
            LocalStore(tmp_path / "data"),
            _segments([[7]]),
            tmp_path / "out",
            default_input_key="in.parquet",
        )


def test_fetch_writes_the_parts_the_job_manifest_lists_or_nothing(tmp_path: Path) -> None:
    from coordinator.job.data.fetch import fetch_output

    job = LocalStore(tmp_path / "job")
    segments = _segments([[5, 6], [7, 8]])
    _segment_output(job, "seg-0000", [(6, "negative", 0.8), (5, "positive", 0.9)], 0)
    _segment_output(job, "seg-0001", [(7, "positive", 0.7), (8, "positive", 0.6)], 2)
    with pytest.raises(MergeError, match="no job manifest"):
        fetch_output(job, tmp_path / "early")
    verify_outputs(job, segments, job_id="j")
    fetched = fetch_output(job, tmp_path / "out", csv=True)
    assert fetched.rows == 4 and fetched.parts == 2
    assert sorted(pq.read_table(tmp_path / "out" / "predictions.parquet").column("id").to_pylist()) == [
        5,
        6,
        7,
        8,
    ]
    assert (tmp_path / "out" / "predictions.csv").read_text().count("\n") == 5
    # a part rewritten after the verify (any worker of the job may write there): refused, nothing written
    _segment_output(job, "seg-0001", [(7, "positive", 0.7), (9, "positive", 0.6)], 2, manifest=False)
    with pytest.raises(
        MergeError, match=r"its parts hold 4 rows of digest [0-9a-f]{16}, its manifest says 4 of"
    ):
        fetch_output(job, tmp_path / "bad", csv=True)
    assert list((tmp_path / "bad").iterdir()) == []


def _verified_job(tmp_path: Path) -> LocalStore:
    job = LocalStore(tmp_path / "job")
    _segment_output(job, "seg-0000", [(6, "negative", 0.8), (5, "positive", 0.9)], 0)
    _segment_output(job, "seg-0001", [(7, "positive", 0.7), (8, "positive", 0.6)], 2)
    verify_outputs(job, _segments([[5, 6], [7, 8]]), job_id="j")
    return job


def test_fetch_names_a_listed_part_that_is_missing_or_listed_twice(tmp_path: Path) -> None:
    """A deleted part was a traceback; a manifest listing a part twice (and its rows and digest recomputed
    to match) wrote those ids twice."""
    from coordinator.job.data.fetch import fetch_output

    job = _verified_job(tmp_path)
    manifest = json.loads(job.get(JOB_MANIFEST_KEY))
    (job.root / manifest["parts"][0]).unlink()
    with pytest.raises(MergeError, match=r"parts/seg-0000/.*: a part the job manifest lists is missing"):
        fetch_output(job, tmp_path / "gone")
    job = _verified_job(tmp_path / "again")
    manifest = json.loads(job.get(JOB_MANIFEST_KEY))
    manifest["parts"] = [manifest["parts"][1], manifest["parts"][1]]
    job.put(JOB_MANIFEST_KEY, json.dumps(manifest).encode())
    with pytest.raises(MergeError, match=r"it lists parts/seg-0001/\S+ twice"):
        fetch_output(job, tmp_path / "twice")
    assert not (tmp_path / "twice" / "predictions.parquet").exists()


def test_fetch_never_writes_through_a_link_left_at_its_temporary_name(tmp_path: Path) -> None:
    from coordinator.job.data.fetch import fetch_output

    job = _verified_job(tmp_path)
    out, precious = tmp_path / "out", tmp_path / "precious.txt"
    out.mkdir()
    precious.write_text("keep me")
    (out / ".predictions.parquet.tmp").symlink_to(precious)
    (out / ".predictions.csv.tmp").symlink_to(precious)
    assert fetch_output(job, out, csv=True).rows == 4
    assert precious.read_text() == "keep me"
    assert sorted(p.name for p in out.iterdir()) == ["predictions.csv", "predictions.parquet"]
