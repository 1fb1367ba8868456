"""A user's dataset (Parquet, CSV or JSONL) validated and turned into the canonical dataset.

Every problem is a `DataError` whose message names the file, the column and the row (1-based data rows, the
header not counted), before anything is written. Ids are data and are kept exactly: they become int64 only
when every id is a plain integer (ASCII digits, no leading zero, no sign but `-`, within int64), else every
id is kept as the text it was written as (`007`, `٣`, `2^64-1`); ids that cannot be kept exactly (NaN,
floats, booleans) are refused. A byte-order mark at the start of a CSV or JSONL file is not part of the
first column's name. Policy for null or empty texts: refused and reported by
default; with `allow_empty_texts=True` they are kept and predicted as the empty string. They are never
dropped.

Usage::

    prepared = prepare_dataset(Path("reviews.csv"), text_column="review")
    write_dataset(prepared.table, Path("build/data/reviews.parquet"))       # inference/dataset.py
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from coordinator.errors import DataError

MAX_REPORTED_ROWS = 5  # how many offending rows an error lists before it says "and N more"
LONG_TEXT_CHARS = 2_000  # texts longer than this are reported at prepare time; the tokenizer truncates them
SUPPORTED_SUFFIXES = (".parquet", ".csv", ".jsonl")
PLAIN_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")  # ASCII only: `re.ASCII` is implied by the class
INT64 = (-(2**63), 2**63 - 1)
csv.field_size_limit(2**31 - 1)  # a review can be longer than the module's default of 131,072 characters


@dataclass(frozen=True, slots=True)
class PreparedDataset:
    table: pa.Table
    long_texts: int  # rows whose text exceeds LONG_TEXT_CHARS (kept; the tokenizer truncates them)
    empty_texts: int  # rows kept with an empty text (only with allow_empty_texts)
    numbered: bool = False  # no id column: the ids are the 0-based row numbers (said to the user)


def _rows_phrase(rows: Sequence[int]) -> str:
    shown = ", ".join(str(row) for row in rows[:MAX_REPORTED_ROWS])
    more = len(rows) - MAX_REPORTED_ROWS
    return f"row {shown}" if len(rows) == 1 else f"rows {shown}" + (f" and {more} more" if more > 0 else "")


def _decode_utf8(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8").removeprefix("\ufeff")  # a byte-order mark names no column
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise DataError(
            f"{path}: line {line}: bytes are not valid UTF-8 (byte {data[error.start]:#04x} at offset "
            f"{error.start}); re-encode the file as UTF-8"
        ) from None


def _read_csv(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    text = _decode_utf8(path, path.read_bytes())
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        records = list(reader)
        columns = list(reader.fieldnames or [])
    except csv.Error as error:
        raise DataError(f"{path}: line {reader.line_num}: not valid CSV ({error})") from None
    return records, columns


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    records = []
    for number, line in enumerate(_decode_utf8(path, path.read_bytes()).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise DataError(f"{path}: line {number}: not valid JSON ({error.msg})") from None
        except RecursionError:  # a line of a 100,000-deep array: json.loads exhausts the stack
            raise DataError(f"{path}: line {number}: nested too deep to be a record") from None
        if not isinstance(record, dict):
            raise DataError(f"{path}: line {number}: expected a JSON object, got {type(record).__name__}")
        records.append(record)
    return records


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as error:
        raise DataError(f"{path}: not a readable Parquet file ({error})") from None
    records: list[dict[str, Any]] = table.to_pylist()
    for number, record in enumerate(records, start=1):
        for column, value in record.items():
            if isinstance(value, bytes):
                try:
                    record[column] = value.decode("utf-8")
                except UnicodeDecodeError:
                    raise DataError(
                        f"{path}: column {column!r}, row {number}: bytes are not valid UTF-8"
                    ) from None
    return records


def _read_records(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise DataError(f"{path}: the file is empty")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        records, columns = _read_csv(path)
    elif suffix == ".jsonl":
        records = _read_jsonl(path)
        columns = sorted({key for record in records for key in record})
    elif suffix == ".parquet":
        records = _read_parquet(path)
        columns = pq.read_schema(path).names
    else:
        raise DataError(f"{path}: unsupported file type {suffix!r} (use {', '.join(SUPPORTED_SUFFIXES)})")
    if not records:
        raise DataError(f"{path}: the file has no data rows")
    return records, columns


def prepare_dataset(
    path: Path,
    *,
    text_column: str = "text",
    id_column: str | None = "id",
    label_column: str | None = "label",
    allow_empty_texts: bool = False,
) -> PreparedDataset:
    """Validate a user's file and return the canonical table (id, text[, label]).

    Without an id column (or with `id_column` None or "") the ids are the 0-based row numbers
    (`numbered`); a column that differs from `id_column` only in case or spaces is refused, naming it.
    """
    records, columns = _read_records(path)
    if text_column not in columns:
        raise DataError(
            f"{path}: column {text_column!r} not found; columns are: {', '.join(columns) or '(none)'}"
        )
    texts, empty_rows = _texts(path, records, text_column, allow_empty_texts)
    if id_column and id_column not in columns:
        alike = [c for c in columns if c.strip().lower() == id_column.strip().lower()]
        if alike:  # "ID" or " id": the user's ids, which row numbers would silently replace
            raise DataError(
                f"{path}: no column {id_column!r}, but {alike[0]!r} looks like it: pass --id-column "
                f"{alike[0]!r} (or --id-column '' to number the rows)"
            )
    numbered = not id_column or id_column not in columns
    ids = list(range(len(records))) if numbered else _ids(path, records, str(id_column))
    columns_out: dict[str, pa.Array] = {
        "id": pa.array(ids, type=pa.int64() if all(isinstance(i, int) for i in ids) else pa.string()),
        "text": pa.array(texts, type=pa.string()),
    }
    if label_column is not None and label_column in columns:
        columns_out["label"] = pa.array(
            [None if record.get(label_column) is None else str(record[label_column]) for record in records],
            type=pa.string(),
        )
    long_texts = sum(1 for text in texts if len(text) > LONG_TEXT_CHARS)
    return PreparedDataset(
        pa.table(columns_out), long_texts=long_texts, empty_texts=empty_rows, numbered=numbered
    )


def _texts(
    path: Path, records: list[dict[str, Any]], column: str, allow_empty: bool
) -> tuple[list[str], int]:
    """The texts, and how many were null or empty (kept as "" only when allowed)."""
    texts: list[str] = []
    bad_rows: list[int] = []
    for number, record in enumerate(records, start=1):
        value = record.get(column)
        if value is None or (isinstance(value, str) and not value.strip()):
            bad_rows.append(number)
            value = ""
        elif not isinstance(value, str):
            raise DataError(
                f"{path}: column {column!r}, row {number}: expected text, got {type(value).__name__} "
                f"{value!r}"
            )
        _check_encodable(path, column, number, value)
        texts.append(value)
    if bad_rows and not allow_empty:
        raise DataError(
            f"{path}: column {column!r}: {len(bad_rows)} null or empty text(s) at "
            f"{_rows_phrase(bad_rows)}; fix them, or pass --allow-empty-texts to predict them as empty "
            "strings"
        )
    return texts, len(bad_rows)


def _ids(path: Path, records: list[dict[str, Any]], column: str) -> list[Any]:
    ids = [record.get(column) for record in records]
    missing = [number for number, value in enumerate(ids, start=1) if value in (None, "")]
    if missing:
        raise DataError(f"{path}: column {column!r}: missing id at {_rows_phrase(missing)}")
    return _normalise_ids(path, column, ids)


def _check_encodable(path: Path, column: str, number: int, value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise DataError(
            f"{path}: column {column!r}, row {number}: {value[error.start]!r} at character {error.start} "
            "is a lone surrogate, not a character (a broken \\u escape?); it cannot be written as UTF-8"
        ) from None


def _normalise_ids(path: Path, column: str, ids: list[Any]) -> list[Any]:
    """int64 when every id is a plain integer, else every id as the exact text it was given; unique."""
    for number, value in enumerate(ids, start=1):
        if isinstance(value, bool) or (not isinstance(value, int | str)):
            shown = "NaN" if isinstance(value, float) and math.isnan(value) else repr(value)
            raise DataError(
                f"{path}: column {column!r}, row {number}: id {shown} is a {type(value).__name__}; ids must "
                "be integers or text (a float id cannot be kept exactly)"
            )
        if isinstance(value, str):
            _check_encodable(path, column, number, value)
    ids = [int(i) for i in ids] if all(_plain_integer(i) for i in ids) else [str(i) for i in ids]
    first_seen: dict[Any, int] = {}
    duplicates: list[int] = []
    for number, value in enumerate(ids, start=1):
        if value in first_seen:
            duplicates.append(number)
        else:
            first_seen[value] = number
    if duplicates:
        first = duplicates[0]
        raise DataError(
            f"{path}: column {column!r}: duplicate id {ids[first - 1]!r} at row {first} (first at row "
            f"{first_seen[ids[first - 1]]}); {len(duplicates)} duplicate(s) in all"
        )
    return ids


def _plain_integer(value: int | str) -> bool:
    """An int, or text that writes one canonically, within int64: it survives int() and back unchanged."""
    if isinstance(value, str):
        if not PLAIN_INTEGER.fullmatch(value):
            return False
        value = int(value)
    return INT64[0] <= value <= INT64[1]
