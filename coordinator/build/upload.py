"""A user's input file, validated and uploaded to the stack's bucket under `data/`, for `make run-real`.

The file (Parquet, CSV or JSONL) is turned into the canonical dataset (`user_dataset.py`: every problem
named by file, column and row before anything is sent), written in the worker's row groups, and uploaded
under a key that carries its content's hash: the same input uploads to the same key, and a different input
can never replace one a job is reading.

Usage::

    uploaded = upload_input(s3, "my-bucket", Path("reviews.csv"))
    uploaded.key, uploaded.rows            # data/reviews-3f2a9c1b7d4e.parquet, 10000
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from botocore.exceptions import ClientError

from coordinator.build.user_dataset import prepare_dataset
from inference.layout import dataset_key


@dataclass(frozen=True, slots=True)
class UploadedInput:
    key: str
    rows: int
    uploaded: bool  # False: the same content was there already
    numbered: bool = False  # no id column: the ids are the row numbers


def key_for(path: Path, canonical: Path) -> str:
    """`data/<stem>-<12 hex of the canonical file's SHA-256>.parquet`, the file hashed a MB at a time."""
    digest = hashlib.sha256()
    with canonical.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    stem = re.sub(r"[^A-Za-z0-9._-]", "-", path.stem)[:60] or "input"
    return dataset_key(f"{stem}-{digest.hexdigest()[:12]}.parquet")


def upload_input(
    s3: Any, bucket: str, path: Path, *, text_column: str = "text", id_column: str | None = None
) -> UploadedInput:
    with tempfile.TemporaryDirectory() as tmp:
        canonical = Path(tmp) / "input.parquet"
        prepared = prepare_dataset(path, canonical, text_column=text_column, id_column=id_column)
        key = key_for(path, canonical)
        rows = pq.ParquetFile(canonical).metadata.num_rows
        try:
            s3.head_object(Bucket=bucket, Key=key)
            return UploadedInput(key, rows, uploaded=False, numbered=prepared.numbered)
        except ClientError as error:  # 404; or 403, which S3 answers for a missing key without ListBucket
            if error.response.get("Error", {}).get("Code") not in ("404", "NoSuchKey", "403", "Forbidden"):
                raise
        s3.upload_file(str(canonical), bucket, key)  # in parts when big, read from disk a part at a time
    return UploadedInput(key, rows, uploaded=True, numbered=prepared.numbered)
