"""A job's input as files and segments: one Parquet object or every `.parquet` object under a prefix, read
from their footers alone, cut into segments, and each segment's id digest computed once.

A segment is a row range of one file (as input splits never span files in Hadoop and Spark): a worker reads
that file's footer and the row groups its range overlaps. Two ways to cut:

- by count (`count`): one file into that many equal ranges, as a small job always has; over several files,
  ranges of about `rows / count` rows;
- by work (`segment_rows`, from minutes per segment and the planned speed): ranges of about that many rows.

Over several files, or by work, a range ends at a row-group boundary wherever the row groups are smaller
than the target, and a row group bigger than 1.5 times the target is split evenly inside it.

The input digests (`inference/digest.py`) are computed by streaming the id column of each file once (no
text), so the job's output can be proven exactly once from the segments' manifests alone
(`verify.py`). `bytes_read` counts what that read.

Usage::

    files = list_input(store, "data/big/")                       # or "data/sentences.parquet"
    segments = cut_segments(files, count=None, segment_rows=250_000, bucket="b")
    digests = input_digests(store, segments, id_column="id")      # {segment_id: "0123456789abcdef"}
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow.parquet as pq

from coordinator.errors import DataError
from coordinator.job.core import Segment, plan_segments, segment_name
from inference.digest import add_digests, as_text, id_hashes
from inference.storage import ObjectStore
from inference.store_errors import ObjectNotFound

SPLIT_ABOVE = 1.5  # a row group more than this many targets long is split inside
READ_COLUMNS = ("id", "text")  # what a worker reads of every input file


@dataclass(frozen=True, slots=True)
class InputFile:
    key: str
    row_groups: tuple[int, ...]  # rows in each
    columns: tuple[tuple[str, str], ...] = ()  # (name, Arrow type) of each column, from the footer

    @property
    def rows(self) -> int:
        return sum(self.row_groups)


def list_input(store: ObjectStore, input_key: str) -> list[InputFile]:
    """The input's files with their row groups: `input_key` names one object, or a prefix ending in `/`
    whose `.parquet` objects are the input (one in a folder below it is refused, naming it: a stale
    `old/` copy was silently part of the input). Every file has the columns a worker reads, of one type
    across files (int ids in one file and text ids in another paid for both segments, then the merge
    died), checked from the footers before anything is launched."""
    if input_key.endswith("/"):
        keys = [key for key in store.list(input_key) if key.endswith(".parquet")]
        if not keys:
            raise DataError(f"{store.uri}/{input_key}: no .parquet object under this prefix")
        nested = [key for key in keys if "/" in key[len(input_key) :]]
        if nested:
            raise DataError(
                f"{store.uri}/{nested[0]}: in a folder under the input's prefix {input_key} "
                f"({len(nested)} such object(s)): move it out or delete it; only the prefix's own "
                ".parquet objects are the input"
            )
    else:
        keys = [input_key]
    files = [_footer(store, key) for key in keys]
    _same_columns(store, files)
    return files


def _same_columns(store: ObjectStore, files: Sequence[InputFile]) -> None:
    first = dict(files[0].columns)
    for file in files:
        columns = dict(file.columns)
        for name in READ_COLUMNS:
            if name not in columns:
                raise DataError(
                    f"{store.uri}/{file.key}: no column {name!r} (columns: {', '.join(columns) or 'none'})"
                )
            if columns[name] != first[name]:
                raise DataError(
                    f"{store.uri}/{file.key}: column {name!r} is {columns[name]}, in {files[0].key} "
                    f"{first[name]}: one type across the input's files"
                )


def _footer(store: ObjectStore, key: str) -> InputFile:
    where = f"{store.uri}/{key}"
    try:
        with store.open_read(key) as handle:
            metadata = pq.ParquetFile(handle).metadata
    except ObjectNotFound:
        raise DataError(f"{where}: no such object") from None
    except (OSError, ValueError) as error:  # ArrowInvalid is a ValueError: not Parquet, or truncated
        raise DataError(f"{where}: not a Parquet file ({str(error)[:120]})") from None
    groups = tuple(metadata.row_group(index).num_rows for index in range(metadata.num_row_groups))
    if sum(groups) == 0:
        raise DataError(f"{where}: has no rows")
    schema = metadata.schema.to_arrow_schema()
    return InputFile(key, groups, tuple((field.name, str(field.type)) for field in schema))


def cut_segments(
    files: Sequence[InputFile], *, count: int | None, segment_rows: int | None, bucket: str
) -> list[Segment]:
    """The job's segments, named `seg-0000` on in file order (the files sorted by key)."""
    total = sum(file.rows for file in files)
    if segment_rows is None and count is not None and len(files) == 1:
        return plan_segments(files[0].rows, count, f"s3://{bucket}/{files[0].key}")
    target = segment_rows if segment_rows is not None else math.ceil(total / max(count or 1, 1))
    if target < 1:
        raise DataError(f"rows per segment must be at least 1, got {target}")
    segments: list[Segment] = []
    for file in files:
        for start, stop in _ranges(file.row_groups, target):
            segments.append(Segment(segment_name(len(segments)), start, stop, f"s3://{bucket}/{file.key}"))
    return segments


