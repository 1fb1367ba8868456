"""Checkpoints and output parts of a segment, and reading a finished segment's output back.

Order of writes, so that a crash can only redo work, never lose or duplicate it:
1. the part (a Parquet file of `id, prediction, score` whose key is fixed by the chunk's row range, batch
   range and the attempt that wrote it),
2. the checkpoint, which lists every part that counts, written only over the version its writer read, with
   the digest of the ids those parts hold (`digest.py`) and the segment's first and last id once written.

A part written before a crash, or by an attempt whose checkpoint write was refused, is an orphan: nothing
reads it, and the attempt that finishes the segment deletes it. Two attempts of one segment never share a
part's key, and only one of them can write the checkpoint after both read it (`segment_run.py`). Their
keys, under the job's output prefix, are in `layout.py`.
"""

from __future__ import annotations

import io
import json
import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from inference.digest import add_digests, as_text, from_text, id_digest
from inference.errors import CheckpointError
from inference.layout import checkpoint_key, parts_prefix
from inference.storage import ObjectStore
from inference.store_errors import ObjectNotFound

PART_COLUMNS = ("id", "prediction", "score")
ZERO_DIGEST = "0" * 16
log = logging.getLogger(__name__)


@dataclass(slots=True)
class Checkpoint:
    segment_id: str
    start: int
    stop: int
    batch_size: int
    checkpoint_every: int
    next_batch: int = 0
    rows_done: int = 0
    parts: list[str] = field(default_factory=list)
    done: bool = False
    attempt: str = ""
    updated_at: float = 0.0
    digest: str = ZERO_DIGEST  # of the ids in the parts it lists (`digest.py`), 16 hex digits ("": not yet
    # made from its parts, on a checkpoint an older worker wrote: `load_versioned_checkpoint` makes it)
    first_id: str = ""  # the segment's first and last row's id, as text, once a part holding it is listed
    last_id: str = ""

    def matches(self, other: Checkpoint) -> bool:
        """Same segment and the same batch plan: only then can one resume the other."""
        keys = ("segment_id", "start", "stop", "batch_size", "checkpoint_every")
        return all(getattr(self, key) == getattr(other, key) for key in keys)

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def from_json(cls, where: str, data: bytes) -> Checkpoint:
        """Parsed and checked field by field: any worker of the job may write one (untrusted input)."""
        try:
            fields = typed_fields(data, FIELD_TYPES, optional=LATER_FIELDS)
            if not set(LATER_FIELDS) <= set(fields):  # an older worker's: made again from its parts
                fields = {**{k: v for k, v in fields.items() if k not in LATER_FIELDS}, "digest": ""}
            checkpoint = cls(**fields)
            prefix = parts_prefix(checkpoint.segment_id)
            if not all(isinstance(key, str) and key.startswith(prefix) for key in checkpoint.parts):
                raise TypeError(f"a part it lists is not a key under {prefix}")
            if not 0 <= checkpoint.rows_done <= checkpoint.stop - checkpoint.start:
                raise TypeError(f"rows_done {checkpoint.rows_done} is outside its rows")
            if checkpoint.digest:
                from_text(checkpoint.digest, "its digest")
        except (ValueError, TypeError, RecursionError) as error:  # not UTF-8, not JSON, too deep, wrong keys
            raise CheckpointError(
                f"{where}: corrupt checkpoint ({type(error).__name__}: {str(error)[:120]})"
            ) from None
        return checkpoint


