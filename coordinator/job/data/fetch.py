"""Download a finished job's output: the parts its manifest lists, as one local Parquet file (and CSV).

The job's output is the set of parts its manifest (`verify.py`) lists under `jobs/<job>/` in the bucket; a
part no manifest lists (a stale attempt's) is not output. This reads the manifest, checks that the parts'
rows add up to its row count and their ids to its digest (which `verify.py` wrote only when it was the
input's), and writes `predictions.parquet` (`id, prediction, score`, segment by segment)
one part in memory at a time, to a temporary name renamed at the end; `--csv` writes `predictions.csv`
beside it the same way. Nothing is joined to the input: a big job's text stays where it is.

Usage::

    fetched = fetch_output(S3Store(bucket, "jobs/job-1", client=s3), Path("runs/job-1"), csv=True)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from coordinator.errors import MergeError
from coordinator.job.data.result_files import ResultFiles
from coordinator.job.data.verify import JobManifest
from inference.checkpoint import decode_part
from inference.digest import add_digests, as_text, id_digest
from inference.layout import JOB_MANIFEST_KEY
from inference.storage import ObjectStore
from inference.store_errors import ObjectNotFound


@dataclass(frozen=True, slots=True)
class Fetched:
    rows: int
    parts: int
    bytes_read: int
    paths: tuple[Path, ...]


def read_job_manifest(store: ObjectStore) -> JobManifest:
    where = f"{store.uri}/{JOB_MANIFEST_KEY}"
    try:
        data = store.get(JOB_MANIFEST_KEY)
    except ObjectNotFound:
        raise MergeError(
            f"{where}: no job manifest (the job has not finished, or its output is not verified)"
        ) from None
    return JobManifest.from_json(where, data)


def fetch_output(store: ObjectStore, out_dir: Path, *, csv: bool = False) -> Fetched:
    manifest = read_job_manifest(store)
    size = digest = 0
    files = ResultFiles(out_dir / "predictions.parquet", out_dir / "predictions.csv" if csv else None)
    with files:
        listed: set[str] = set()
        for key in manifest.parts:
            if key in listed:
                raise MergeError(f"{store.uri}/{JOB_MANIFEST_KEY}: it lists {key} twice; nothing was written")
            listed.add(key)
            try:
                data = store.get(key)
            except ObjectNotFound:
                raise MergeError(
                    f"{store.uri}/{key}: a part the job manifest lists is missing; nothing was written"
                ) from None
            size += len(data)
            table = decode_part(data, f"{store.uri}/{key}")
            digest = add_digests([digest, id_digest(table.column("id"))])
            files.write(table)
        if files.rows != manifest.rows or as_text(digest) != manifest.digest:
            raise MergeError(
                f"{store.uri}: its parts hold {files.rows} rows of digest {as_text(digest)}, its manifest "
                f"says {manifest.rows} of {manifest.digest}; nothing was written"
            )
    return Fetched(files.rows, len(manifest.parts), size, tuple(files.targets))
