"""Fetch a verified job's output to local files, beside the input's text and label.

`verify.py` has proved each segment's predictions are its input rows exactly once, from manifests. For a
job small enough to look at (the default flow), this joins them, segment by segment, to the input's `id`,
`text` and `label` (empty when the input has none), in input order, and writes `predictions.csv` and
`.parquet`: one segment in memory at a time, each file written to a temporary name and renamed. A
segment whose predicted ids are not its input ids raises `MergeError` naming the segment and a few ids,
and nothing is written. A big job's output stays in S3 (`spotbatch fetch` downloads it on request).

Usage::

    report = merge_results(job_store, input_store, state.segments(job_id), Path("runs/job-1"),
                           default_input_key="data/sentences.parquet")
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from coordinator.errors import MergeError
from coordinator.job.core import SegmentRow
from coordinator.job.data.result_files import ResultFiles
from inference.checkpoint import read_segment_table
from inference.dataset import overlapping_row_groups
from inference.storage import ObjectStore

RESULT_COLUMNS = ("id", "text", "label", "prediction", "score")
SHOWN = 5  # ids named in an error message
RESULT_SCHEMA_TYPES = {
    "text": pa.string(),
    "label": pa.string(),
    "prediction": pa.string(),
    "score": pa.float64(),
}


@dataclass(frozen=True, slots=True)
class MergeReport:
    rows: int
    csv_path: Path
    parquet_path: Path


def input_rows(store: ObjectStore, key: str, start: int, stop: int, columns: Sequence[str]) -> pa.Table:
    """Rows `[start, stop)` of one input file, reading only the row groups they overlap."""
    with store.open_read(key) as handle:
        parquet = pq.ParquetFile(handle)
        wanted = [c for c in columns if c in parquet.schema_arrow.names]
        groups, first = overlapping_row_groups(parquet.metadata, start, stop)
        # no Arrow threads calling back into the Python file (the S3 reader) from their own: the coordinator
        # reads little here, and an abort at its exit was seen once (`dataset.SegmentReader.chunks`)
        table = parquet.read_row_groups(groups, columns=wanted, use_threads=False)
    return table.slice(start - first, stop - start)


def _joined(
    store: ObjectStore, source: pa.Table, segment: SegmentRow, columns: tuple[str, str, str]
) -> pa.Table:
    id_column, text_column, label_column = columns
    predicted = read_segment_table(store, segment.segment_id)
    ids = source.column(id_column)
    known = set(ids.to_pylist())
    seen = predicted.column("id").to_pylist()
    missing = sorted(known - set(seen), key=str)
    extra = sorted(set(seen) - known, key=str)
    repeated = len(seen) - len(set(seen))
    if missing or extra or repeated:
        raise MergeError(
            f"{store.uri}: segment {segment.segment_id}'s outputs are not its input rows exactly once: "
            f"{len(missing)} missing {missing[:SHOWN]}, {repeated} duplicated, {len(extra)} unknown "
            f"{extra[:SHOWN]}; nothing was written"
        )
    order = pc.index_in(ids, value_set=predicted.column("id"))
    labels = (
        source.column(label_column)
        if label_column in source.column_names
        else pa.nulls(len(ids), pa.string())
    )
    return pa.table(
        {
            "id": ids,
            "text": source.column(text_column).cast(pa.string()),
            "label": pc.fill_null(labels.cast(pa.string()), ""),
            "prediction": predicted.column("prediction").take(order),
            "score": predicted.column("score").take(order),
        }
    )


def merge_results(
    job_store: ObjectStore,
    input_store: ObjectStore,
    segments: Sequence[SegmentRow],
    out_dir: Path,
    *,
    default_input_key: str,
    id_column: str = "id",
    text_column: str = "text",
    label_column: str = "label",
) -> MergeReport:
    csv_path, parquet_path = out_dir / "predictions.csv", out_dir / "predictions.parquet"
    columns = (id_column, text_column, label_column)
    with ResultFiles(parquet_path, csv_path) as files:
        for segment in segments:
            source = input_rows(
                input_store, segment.input_key or default_input_key, segment.start, segment.stop, columns
            )
            files.write(_joined(job_store, source, segment, columns))
    return MergeReport(files.rows, csv_path, parquet_path)
