"""A user's dataset (Parquet, CSV or JSONL) validated and turned into the canonical dataset, streamed: memory
is bounded by a chunk of records and a row group, whatever the file's size.

Two passes over the file (`record_stream.py` reads it a chunk at a time): the first validates every row and
decides the id type; the second writes the Parquet file row group by row group, to a temporary name that
replaces the destination only when it is whole. Every problem is a `DataError` whose message names the
file, the column and the row (1-based data rows, the header not counted), raised before anything is
written. Ids are data and are kept exactly: they become int64 only when every id is a plain integer (ASCII
digits, no leading zero, no sign but `-`, within int64), else every id is kept as the text it was written as
(`007`, `٣`, `2^64-1`); ids that cannot be kept exactly (NaN, floats, booleans) are refused; their
uniqueness is checked by hashes spilled to disk (`unique_ids.py`). Policy for null or empty texts: refused
and reported by default; with `allow_empty_texts=True` they are kept and predicted as the empty string. They
are never dropped.

Usage::

    prepared = prepare_dataset(Path("reviews.csv"), Path("build/data/reviews.parquet"), text_column="review")
    prepared.rows, prepared.numbered
"""

from __future__ import annotations

import contextlib
import math
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from coordinator.build.record_stream import Records, RecordSource
from coordinator.build.unique_ids import Duplicates, UniqueIds
from coordinator.errors import DataError
from inference.dataset import rows_per_group

MAX_REPORTED_ROWS = 5  # how many offending rows an error lists before it says "and N more"
LONG_TEXT_CHARS = 2_000  # texts longer than this are reported at prepare time; the tokenizer truncates them
DEFAULT_ID_COLUMN = "id"  # the ids, when the user names no column
PLAIN_INTEGER = re.compile(r"0|-?[1-9][0-9]*")  # ASCII (the class implies it); "-0" is text: int() loses it
INT64 = (-(2**63), 2**63 - 1)


@dataclass(frozen=True, slots=True)
class PreparedDataset:
    rows: int
    long_texts: int  # rows whose text exceeds LONG_TEXT_CHARS (kept; the tokenizer truncates them)
    empty_texts: int  # rows kept with an empty text (only with allow_empty_texts)
    numbered: bool = False  # no id column: the ids are the 0-based row numbers (said to the user)


@dataclass(slots=True)
class Rows:
    """Rows found with one problem: how many, and the first few."""

    count: int = 0
    first: list[int] = field(default_factory=list)

    def add(self, row: int) -> None:
        self.count += 1
        if len(self.first) < MAX_REPORTED_ROWS:
            self.first.append(row)

    def phrase(self) -> str:
        shown = ", ".join(str(row) for row in self.first)
        more = self.count - len(self.first)
        return (
            f"row {shown}" if self.count == 1 else f"rows {shown}" + (f" and {more} more" if more > 0 else "")
        )


@dataclass(slots=True)
class Findings:
    """What the first pass found."""

    rows: int = 0
    empty_texts: Rows = field(default_factory=Rows)
    missing_ids: Rows = field(default_factory=Rows)
    long_texts: int = 0
    text_chars: int = 0
    plain_ids: bool = True  # every id a plain integer: int64


