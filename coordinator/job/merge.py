"""Merge: every segment's checkpointed parts into one result file, each input row exactly once, verified.

The result has the input's `id`, `text` and `label` (empty when the input has none) with the model's
`prediction` and `score`, in input order, as CSV and Parquet. Before anything is written, the merge checks
that the predicted ids are exactly the input ids, each once; otherwise it raises `MergeError` naming how many
ids are missing or duplicated and the first few of them, and writes nothing.

Usage::

    report = merge_results(job_store, input_store, "data/sentences.parquet", segment_ids, Path("runs/job-1"))
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from coordinator.errors import MergeError
from inference.checkpoint import read_segment_output
from inference.storage import ObjectStore

RESULT_COLUMNS = ("id", "text", "label", "prediction", "score")
SHOWN = 5  # ids named in an error message


@dataclass(frozen=True, slots=True)
class MergeReport:
    rows: int
    csv_path: Path
    parquet_path: Path


def _write_atomically(path: Path, write: object) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    write(tmp)  # type: ignore[operator]
    os.replace(tmp, path)


def merge_results(
    job_store: ObjectStore,
    input_store: ObjectStore,
    input_key: str,
    segment_ids: Sequence[str],
    out_dir: Path,
    *,
    id_column: str = "id",
    text_column: str = "text",
    label_column: str = "label",
) -> MergeReport:
    with input_store.open_read(input_key) as handle:
        table = pq.read_table(handle)
    ids = table.column(id_column).to_pylist()
    predicted: dict[str, tuple[str, float]] = {}
    seen: Counter[str] = Counter()
    for segment in segment_ids:
        for row_id, label, score in read_segment_output(job_store, segment):
            seen[row_id] += 1
            predicted[row_id] = (label, score)
    duplicated = sorted(i for i, n in seen.items() if n > 1)
    wanted = [str(i) for i in ids]
    missing = [i for i in wanted if i not in predicted]
    extra = sorted(set(predicted) - set(wanted))
    if duplicated or missing or extra:
        raise MergeError(
            f"{job_store.uri}: the outputs are not the input rows exactly once: {len(missing)} missing "
            f"{missing[:SHOWN]}, {len(duplicated)} duplicated {duplicated[:SHOWN]}, {len(extra)} unknown "
            f"{extra[:SHOWN]}; nothing was written"
        )
    labels = table.column(label_column).to_pylist() if label_column in table.column_names else [""] * len(ids)
    result = pa.table(
        {
            "id": table.column(id_column),
            "text": table.column(text_column),
            "label": pa.array(labels, pa.string()),
            "prediction": pa.array([predicted[i][0] for i in wanted], pa.string()),
            "score": pa.array([predicted[i][1] for i in wanted], pa.float64()),
        }
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path, parquet_path = out_dir / "predictions.csv", out_dir / "predictions.parquet"
    _write_atomically(csv_path, lambda tmp: pacsv.write_csv(result, tmp))
    _write_atomically(parquet_path, lambda tmp: pq.write_table(result, tmp))
    return MergeReport(result.num_rows, csv_path, parquet_path)
