"""Exactly once, from manifests: every segment's output against its input, reading no prediction row.

A segment's manifest (`inference/manifest.py`, written by its worker) names its parts, its row count and
the digest of the ids its parts hold; the input's digest of the same segment was computed once when the
job was made (`input_dataset.py`). Equal counts and equal digests say the segment's rows are predicted
exactly once (a missing, duplicated or foreign id changes the digest). A segment whose checkpoint is done but
whose manifest was never written (its worker died between the two writes) has it written here from that
checkpoint, as the worker would have.

When every segment holds, the job's manifest is written, `jobs/<job>/control/manifest.json` (no worker may
write there): the parts that
are the job's output (one Parquet dataset: pyarrow, DuckDB and Athena read the list), the row count and the
job's digest. Otherwise `MergeError` names the segments that do not hold, and nothing is written.

Usage::

    manifest = verify_outputs(job_store, state.segments(job_id), job_id=job_id)
    manifest.rows, manifest.digest, manifest.parts
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from coordinator.errors import MergeError
from coordinator.job.core import SegmentRow
from inference.checkpoint import PART_COLUMNS, load_checkpoint
from inference.digest import add_digests, as_text, from_text
from inference.errors import CheckpointError
from inference.layout import JOB_MANIFEST_KEY
from inference.manifest import SegmentManifest, read_segment_manifest, write_segment_manifest
from inference.storage import ObjectStore

SHOWN = 5  # segments named in an error message


@dataclass(frozen=True, slots=True)
class JobManifest:
    job_id: str
    rows: int
    digest: str
    parts: tuple[str, ...]  # keys under the job's prefix, in segment order
    segments: int

    def to_json(self) -> bytes:
        fields = {
            "job_id": self.job_id,
            "rows": self.rows,
            "digest": self.digest,
            "segments": self.segments,
            "columns": list(PART_COLUMNS),
            "format": "parquet",
            "parts": list(self.parts),
        }
        return json.dumps(fields, indent=1).encode()

    @classmethod
    def from_json(cls, where: str, data: bytes) -> JobManifest:
        try:
            fields = json.loads(data)
            parts = fields["parts"]
            if not isinstance(parts, list) or not all(
                isinstance(p, str) and p.startswith("parts/") for p in parts
            ):
                raise TypeError("parts is not a list of keys under parts/")
            manifest = cls(
                str(fields["job_id"]),
                int(fields["rows"]),
                str(fields["digest"]),
                tuple(parts),
                int(fields["segments"]),
            )
            from_text(manifest.digest, "its digest")
        except (ValueError, TypeError, KeyError, RecursionError) as error:
            raise MergeError(
                f"{where}: corrupt job manifest ({type(error).__name__}: {str(error)[:120]})"
            ) from None
        return manifest


def segment_manifest(store: ObjectStore, segment_id: str) -> SegmentManifest | None:
    """The segment's manifest; written from its done checkpoint if the worker died before writing it."""
    manifest = read_segment_manifest(store, segment_id)
    if manifest is not None:
        return manifest
    checkpoint = load_checkpoint(store, segment_id)
    if checkpoint is None or not checkpoint.done:
        return None
    return write_segment_manifest(store, checkpoint)


def why_not(segment: SegmentRow, manifest: SegmentManifest | None) -> str:
    """Why the manifest does not prove the segment's rows exactly once ("" when it does)."""
    if manifest is None:
        return "no manifest and no done checkpoint"
    if (manifest.start, manifest.stop) != segment.rows:
        return (
            f"its manifest covers rows {manifest.start}-{manifest.stop}, not {segment.start}-{segment.stop}"
        )
    if manifest.rows != segment.stop - segment.start:
        return f"{manifest.rows} rows, not {segment.stop - segment.start}"
    if not segment.input_digest:
        return "no input digest recorded for it (a job made before digests were kept)"
    if manifest.digest != segment.input_digest:
        return (
            f"ids digest {manifest.digest}, the input's is {segment.input_digest} (an id missing, "
            "repeated or foreign)"
        )
    return ""


def verify_outputs(store: ObjectStore, segments: Sequence[SegmentRow], *, job_id: str) -> JobManifest:
    """Every segment's manifest against its input; the job's manifest written when all hold."""
    failures: list[str] = []
    manifests: list[SegmentManifest] = []
    for segment in segments:
        try:
            manifest = segment_manifest(store, segment.segment_id)
        except CheckpointError as error:
            failures.append(f"{segment.segment_id}: {error}")
            continue
        why = why_not(segment, manifest)
        if why:
            failures.append(f"{segment.segment_id}: {why}")
        elif manifest is not None:
            manifests.append(manifest)
    if failures:
        raise MergeError(
            f"{store.uri}: {len(failures)} of {len(segments)} segment(s) are not their input rows exactly "
            "once: "
            + "; ".join(failures[:SHOWN])
            + (f"; and {len(failures) - SHOWN} more" if len(failures) > SHOWN else "")
            + "; no job manifest was written"
        )
    job = JobManifest(
        job_id=job_id,
        rows=sum(m.rows for m in manifests),
        digest=as_text(add_digests(from_text(m.digest, m.segment_id) for m in manifests)),
        parts=tuple(part for m in manifests for part in m.parts),
        segments=len(manifests),
    )
    store.put(JOB_MANIFEST_KEY, job.to_json())
    return job