def prepare_dataset(
    path: Path,
    destination: Path,
    *,
    text_column: str = "text",
    id_column: str | None = None,
    label_column: str | None = "label",
    allow_empty_texts: bool = False,
) -> PreparedDataset:
    """Validate a user's file and write the canonical dataset (id, text[, label]) to `destination`.

    The ids are the `id_column` the user named (refused, naming the columns, when the file has none of
    that name: a misspelt name silently numbered the rows); without a name, the `id` column, or the 0-based
    row numbers when there is none (`numbered`); with "" the row numbers. A column that differs from the
    wanted one only in case or spaces is refused, naming it.
    """
    source = RecordSource.open(path)
    columns = ", ".join(source.columns) or "(none)"
    if text_column not in source.columns:
        raise DataError(f"{path}: column {text_column!r} not found; columns are: {columns}")
    wanted = DEFAULT_ID_COLUMN if id_column is None else id_column
    if id_column and id_column not in source.columns:
        _refuse_a_lookalike_id_column(path, source.columns, id_column)
        raise DataError(
            f"{path}: --id-column {id_column!r} not found; columns are: {columns} (--id-column '' numbers "
            "the rows)"
        )
    numbered = not wanted or wanted not in source.columns
    ids = None if numbered else wanted
    with tempfile.TemporaryDirectory(prefix="spotbatch-ids-") as spill:
        unique = UniqueIds(Path(spill))
        found = Findings()
        for first, records in source.chunks():
            _check_texts(path, records, first, text_column, found)
            if ids is not None:
                _check_ids(path, records, first, ids, found, unique)
        if found.empty_texts.count and not allow_empty_texts:
            raise DataError(
                f"{path}: column {text_column!r}: {found.empty_texts.count} null or empty text(s) at "
                f"{found.empty_texts.phrase()}; fix them, or pass --allow-empty-texts to predict them as "
                "empty strings"
            )
        _refuse_a_lookalike_id_column(path, source.columns, wanted)
        if ids is not None and found.missing_ids.count:
            raise DataError(f"{path}: column {ids!r}: missing id at {found.missing_ids.phrase()}")
        if ids is not None:
            _refuse_duplicates(source, ids, unique.candidates(), found.plain_ids)
    label = label_column if label_column is not None and label_column in source.columns else None
    _write(source, destination, (text_column, ids, label), found)
    return PreparedDataset(
        found.rows, long_texts=found.long_texts, empty_texts=found.empty_texts.count, numbered=numbered
    )


def _check_texts(path: Path, records: Records, first: int, column: str, found: Findings) -> None:
    for number, record in enumerate(records, start=first):
        value = record.get(column)
        if value is not None and not isinstance(value, str):
            raise DataError(
                f"{path}: column {column!r}, row {number}: expected text, got {type(value).__name__} "
                f"{value!r}"
            )
        value = _text(value)
        if not value:
            found.empty_texts.add(number)
        _check_encodable(path, column, number, value)
        found.long_texts += len(value) > LONG_TEXT_CHARS
        found.text_chars += len(value)
    found.rows += len(records)


def _check_ids(
    path: Path, records: Records, first: int, column: str, found: Findings, unique: UniqueIds
) -> None:
    keys, rows = [], []
    for number, record in enumerate(records, start=first):
        value = record.get(column)
        if value in (None, ""):
            found.missing_ids.add(number)
            continue
        if isinstance(value, bool) or (not isinstance(value, int | str)):
            shown = "NaN" if isinstance(value, float) and math.isnan(value) else repr(value)
            raise DataError(
                f"{path}: column {column!r}, row {number}: id {shown} is a {type(value).__name__}; ids must "
                "be integers or text (a float id cannot be kept exactly)"
            )
        if isinstance(value, str):
            _check_encodable(path, column, number, value)
        found.plain_ids = found.plain_ids and _plain_integer(value)
        keys.append(str(value))  # two ids are the same id exactly when their texts are, int64 or not
        rows.append(number)
    if keys:
        unique.add(np.array(rows, dtype=np.int64), keys)


def _refuse_a_lookalike_id_column(path: Path, columns: Sequence[str], id_column: str | None) -> None:
    if id_column and id_column not in columns:
        alike = [c for c in columns if c.strip().lower() == id_column.strip().lower()]
        if alike:  # "ID" or " id": the user's ids, which row numbers would silently replace
            raise DataError(
                f"{path}: no column {id_column!r}, but {alike[0]!r} looks like it: pass --id-column "
                f"{alike[0]!r} (or --id-column '' to number the rows)"
            )


