"""Checkpoints and output parts of a segment, and reading a finished segment's output back.

Order of writes, so that a crash can only redo work, never lose or duplicate it:
1. the part (a CSV of `id,prediction,score` whose key is fixed by the chunk's row range and batch range),
2. the checkpoint, which lists every part that counts.

A part written before a crash but not yet in the checkpoint is an orphan: it is not read, and the next
attempt deletes it. Their keys, under the job's output prefix, are in `layout.py`.
"""

from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from inference.errors import CheckpointError
from inference.layout import checkpoint_key, parts_prefix
from inference.storage import ObjectStore
from inference.store_errors import ObjectNotFound

PART_COLUMNS = ("id", "prediction", "score")


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
        try:
            return cls(**json.loads(data))
        except (ValueError, TypeError, RecursionError) as error:  # not UTF-8, not JSON, too deep, wrong keys
            raise CheckpointError(
                f"{where}: corrupt checkpoint ({type(error).__name__}: {str(error)[:120]})"
            ) from None


def load_checkpoint(store: ObjectStore, segment_id: str) -> Checkpoint | None:
    key = checkpoint_key(segment_id)
    try:
        data = store.get(key)
    except ObjectNotFound:
        return None
    return Checkpoint.from_json(f"{store.uri}/{key}", data)


def save_checkpoint(store: ObjectStore, checkpoint: Checkpoint) -> None:
    checkpoint.updated_at = time.time()
    store.put(checkpoint_key(checkpoint.segment_id), checkpoint.to_json())


def encode_part(rows: list[tuple[Any, str, float]]) -> bytes:
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(PART_COLUMNS)
    for row_id, label, score in rows:
        writer.writerow((row_id, label, repr(score)))
    return buffer.getvalue().encode()


def decode_part(data: bytes) -> list[tuple[str, str, float]]:
    reader = csv.reader(io.StringIO(data.decode(), newline=""))
    header = next(reader)
    if tuple(header) != PART_COLUMNS:
        raise CheckpointError(f"part header {header} is not {list(PART_COLUMNS)}")
    return [(row_id, label, float(score)) for row_id, label, score in reader]


def remove_orphan_parts(store: ObjectStore, checkpoint: Checkpoint) -> list[str]:
    """Delete parts of the segment that the checkpoint does not list (written just before a crash)."""
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
    rows = [row for key in checkpoint.parts for row in decode_part(store.get(key))]
    if len(rows) != checkpoint.stop - checkpoint.start:
        raise CheckpointError(
            f"{store.uri}: segment {segment_id} has {len(rows)} rows in its parts, expected "
            f"{checkpoint.stop - checkpoint.start}"
        )
    return rows
