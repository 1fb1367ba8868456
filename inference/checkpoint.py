"""Checkpoints and output parts of a segment, and reading a finished segment's output back.

Order of writes, so that a crash can only redo work, never lose or duplicate it:
1. the part (a CSV of `id,prediction,score` whose key is fixed by the chunk's row range, batch range and
   the attempt that wrote it),
2. the checkpoint, which lists every part that counts, written only over the version its writer read.

A part written before a crash, or by an attempt whose checkpoint write was refused, is an orphan: nothing
reads it, and the attempt that finishes the segment deletes it. Two attempts of one segment never share a
part's key, and only one of them can write the checkpoint after both read it (`segment_run.py`). Their
keys, under the job's output prefix, are in `layout.py`.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from inference.errors import CheckpointError
from inference.layout import checkpoint_key, parts_prefix
from inference.storage import ObjectStore
from inference.store_errors import ObjectNotFound

PART_COLUMNS = ("id", "prediction", "score")
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
            fields = json.loads(data)
            if not isinstance(fields, dict) or set(fields) != set(FIELD_TYPES):
                raise TypeError(f"its keys are not {sorted(FIELD_TYPES)}")
            for name, kind in FIELD_TYPES.items():
                if type(fields[name]) is not kind and not (kind is float and type(fields[name]) is int):
                    raise TypeError(f"{name} is not a {kind.__name__}")
            checkpoint = cls(**fields)
            prefix = parts_prefix(checkpoint.segment_id)
            if not all(isinstance(key, str) and key.startswith(prefix) for key in checkpoint.parts):
                raise TypeError(f"a part it lists is not a key under {prefix}")
            if not 0 <= checkpoint.rows_done <= checkpoint.stop - checkpoint.start:
                raise TypeError(f"rows_done {checkpoint.rows_done} is outside its rows")
        except (ValueError, TypeError, RecursionError) as error:  # not UTF-8, not JSON, too deep, wrong keys
            raise CheckpointError(
                f"{where}: corrupt checkpoint ({type(error).__name__}: {str(error)[:120]})"
            ) from None
        return checkpoint


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
}


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
        return Checkpoint.from_json(f"{store.uri}/{key}", data), version
    except CheckpointError as error:
        if not corrupt_as_absent:
            raise
        log.warning("%s: the segment starts over", error)
        return None, version


def rows_checkpointed(store: ObjectStore, segment_id: str) -> int:
    """The rows the segment's checkpoint holds: 0 for none, and for one that does not parse (logged; the
    next attempt starts that segment over)."""
    checkpoint, _ = load_versioned_checkpoint(store, segment_id, corrupt_as_absent=True)
    return checkpoint.rows_done if checkpoint else 0


def save_checkpoint(store: ObjectStore, checkpoint: Checkpoint, version: str | None) -> str:
    """Write it only over `version` (None: only where there is none); returns the new version. Raises
    `ConditionFailed` when another writer got in since: the fence between two attempts of a segment."""
    checkpoint.updated_at = time.time()
    return store.put_if(checkpoint_key(checkpoint.segment_id), checkpoint.to_json(), version)


def encode_part(rows: list[tuple[Any, str, float]]) -> bytes:
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(PART_COLUMNS)
    for row_id, label, score in rows:
        writer.writerow((row_id, label, repr(score)))
    return buffer.getvalue().encode()


def decode_part(data: bytes, where: str = "part") -> list[tuple[str, str, float]]:
    """A part's rows; a part that is not what a worker writes is a `CheckpointError` naming it."""
    try:
        reader = csv.reader(io.StringIO(data.decode(), newline=""))
        header = next(reader, [])
        if tuple(header) != PART_COLUMNS:
            raise ValueError(f"its header {header[:3]} is not {list(PART_COLUMNS)}")
        return [(row_id, label, float(score)) for row_id, label, score in reader]
    except (ValueError, csv.Error) as error:  # not UTF-8, not 3 fields, a score that is not a number
        raise CheckpointError(f"{where}: corrupt part ({str(error)[:120]})") from None


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


def read_segment_output(store: ObjectStore, segment_id: str) -> list[tuple[str, str, float]]:
    """The rows of a finished segment, in part order; raises unless the checkpoint says done."""
    checkpoint = load_checkpoint(store, segment_id)
    if checkpoint is None or not checkpoint.done:
        raise CheckpointError(f"{store.uri}: segment {segment_id} is not done")
    rows = [row for key in checkpoint.parts for row in decode_part(store.get(key), f"{store.uri}/{key}")]
    if len(rows) != checkpoint.stop - checkpoint.start:
        raise CheckpointError(
            f"{store.uri}: segment {segment_id} has {len(rows)} rows in its parts, expected "
            f"{checkpoint.stop - checkpoint.start}"
        )
    return rows