def typed_fields(data: bytes, types: dict[str, type], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    """A JSON object with exactly these keys (but the `optional` ones, which it may lack), each of its type
    (an int passes for a float); `TypeError` or `ValueError` (not JSON) otherwise. For the documents any
    worker of the job may write."""
    fields = json.loads(data)
    if not isinstance(fields, dict) or not set(types) - set(optional) <= set(fields) <= set(types):
        raise TypeError(f"its keys are not {sorted(types)}")
    for name, kind in types.items():
        if name not in fields:
            continue
        if type(fields[name]) is not kind and not (kind is float and type(fields[name]) is int):
            raise TypeError(f"{name} is not a {kind.__name__}")
    return fields


FIELD_TYPES = {
    "segment_id": str,
    "start": int,
    "stop": int,
    "batch_size": int,
    "checkpoint_every": int,
    "next_batch": int,
    "rows_done": int,
    "parts": list,
    "done": bool,
    "attempt": str,
    "updated_at": float,
    "digest": str,
    "first_id": str,
    "last_id": str,
}


# a checkpoint written before the segment manifests has none of these: they are made again from the parts
# it lists when it is read (`from_parts`), so a worker upgrade does not start its segments over
LATER_FIELDS = ("digest", "first_id", "last_id")


def from_parts(store: ObjectStore, checkpoint: Checkpoint) -> Checkpoint:
    """An older worker's checkpoint with the digest and first and last ids of the parts it lists, read back
    (a part that is missing or not a part: `CheckpointError`, as for a corrupt checkpoint)."""
    where = f"{store.uri}/{checkpoint_key(checkpoint.segment_id)}"
    try:
        parts = [decode_part(store.get(key), f"{store.uri}/{key}").column("id") for key in checkpoint.parts]
        checkpoint.digest = as_text(add_digests(id_digest(ids) for ids in parts))
    except ObjectNotFound as error:
        raise CheckpointError(f"{where}: corrupt checkpoint (a part it lists is missing: {error})") from None
    except ValueError as error:  # null ids, or ids of a type no worker writes
        raise CheckpointError(f"{where}: corrupt checkpoint (its parts' ids: {error})") from None
    if sum(len(ids) for ids in parts) != checkpoint.rows_done:
        raise CheckpointError(
            f"{where}: corrupt checkpoint (it says {checkpoint.rows_done} rows done, its parts hold "
            f"{sum(len(ids) for ids in parts)})"
        )
    if parts and len(parts[0]):  # the first part holds the segment's first row
        checkpoint.first_id = str(parts[0][0].as_py())
    if parts and len(parts[-1]) and checkpoint.rows_done == checkpoint.stop - checkpoint.start:
        checkpoint.last_id = str(parts[-1][-1].as_py())
    return checkpoint


def load_checkpoint(store: ObjectStore, segment_id: str) -> Checkpoint | None:
    return load_versioned_checkpoint(store, segment_id)[0]


def load_versioned_checkpoint(
    store: ObjectStore, segment_id: str, *, corrupt_as_absent: bool = False
) -> tuple[Checkpoint | None, str | None]:
    """The checkpoint and the version read (None, None: there is none); `save_checkpoint` takes it.
    `corrupt_as_absent`: one that does not parse is logged and taken as none, with its version, so that
    a new attempt may write over it and start the segment over."""
    key = checkpoint_key(segment_id)
    try:
        data, version = store.get_versioned(key)
    except ObjectNotFound:
        return None, None
    try:
        checkpoint = Checkpoint.from_json(f"{store.uri}/{key}", data)
        return (checkpoint if checkpoint.digest else from_parts(store, checkpoint)), version
    except CheckpointError as error:
        if not corrupt_as_absent:
            raise
        log.warning("%s: the segment starts over", error)
        return None, version


def rows_checkpointed(store: ObjectStore, segment_id: str, rows: tuple[int, int]) -> int:
    """The rows the segment's checkpoint holds: 0 for none, for one that does not parse, and for one of
    other rows than the segment's `rows` (start, stop) (logged; the next attempt starts that segment over:
    a forged checkpoint of rows 0 to 10**9 made a negative estimate and stopped every run)."""
    checkpoint, _ = load_versioned_checkpoint(store, segment_id, corrupt_as_absent=True)
    if checkpoint is None:
        return 0
    if (checkpoint.start, checkpoint.stop) != rows:
        log.warning(
            "%s/%s: a checkpoint of rows %d-%d, not the segment's %d-%d: the segment starts over",
            store.uri,
            checkpoint_key(segment_id),
            checkpoint.start,
            checkpoint.stop,
            *rows,
        )
        return 0
    return checkpoint.rows_done


def save_checkpoint(store: ObjectStore, checkpoint: Checkpoint, version: str | None) -> str:
    """Write it only over `version` (None: only where there is none); returns the new version. Raises
    `ConditionFailed` when another writer got in since: the fence between two attempts of a segment."""
    checkpoint.updated_at = time.time()
    return store.put_if(checkpoint_key(checkpoint.segment_id), checkpoint.to_json(), version)


def encode_part(ids: pa.Array, labels: list[str], scores: list[float]) -> bytes:
    """A part: the ids (their input type kept), the predicted labels and scores, as Parquet."""
    table = pa.table(
        {"id": ids, "prediction": pa.array(labels, pa.string()), "score": pa.array(scores, pa.float64())}
    )
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def decode_part(data: bytes, where: str = "part") -> pa.Table:
    """A part's rows; a part that is not what a worker writes is a `CheckpointError` naming it."""
    try:
        table = pq.read_table(pa.BufferReader(data))  # read by Arrow itself: no Python file to call back
    except (pa.ArrowException, OSError, ValueError) as error:
        raise CheckpointError(f"{where}: corrupt part ({str(error)[:120]})") from None
    if tuple(table.column_names) != PART_COLUMNS:
        raise CheckpointError(
            f"{where}: corrupt part (its columns {table.column_names[:3]} are not {list(PART_COLUMNS)})"
        )
    return table


def remove_orphan_parts(store: ObjectStore, checkpoint: Checkpoint) -> list[str]:
    """Delete the segment's parts that its done checkpoint does not list: written before a crash, or by
    a stale attempt. Only once done: until then a newer attempt may be writing a part it will list."""
    if not checkpoint.done:
        raise ValueError(f"segment {checkpoint.segment_id}: orphans are removed only once it is done")
    listed = set(checkpoint.parts)
    orphans = [key for key in store.list(parts_prefix(checkpoint.segment_id)) if key not in listed]
    for key in orphans:
        store.delete(key)
    return orphans


def read_segment_table(store: ObjectStore, segment_id: str) -> pa.Table:
    """A finished segment's rows (`PART_COLUMNS`) in part order; raises unless its checkpoint says done."""
    checkpoint = load_checkpoint(store, segment_id)
    if checkpoint is None or not checkpoint.done:
        raise CheckpointError(f"{store.uri}: segment {segment_id} is not done")
    parts = [decode_part(store.get(key), f"{store.uri}/{key}") for key in checkpoint.parts]
    rows = sum(part.num_rows for part in parts)
    if rows != checkpoint.stop - checkpoint.start:
        raise CheckpointError(
            f"{store.uri}: segment {segment_id} has {rows} rows in its parts, expected "
            f"{checkpoint.stop - checkpoint.start}"
        )
    return pa.concat_tables(parts)


def read_segment_output(store: ObjectStore, segment_id: str) -> list[tuple[str, str, float]]:
    """A small finished segment's rows as `(id as text, prediction, score)`, in part order."""
    table = read_segment_table(store, segment_id)
    ids = [str(row_id) for row_id in table.column("id").to_pylist()]
    return list(
        zip(ids, table.column("prediction").to_pylist(), table.column("score").to_pylist(), strict=True)
    )
