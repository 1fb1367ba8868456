"""The canonical dataset: how it is written (row groups sized for the job) and how a worker streams its
segment of it.

The canonical dataset is one or more Parquet files with columns `id` (int64 or string, unique), `text`
(string) and, when known, `label` (string). `spotbatch data prepare` (`coordinator/build/user_dataset.py`)
turns a user's file into it, with row groups of about `ROW_GROUP_BYTES` (a few for a small file, one per
64 MB or so of a big one: a footer stays small, and a reader fetches whole column chunks in few requests).

A worker reads only its segment's file: its footer, then the row groups that overlap the segment, one
record batch at a time (`SegmentReader.chunks`), so its memory is bounded by a chunk and a row group, not by
the segment. A problem found here names the object, the column and the row.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from inference.errors import InputDataError
from inference.storage import ObjectStore
from inference.store_errors import ObjectNotFound

ROW_GROUP_BYTES = 96 * 2**20  # uncompressed: in the 64-128 MB most Parquet readers are tuned for
MIN_ROW_GROUP_ROWS = 1_000


def row_group_rows(table: pa.Table) -> int:
    """Rows per row group for about `ROW_GROUP_BYTES` of this table."""
    return rows_per_group(table.nbytes / max(table.num_rows, 1))


def rows_per_group(bytes_per_row: float) -> int:
    """Rows per row group for about `ROW_GROUP_BYTES` of rows of this size."""
    return max(MIN_ROW_GROUP_ROWS, int(ROW_GROUP_BYTES / max(bytes_per_row, 1.0)))


def write_dataset(table: pa.Table, destination: Path) -> None:
    destination.parent.mkdir(parents=True, exist_ok=True)
    tmp = destination.with_name(f".{destination.name}.tmp")
    pq.write_table(table, tmp, row_group_size=row_group_rows(table))
    tmp.replace(destination)


def overlapping_row_groups(metadata: pq.FileMetaData, start: int, stop: int) -> tuple[list[int], int]:
    """The row groups of a file that overlap its rows `[start, stop)`, and the row the first of them starts
    at (`start` when none does)."""
    groups: list[int] = []
    first_row, offset = start, 0
    for index in range(metadata.num_row_groups):
        size = metadata.row_group(index).num_rows
        if offset < stop and offset + size > start:
            first_row = offset if not groups else first_row
            groups.append(index)
        offset += size
    return groups, first_row


@dataclass(frozen=True, slots=True)
class Chunk:
    """Rows `[first, first + len(texts))` of a segment (offsets from the segment's first row)."""

    first: int
    ids: pa.Array
    texts: list[str]


class SegmentReader:
    """Rows `[start, stop)` of one Parquet object, streamed in chunks; opening it reads only the footer."""

    def __init__(
        self,
        store: ObjectStore,
        key: str,
        start: int,
        stop: int,
        *,
        text_column: str = "text",
        id_column: str = "id",
    ) -> None:
        self.where = f"{store.uri}/{key}"
        self.start, self.stop = start, stop
        self.columns = (id_column, text_column)
        self._handle = _open(store, key, self.where)
        self._parquet = pq.ParquetFile(self._handle)
        names = self._parquet.schema_arrow.names
        for column in self.columns:
            if column not in names:
                self.close()
                raise InputDataError(
                    f"{self.where}: column {column!r} not found; columns are: {', '.join(names)}"
                )
        total = self._parquet.metadata.num_rows
        if not 0 <= start < stop <= total:
            self.close()
            raise InputDataError(
                f"{self.where}: segment rows [{start}, {stop}) outside the dataset's {total} rows"
            )

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> SegmentReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def chunks(self, chunk_rows: int, first_chunk: int = 0) -> Iterator[Chunk]:
        """The segment's chunks of `chunk_rows` rows from `first_chunk` on, one record batch in memory."""
        begin = self.start + first_chunk * chunk_rows
        groups, position = overlapping_row_groups(self._parquet.metadata, begin, self.stop)
        # closed when the segment ends, not left to the garbage collector: an Arrow thread still reading ahead
        # through the Python file object (the S3 reader) when the process exits aborts it ("terminate called
        # without an active exception"). Arrow's threads stay on: without them a segment read here takes
        # twice the wall (the deadline test's job: 2,386 and 2,924 cloud s against 1,435)
        batches = self._parquet.iter_batches(
            batch_size=min(chunk_rows, 65_536),
            row_groups=groups,
            columns=list(self.columns),
        )
        with contextlib.closing(batches):
            yield from self._cut(batches, begin, position, chunk_rows)

    def _cut(
        self, batches: Iterator[pa.RecordBatch], begin: int, position: int, chunk_rows: int
    ) -> Iterator[Chunk]:
        pending: list[pa.RecordBatch] = []
        pending_rows, first = 0, begin - self.start
        for batch in batches:
            low, high = max(begin - position, 0), min(self.stop - position, batch.num_rows)
            position += batch.num_rows
            if high <= low:
                continue
            pending.append(batch.slice(low, high - low))
            pending_rows += high - low
            while pending_rows >= chunk_rows or (pending_rows and position >= self.stop):
                table = pa.Table.from_batches(pending)
                take = min(chunk_rows, pending_rows)
                yield self._chunk(first, table.slice(0, take))
                rest = table.slice(take)
                pending, pending_rows, first = rest.to_batches(), rest.num_rows, first + take
            if position >= self.stop:
                return

    def _chunk(self, first: int, table: pa.Table) -> Chunk:
        id_column, text_column = self.columns
        texts = table.column(text_column).to_pylist()
        for number, text in enumerate(texts, start=self.start + first + 1):
            if not isinstance(text, str):
                raise InputDataError(
                    f"{self.where}: column {text_column!r}, row {number}: expected text, got {text!r}; "
                    "prepare the data with `spotbatch data prepare` first"
                )
        return Chunk(first, table.column(id_column).combine_chunks(), texts)


def _open(store: ObjectStore, key: str, where: str) -> BinaryIO:
    try:
        return store.open_read(key)
    except ObjectNotFound:
        raise InputDataError(f"{where}: no such object") from None
    except PermissionError as error:  # S3's 403, or a local file the worker may not read
        raise InputDataError(
            f"{where}: access denied ({error.strerror})" if error.strerror else str(error)
        ) from None
