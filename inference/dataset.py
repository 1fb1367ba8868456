"""The canonical dataset: how it is written (small row groups) and how a worker reads its segment of it.

The canonical dataset is a Parquet file with columns `id` (int64 or string, unique), `text` (string) and,
when known, `label` (string). It is written with small row groups so that a worker reads only the row
groups of its own segment. `spotbatch data prepare` (`coordinator/build/user_dataset.py`) turns a user's
file into it; a problem found here names the object, the column and the row.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from inference.errors import InputDataError
from inference.storage import ObjectStore
from inference.store_errors import ObjectNotFound

ROW_GROUP_SIZE = 500  # a 10,000-row dataset split in 10-40 segments still reads a few row groups each


def write_dataset(table: pa.Table, destination: Path) -> None:
    destination.parent.mkdir(parents=True, exist_ok=True)
    tmp = destination.with_name(f".{destination.name}.tmp")
    pq.write_table(table, tmp, row_group_size=ROW_GROUP_SIZE)
    tmp.replace(destination)


@dataclass(frozen=True, slots=True)
class SegmentRows:
    ids: list[Any]
    texts: list[str]


def read_segment(
    store: ObjectStore, key: str, start: int, stop: int, *, text_column: str = "text", id_column: str = "id"
) -> SegmentRows:
    """Read rows `[start, stop)` of a Parquet object, touching only the row groups that overlap them."""
    where = f"{store.uri}/{key}"
    try:
        opened = store.open_read(key)
    except ObjectNotFound:
        raise InputDataError(f"{where}: no such object") from None
    except PermissionError as error:  # S3's 403, or a local file the worker may not read
        raise InputDataError(
            f"{where}: access denied ({error.strerror})" if error.strerror else str(error)
        ) from None
    with opened as handle:
        parquet = pq.ParquetFile(handle)
        names = parquet.schema_arrow.names
        for column in (id_column, text_column):
            if column not in names:
                raise InputDataError(f"{where}: column {column!r} not found; columns are: {', '.join(names)}")
        total = parquet.metadata.num_rows
        if not 0 <= start < stop <= total:
            raise InputDataError(
                f"{where}: segment rows [{start}, {stop}) outside the dataset's {total} rows"
            )
        groups, first_row, offset = [], None, 0
        for index in range(parquet.metadata.num_row_groups):
            size = parquet.metadata.row_group(index).num_rows
            if offset < stop and offset + size > start:
                groups.append(index)
                first_row = offset if first_row is None else first_row
            offset += size
        table = parquet.read_row_groups(groups, columns=[id_column, text_column])
    assert first_row is not None
    table = table.slice(start - first_row, stop - start)
    texts = table.column(text_column).to_pylist()
    for number, text in enumerate(texts, start=start + 1):
        if not isinstance(text, str):
            raise InputDataError(
                f"{where}: column {text_column!r}, row {number}: expected text, got {text!r}; "
                "prepare the data with `spotbatch data prepare` first"
            )
    return SegmentRows(ids=table.column(id_column).to_pylist(), texts=texts)
