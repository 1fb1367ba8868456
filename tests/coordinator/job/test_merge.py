"""The merge: every input row exactly once, or nothing written and the wrong ids named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from coordinator.errors import MergeError
from coordinator.job.merge import merge_results
from inference.checkpoint import Checkpoint, encode_part, load_versioned_checkpoint, save_checkpoint
from inference.errors import CheckpointError
from inference.storage import LocalStore


def _segment_output(store: LocalStore, segment: str, rows: list[tuple[Any, str, float]], start: int) -> None:
    key = f"parts/{segment}/{start:08d}-{start + len(rows):08d}.csv"
    store.put(key, encode_part(rows))
    save_checkpoint(
        store,
        Checkpoint(
            segment,
            start,
            start + len(rows),
            64,
            50,
            next_batch=1,
            rows_done=len(rows),
            parts=[key],
            done=True,
        ),
        load_versioned_checkpoint(store, segment)[1],  # over what is there
    )


def test_merge_writes_every_row_once_or_names_what_is_wrong(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    pq.write_table(
        pa.table({"id": [5, 6, 7, 8], "text": list("abcd"), "label": ["x"] * 4}),
        tmp_path / "data" / "in.parquet",
    )
    data = LocalStore(tmp_path / "data")
    job = LocalStore(tmp_path / "job")
    _segment_output(job, "seg-0000", [(5, "positive", 0.9), (6, "negative", 0.8)], 0)
    _segment_output(job, "seg-0001", [(7, "positive", 0.7), (8, "positive", 0.6)], 2)
    report = merge_results(job, data, "in.parquet", ["seg-0000", "seg-0001"], tmp_path / "out")
    table = pq.read_table(report.parquet_path).to_pylist()
    assert [r["id"] for r in table] == [5, 6, 7, 8] and table[2]["prediction"] == "positive"
    assert report.csv_path.read_text().splitlines()[0] == '"id","text","label","prediction","score"'
    # a duplicated id and a missing one: refused, named, nothing written
    _segment_output(job, "seg-0001", [(6, "positive", 0.7), (8, "positive", 0.6)], 2)
    with pytest.raises(MergeError, match=r"1 missing \['7'\], 1 duplicated \['6'\]"):
        merge_results(job, data, "in.parquet", ["seg-0000", "seg-0001"], tmp_path / "out2")
    assert not (tmp_path / "out2").exists()


@pytest.mark.parametrize(
    "part",
    [b"\xff\xfe", b"", b"id,prediction,score\n7,positive,high\n", b"id,prediction,score\n7,positive\n"],
)
def test_a_corrupt_part_is_named_not_a_traceback(tmp_path: Path, part: bytes) -> None:
    (tmp_path / "data").mkdir()
    pq.write_table(pa.table({"id": [7], "text": ["a"]}), tmp_path / "data" / "in.parquet")
    job = LocalStore(tmp_path / "job")
    _segment_output(job, "seg-0000", [(7, "positive", 0.7)], 0)
    job.put("parts/seg-0000/00000000-00000001.csv", part)
    with pytest.raises(CheckpointError, match=r"job/parts/seg-0000/00000000-00000001.csv: corrupt part"):
        merge_results(job, LocalStore(tmp_path / "data"), "in.parquet", ["seg-0000"], tmp_path / "out")