def _ranges(row_groups: Sequence[int], target: int) -> list[tuple[int, int]]:
    """One file's ranges of about `target` rows, cut at row-group boundaries where groups are small."""
    ranges: list[tuple[int, int]] = []
    start = offset = 0
    for size in row_groups:
        if size > SPLIT_ABOVE * target:  # a big group: close what is open, then split it evenly
            if offset > start:
                ranges.append((start, offset))
            pieces = math.ceil(size / target)
            bounds = [offset + size * piece // pieces for piece in range(pieces + 1)]
            ranges.extend(itertools.pairwise(bounds))
            start = offset = offset + size
            continue
        offset += size
        if offset - start >= target:
            ranges.append((start, offset))
            start = offset
    if offset > start:
        ranges.append((start, offset))
    return ranges


def input_digests(store: ObjectStore, segments: Sequence[Segment], *, id_column: str) -> dict[str, str]:
    """Each segment's id digest, streaming only the id column of each file once; and the ids unique across
    the input (two files holding the same ids were "verified exactly once" with every id twice)."""
    seen = SeenIds()
    digests: dict[str, str] = {}
    by_file: dict[str, list[Segment]] = {}
    for segment in segments:
        by_file.setdefault(segment.input_uri, []).append(segment)
    for uri, group in by_file.items():
        key = uri.split("/", 3)[3] if uri.startswith("s3://") else uri
        sums = [0] * len(group)
        starts = np.array([s.start for s in group])
        stops = np.array([s.stop for s in group])
        with store.open_read(key) as handle:
            parquet = pq.ParquetFile(handle)
            if id_column not in parquet.schema_arrow.names:
                raise DataError(f"{store.uri}/{key}: column {id_column!r} not found")
            position = 0
            for batch in parquet.iter_batches(batch_size=262_144, columns=[id_column], use_threads=False):
                try:
                    hashes = id_hashes(batch.column(0))
                except ValueError as error:  # null ids, or a type no worker writes
                    raise DataError(f"{store.uri}/{key}: column {id_column!r}: {error}") from None
                seen.add(hashes, key, position)
                end = position + len(hashes)
                for index in np.nonzero((starts < end) & (stops > position))[0]:
                    low, high = max(starts[index] - position, 0), min(stops[index] - position, len(hashes))
                    sums[index] += int(np.sum(hashes[low:high], dtype=np.uint64))
                position = end
        for segment, total in zip(group, sums, strict=True):
            digests[segment.segment_id] = as_text(add_digests([total]))
    seen.refuse_repeats(store, id_column)
    return digests


class SeenIds:
    """Every id's 64-bit hash with where it is (file, row): ids whose hashes repeat are read again and
    compared, so that only a real repeat is refused. 16 bytes a row in memory (160 MB at 10 M rows)."""

    def __init__(self) -> None:
        self._hashes: list[np.ndarray] = []
        self._where: list[tuple[str, int, int]] = []  # (key, first row, rows) of each batch

    def add(self, hashes: np.ndarray, key: str, first_row: int) -> None:
        self._hashes.append(hashes)
        self._where.append((key, first_row, len(hashes)))

    def refuse_repeats(self, store: ObjectStore, id_column: str) -> None:
        if not self._hashes:
            return
        hashes = np.concatenate(self._hashes)
        order = np.argsort(hashes, kind="stable")
        ordered = hashes[order]
        repeated = np.nonzero(ordered[1:] == ordered[:-1])[0]
        if len(repeated) == 0:
            return
        rows = sorted({int(order[i]) for i in repeated} | {int(order[i + 1]) for i in repeated})
        values = self._values(store, id_column, rows)
        first_seen: dict[str, tuple[str, int]] = {}
        for row in rows:
            key, number, value = values[row]
            if value in first_seen:
                where, at = first_seen[value]
                raise DataError(
                    f"{store.uri}/{key}: id {value!r:.60} at row {number} is also at row {at} of {where}: "
                    "ids must be unique across the input's files"
                )
            first_seen[value] = (key, number)

    def _values(self, store: ObjectStore, id_column: str, rows: list[int]) -> dict[int, tuple[str, int, str]]:
        """The ids at these global rows (file, row in file, id as text), each file read once."""
        starts = np.cumsum([0] + [n for _, _, n in self._where])
        wanted: dict[str, dict[int, int]] = {}
        for row in rows:
            batch = int(np.searchsorted(starts, row, side="right")) - 1
            key, first, _ = self._where[batch]
            wanted.setdefault(key, {})[first + row - int(starts[batch])] = row
        found: dict[int, tuple[str, int, str]] = {}
        for key, by_number in wanted.items():
            with store.open_read(key) as handle:
                ids = pq.ParquetFile(handle).read(columns=[id_column]).column(0)
            for number, row in by_number.items():
                found[row] = (key, number, str(ids[number].as_py()))
        return found
