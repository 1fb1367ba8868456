"""A user's file (CSV, JSONL or Parquet) read as records, a chunk at a time: memory bounded by the chunk,
never the file.

CSV and JSONL are decoded line by line, so a byte that is not UTF-8 is named by its line and its offset in
the file; a byte-order mark at the start is not part of the first column's name. Lines end at `\\n`
(`\\r\\n` too); a CSV written with bare `\\r` line ends is read as such. Parquet is read a batch at a time;
its binary columns must hold UTF-8. Every problem is a `DataError` naming the file and the line or row.

Usage::

    source = RecordSource.open(Path("reviews.csv"))
    source.columns                     # the header (CSV), the schema (Parquet), every key seen (JSONL)
    for first_row, records in source.chunks():
        ...                            # records[i] is data row first_row + i (1-based, no header)
"""

from __future__ import annotations

import contextlib
import csv
import json
import re
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from coordinator.errors import DataError

CHUNK_ROWS = 20_000
SUPPORTED_SUFFIXES = (".parquet", ".csv", ".jsonl")
BARE_CR = re.compile(r"(?<=\r)(?!\n|$)")  # where a line ended by a lone `\r` ends
csv.field_size_limit(2**31 - 1)  # a review can be longer than the module's default of 131,072 characters

Records = list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class RecordSource:
    path: Path
    kind: str  # ".csv", ".jsonl" or ".parquet"
    columns: list[str]

    @classmethod
    def open(cls, path: Path) -> RecordSource:
        if not path.is_file():
            raise DataError(f"{path}: no such file")
        if path.stat().st_size == 0:
            raise DataError(f"{path}: the file is empty")
        kind = path.suffix.lower()
        if kind not in SUPPORTED_SUFFIXES:
            raise DataError(f"{path}: unsupported file type {kind!r} (use {', '.join(SUPPORTED_SUFFIXES)})")
        source = cls(path, kind, [])
        if kind == ".parquet":
            try:
                source.columns.extend(pq.read_schema(path).names)
            except (pa.ArrowInvalid, OSError) as error:
                raise DataError(f"{path}: not a readable Parquet file ({error})") from None
        elif kind == ".csv":
            with contextlib.closing(_lines(path)) as lines:
                try:
                    source.columns.extend(next(csv.reader(lines), []))
                except csv.Error as error:
                    raise DataError(f"{path}: line 1: not valid CSV ({error})") from None
        else:  # JSONL has no header: its columns are every key of every record (a pass of its own)
            seen: dict[str, None] = {}
            for _, records in source.chunks():
                seen.update((key, None) for record in records for key in record)
            source.columns.extend(sorted(seen))
        return source

    def chunks(self, rows: int | None = None) -> Iterator[tuple[int, Records]]:
        """(first data row, its records), `rows` (`CHUNK_ROWS`) records at a time; at least one in all."""
        rows = rows or CHUNK_ROWS
        reader = {".csv": self._csv, ".jsonl": self._jsonl, ".parquet": self._parquet}[self.kind]
        first, chunk = 1, []
        for record in reader(rows):
            chunk.append(record)
            if len(chunk) == rows:
                yield first, chunk
                first, chunk = first + rows, []
        if chunk:
            yield first, chunk
        elif first == 1:
            raise DataError(f"{self.path}: the file has no data rows")

    def _csv(self, rows: int) -> Iterator[dict[str, Any]]:
        reader = csv.DictReader(_lines(self.path))
        try:
            yield from reader
        except csv.Error as error:
            raise DataError(f"{self.path}: line {reader.line_num}: not valid CSV ({error})") from None

    def _jsonl(self, rows: int) -> Iterator[dict[str, Any]]:
        for number, line in enumerate(_lines(self.path, split_bare_cr=False), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise DataError(f"{self.path}: line {number}: not valid JSON ({error.msg})") from None
            except RecursionError:  # a line of a 100,000-deep array: json.loads exhausts the stack
                raise DataError(f"{self.path}: line {number}: nested too deep to be a record") from None
            if not isinstance(record, dict):
                raise DataError(
                    f"{self.path}: line {number}: expected a JSON object, got {type(record).__name__}"
                )
            yield record

    def _parquet(self, rows: int) -> Iterator[dict[str, Any]]:
        number = 0
        try:
            parquet = pq.ParquetFile(self.path)
            for batch in parquet.iter_batches(batch_size=rows, use_threads=False):
                for record in batch.to_pylist():
                    number += 1
                    yield {column: self._text(column, number, value) for column, value in record.items()}
        except (pa.ArrowInvalid, OSError) as error:
            raise DataError(f"{self.path}: not a readable Parquet file ({error})") from None

    def _text(self, column: str, number: int, value: Any) -> Any:
        if not isinstance(value, bytes):
            return value
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise DataError(
                f"{self.path}: column {column!r}, row {number}: bytes are not valid UTF-8"
            ) from None


def _lines(path: Path, *, split_bare_cr: bool = True) -> Generator[str, None, None]:
    """The file's lines decoded, line ends kept; a line that is not UTF-8 is a `DataError` naming it."""
    offset = 0
    try:
        handle = path.open("rb")
    except OSError as error:  # not readable by this user
        raise DataError(f"{path}: cannot read it ({error.strerror})") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise DataError(
                    f"{path}: line {number}: bytes are not valid UTF-8 (byte {raw[error.start]:#04x} at "
                    f"offset {offset + error.start}); re-encode the file as UTF-8"
                ) from None
            if number == 1:
                line = line.removeprefix("\ufeff")  # a byte-order mark names no column
            offset += len(raw)
            yield from BARE_CR.split(line) if split_bare_cr and "\r" in line else (line,)
