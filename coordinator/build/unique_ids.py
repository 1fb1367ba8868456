"""Are a file's ids unique? Found with memory bounded by `MEMORY_ENTRIES`, whatever the file's size.

Each id (as the text it is kept as) is hashed to 64 bits with its row number; the pairs go to one of 256
buckets by the hash's top byte, kept in memory until there are `MEMORY_ENTRIES` of them and then appended
to a file per bucket in a temporary folder (as an external hash partition does). A bucket at a time is
sorted: the rows whose hashes repeat are the *candidates*, a handful unless ids repeat. Equal hashes are not
proof, so the caller looks at the candidates' ids on its next pass over the file (`Duplicates.confirm`).

Usage::

    unique = UniqueIds(folder)
    unique.add(rows, ids)                          # numpy rows (1-based), the ids as text
    candidates = unique.candidates()               # sorted row numbers
    duplicates = Duplicates(candidates)
    duplicates.see(row, id_text) ...               # for each candidate row, on the next pass
    duplicates.first()                             # None, or (id, row, first row, count)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from coordinator.errors import DataError
from inference.digest import id_hashes

BUCKETS = 256
MEMORY_ENTRIES = 1_000_000  # 16 MB of (hash, row) pairs before they go to disk

Pairs = npt.NDArray[np.uint64]


class UniqueIds:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._held: list[list[Pairs]] = [[] for _ in range(BUCKETS)]
        self._held_entries = 0
        self._spilled = False

    def add(self, rows: npt.NDArray[np.int64], ids: list[str]) -> None:
        hashes = id_hashes(pa.array(ids, pa.string()))
        pairs = np.stack([hashes, rows.astype(np.uint64)], axis=1)
        bucket = (hashes >> np.uint64(56)).astype(np.int64)
        order = np.argsort(bucket, kind="stable")
        starts = np.searchsorted(bucket[order], np.arange(BUCKETS + 1))
        for index in np.nonzero(np.diff(starts))[0]:
            self._held[index].append(pairs[order[starts[index] : starts[index + 1]]])
        self._held_entries += len(ids)
        if self._held_entries >= MEMORY_ENTRIES:
            self._spill()

    def _spill(self) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            for index, held in enumerate(self._held):
                if held:
                    with (self.folder / f"bucket-{index:03d}").open("ab") as handle:
                        np.concatenate(held).tofile(handle)
        except OSError as error:  # a full disk: one line naming where, not a traceback
            raise DataError(
                f"{self.folder}: cannot hold the ids' hashes ({error.strerror or error}); point TMPDIR at a "
                "folder with room (16 bytes an id)"
            ) from None
        self._held = [[] for _ in range(BUCKETS)]
        self._held_entries, self._spilled = 0, True

    def candidates(self) -> list[int]:
        """The rows whose id hash another row shares, sorted."""
        rows: list[int] = []
        for index in range(BUCKETS):
            parts = list(self._held[index])
            spilled = self.folder / f"bucket-{index:03d}"
            if self._spilled and spilled.is_file():
                parts.append(np.fromfile(spilled, dtype=np.uint64).reshape(-1, 2))
            if not parts:
                continue
            pairs = np.concatenate(parts)
            pairs = pairs[np.argsort(pairs[:, 0], kind="stable")]
            repeated = pairs[:-1, 0] == pairs[1:, 0]
            shared = np.zeros(len(pairs), dtype=bool)
            shared[:-1] |= repeated
            shared[1:] |= repeated
            rows += pairs[shared, 1].tolist()
        return sorted(rows)


class Duplicates:
    """The candidates' ids, seen on a later pass: which of them are the same id."""

    def __init__(self, candidates: list[int]) -> None:
        self.candidates = set(candidates)
        self._rows: dict[str, list[int]] = {}

    def see(self, row: int, id_text: str) -> None:
        if row in self.candidates:
            self._rows.setdefault(id_text, []).append(row)

    def first(self) -> tuple[str, int, int, int] | None:
        """The first row whose id an earlier row has: (the id, that row, the earlier row, how many rows in
        all repeat an earlier row's id); None when the ids are unique."""
        repeats = [(rows[1], rows[0], key) for key, rows in self._rows.items() if len(rows) > 1]
        if not repeats:
            return None
        row, first_row, key = min(repeats)
        return key, row, first_row, sum(len(rows) - 1 for rows in self._rows.values())
