"""A local Parquet dataset: one file, or a folder whose `.parquet` files are read as one dataset (as every
`.parquet` object under an S3 prefix is).

Usage::

    files = parquet_files(Path("data/big"))  # sorted by name; DataError if there are none
    rows, size = rows_and_bytes(Path("data/big"))  # from the footers, reading no rows
"""

from __future__ import annotations

from pathlib import Path

from coordinator.errors import DataError


def parquet_files(path: Path) -> list[Path]:
    """The folder's `.parquet` files by name, or the one file."""
    if not path.is_dir():
        return [path]
    files = sorted(path.glob("*.parquet"))
    if not files:
        raise DataError(f"{path}: no .parquet files in the folder")
    return files


def rows_and_bytes(path: Path) -> tuple[int, int]:
    """Rows (from each footer) and bytes on disk of the file or of the folder's files."""
    import pyarrow.parquet as pq

    rows = size = 0
    for file in parquet_files(path):
        try:
            rows, size = rows + pq.ParquetFile(file).metadata.num_rows, size + file.stat().st_size
        except (OSError, ValueError) as error:  # missing, not Parquet (pyarrow's errors are ValueError)
            raise DataError(f"{file}: not a readable Parquet file ({str(error)[:120]})") from None
    return rows, size