def _refuse_duplicates(source: RecordSource, column: str, candidates: list[int], plain: bool) -> None:
    """Rows whose id hashes repeat, looked at again: a `DataError` if two of them hold the same id."""
    if not candidates:
        return
    duplicates = Duplicates(candidates)
    for first, records in source.chunks():
        if first + len(records) > candidates[0]:
            for number, record in enumerate(records, start=first):
                duplicates.see(number, str(record.get(column)))
    repeat = duplicates.first()
    if repeat is not None:
        key, row, first_row, count = repeat
        shown = int(key) if plain else key
        raise DataError(
            f"{source.path}: column {column!r}: duplicate id {shown!r} at row {row} (first at row "
            f"{first_row}); {count} duplicate(s) in all"
        )


def _write(
    source: RecordSource, destination: Path, columns: tuple[str, str | None, str | None], found: Findings
) -> None:
    """The second pass: the canonical table, a row group of about `ROW_GROUP_BYTES` at a time."""
    _, id_column, label_column = columns
    id_type = pa.int64() if id_column is None or found.plain_ids else pa.string()
    schema = pa.schema(
        [("id", id_type), ("text", pa.string())] + ([("label", pa.string())] if label_column else [])
    )
    group_rows = rows_per_group((found.text_chars + 16 * found.rows) / max(found.rows, 1))
    tmp = destination.with_name(f".{destination.name}.tmp")
    pending: list[pa.Table] = []
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
        with pq.ParquetWriter(tmp, schema) as writer:
            for first, records in source.chunks():
                pending.append(_table(schema, records, first, columns))
                if sum(t.num_rows for t in pending) >= group_rows:  # whole groups out, the rest kept
                    table = pa.concat_tables(pending)
                    whole = table.num_rows - table.num_rows % group_rows
                    writer.write_table(table.slice(0, whole), row_group_size=group_rows)
                    pending = [table.slice(whole)]
            if sum(t.num_rows for t in pending):
                writer.write_table(pa.concat_tables(pending), row_group_size=group_rows)
        tmp.replace(destination)
    except OSError as error:  # a folder that is a file or read-only, a full disk: one line, nothing left
        why = f"{error.strerror}: {error.filename}" if error.filename else str(error.strerror or error)
        raise DataError(f"{destination}: cannot write the dataset ({why})") from None
    finally:
        with contextlib.suppress(OSError):  # none was made where no folder could be
            tmp.unlink(missing_ok=True)


def _table(
    schema: pa.Schema, records: Records, first: int, columns: tuple[str, str | None, str | None]
) -> pa.Table:
    text_column, id_column, label_column = columns
    id_type = schema.field("id").type
    if id_column is None:
        ids: list[Any] = list(range(first - 1, first - 1 + len(records)))
    elif id_type == pa.int64():
        ids = [int(record[id_column]) for record in records]
    else:
        ids = [str(record[id_column]) for record in records]
    arrays = [
        pa.array(ids, id_type),
        pa.array([_text(record.get(text_column)) for record in records], pa.string()),
    ]
    if label_column:
        arrays.append(
            pa.array(
                [None if r.get(label_column) is None else str(r[label_column]) for r in records], pa.string()
            )
        )
    return pa.Table.from_arrays(arrays, schema=schema)


def _text(value: str | None) -> str:
    """A text as written; a null or blank one (kept only with `allow_empty_texts`) as ""."""
    return "" if value is None or not value.strip() else value


def _check_encodable(path: Path, column: str, number: int, value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise DataError(
            f"{path}: column {column!r}, row {number}: {value[error.start]!r} at character {error.start} "
            "is a lone surrogate, not a character (a broken \\u escape?); it cannot be written as UTF-8"
        ) from None


def _plain_integer(value: int | str) -> bool:
    """An int, or text that writes one canonically, within int64: it survives int() and back unchanged."""
    if isinstance(value, str):
        if not PLAIN_INTEGER.fullmatch(value):
            return False
        value = int(value)
    return INT64[0] <= value <= INT64[1]
