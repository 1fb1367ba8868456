"""A done segment's manifest: the parts that make up its output, its row count, first and last id and the
digest of its ids (`digest.py`).

The worker writes it right after the checkpoint that says done (the fenced write: only the attempt that
owns the segment gets there), derived from that checkpoint alone, so writing it again gives the same
manifest; a coordinator that finds a done checkpoint with no manifest (the worker died between the two
writes) writes it from the checkpoint the same way. The coordinator checks a job's output from these and
the input's own digests, reading no prediction row (`coordinator/job/data/verify.py`).

Usage::

    write_segment_manifest(store, checkpoint)           # checkpoint.done
    manifest = read_segment_manifest(store, "seg-0003")  # None: none written
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from inference.checkpoint import Checkpoint, typed_fields
from inference.digest import from_text
from inference.errors import CheckpointError
from inference.layout import manifest_key, parts_prefix
from inference.storage import ObjectStore
from inference.store_errors import ObjectNotFound


@dataclass(frozen=True, slots=True)
class SegmentManifest:
    segment_id: str
    start: int
    stop: int
    rows: int
    first_id: str
    last_id: str
    digest: str
    parts: tuple[str, ...]
    attempt: str

    def to_json(self) -> bytes:
        fields = asdict(self)
        fields["parts"] = list(self.parts)
        return json.dumps(fields, sort_keys=True).encode()

    @classmethod
    def from_json(cls, where: str, data: bytes) -> SegmentManifest:
        """Parsed and checked field by field: a worker of the job wrote it (untrusted input)."""
        try:
            fields = typed_fields(data, _TYPES)
            fields["parts"] = tuple(fields["parts"])
            manifest = cls(**fields)
            prefix = parts_prefix(manifest.segment_id)
            if not all(isinstance(key, str) and key.startswith(prefix) for key in manifest.parts):
                raise TypeError(f"a part it lists is not a key under {prefix}")
            from_text(manifest.digest, "its digest")
        except (ValueError, TypeError, RecursionError) as error:
            raise CheckpointError(
                f"{where}: corrupt manifest ({type(error).__name__}: {str(error)[:120]})"
            ) from None
        return manifest


_TYPES = {
    "segment_id": str,
    "start": int,
    "stop": int,
    "rows": int,
    "first_id": str,
    "last_id": str,
    "digest": str,
    "parts": list,
    "attempt": str,
}


def manifest_of(checkpoint: Checkpoint) -> SegmentManifest:
    if not checkpoint.done:
        raise ValueError(f"segment {checkpoint.segment_id}: a manifest is written only once it is done")
    return SegmentManifest(
        segment_id=checkpoint.segment_id,
        start=checkpoint.start,
        stop=checkpoint.stop,
        rows=checkpoint.rows_done,
        first_id=checkpoint.first_id,
        last_id=checkpoint.last_id,
        digest=checkpoint.digest,
        parts=tuple(checkpoint.parts),
        attempt=checkpoint.attempt,
    )


def write_segment_manifest(store: ObjectStore, checkpoint: Checkpoint) -> SegmentManifest:
    manifest = manifest_of(checkpoint)
    store.put(manifest_key(checkpoint.segment_id), manifest.to_json())
    return manifest


def read_segment_manifest(store: ObjectStore, segment_id: str) -> SegmentManifest | None:
    key = manifest_key(segment_id)
    try:
        data = store.get(key)
    except ObjectNotFound:
        return None
    return SegmentManifest.from_json(f"{store.uri}/{key}", data)
