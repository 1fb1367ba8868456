"""A job's result written locally as Parquet and, when asked, CSV: table after table into temporary files
beside the targets, which replace the targets only when every table is written (a failure leaves the old
files, or none, and no temporary behind).

Usage::

    with ResultFiles(out_dir / "predictions.parquet", out_dir / "predictions.csv") as files:
        for table in tables:
            files.write(table)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from coordinator.errors import MergeError


class ResultFiles:
    def __init__(self, parquet_path: Path, csv_path: Path | None = None) -> None:
        self.targets = [parquet_path] + ([csv_path] if csv_path is not None else [])
        self._temporary = [path.with_name(f".{path.name}.tmp") for path in self.targets]
        self._parquet: pq.ParquetWriter | None = None
        self._csv: pacsv.CSVWriter | None = None
        self._files: list[BinaryIO] = []
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        with self._naming(0):
            if self._parquet is None:
                self._parquet = pq.ParquetWriter(self._new_file(0), table.schema)
            self._parquet.write_table(table)
        if len(self._temporary) > 1:
            with self._naming(1):
                if self._csv is None:
                    self._csv = pacsv.CSVWriter(self._new_file(1), table.schema)
                self._csv.write_table(table)
        self.rows += table.num_rows

    def _new_file(self, index: int) -> BinaryIO:
        """The temporary, created new: whatever was at its name goes first, and a link placed there is
        removed, never followed (a `.predictions.parquet.tmp` link had its target overwritten)."""
        path = self._temporary[index]
        path.unlink(missing_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        handle = os.fdopen(os.open(path, flags, 0o644), "wb")
        self._files.append(handle)
        return handle

    def __enter__(self) -> ResultFiles:
        self.targets[0].parent.mkdir(parents=True, exist_ok=True)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        failed = self._close()
        if kind is not None or failed is not None:  # what was half written goes; the first error goes on
            for tmp in self._temporary:
                tmp.unlink(missing_ok=True)
            if kind is None and failed is not None:
                raise failed
            return
        if self._parquet is None:
            raise MergeError(f"{self.targets[0].parent}: no rows to write")
        for tmp, path in zip(self._temporary, self.targets, strict=True):
            os.replace(tmp, path)

    def _close(self) -> OSError | None:
        """Close every writer (the last rows are flushed here); the first failure, named, or None."""
        failed = None
        for index, writer in enumerate((self._parquet, self._csv)):
            if writer is None:
                continue
            try:
                with self._naming(index):
                    writer.close()
            except OSError as error:
                failed = failed or error
        for index, handle in enumerate(self._files):
            try:
                with self._naming(index):
                    handle.close()
            except OSError as error:
                failed = failed or error
        return failed

    @contextlib.contextmanager
    def _naming(self, index: int) -> Iterator[None]:
        """Arrow's write errors name no file: the target the temporary stands for is named."""
        try:
            yield
        except OSError as error:
            if error.filename is not None:
                raise
            raise OSError(error.errno, str(error), str(self.targets[index])) from None
