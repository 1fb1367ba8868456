"""The chunk a worker has in hand, and the part it writes of it: which rows, which ids, which key.

Usage::

    work = ChunkWork(chunk, lengths, grid.plan_chunk(chunk_index, lengths))
    part = write_part(store, config, grid, work, (first_batch, stop_batch), results)
    part.key, part.digest, part.first_id
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from inference.batch_plan import Batch, ChunkGrid
from inference.checkpoint import encode_part
from inference.config import WorkerConfig
from inference.dataset import Chunk
from inference.digest import id_digest
from inference.layout import part_key
from inference.storage import ObjectStore


@dataclass(frozen=True, slots=True)
class ChunkWork:
    """One chunk in hand: its rows, their token lengths and its batches."""

    chunk: Chunk
    lengths: list[int]
    batches: tuple[Batch, ...]

    def texts(self, batch: Batch) -> list[str]:
        return [self.chunk.texts[offset - self.chunk.first] for offset in batch.rows]

    def lengths_of(self, batch: Batch) -> list[int]:
        return [self.lengths[offset - self.chunk.first] for offset in batch.rows]


@dataclass(frozen=True, slots=True)
class WrittenPart:
    key: str
    digest: int  # of its ids (`digest.py`)
    first_id: str  # the segment's first row's id if the part holds it, else ""
    last_id: str  # the segment's last row's id if the part holds it, else ""


def write_part(
    store: ObjectStore,
    config: WorkerConfig,
    grid: ChunkGrid,
    work: ChunkWork,
    batches: tuple[int, int],
    results: dict[int, tuple[str, float]],
) -> WrittenPart:
    """Batches `[first, stop)` of the chunk in hand as one Parquet part, rows in input order. Its key is
    fixed by the chunk's rows, the batch range when not the whole chunk, and the writing attempt."""
    first, stop = batches
    chunk, base = work.batches[0].chunk, work.batches[0].index
    chunk_first, chunk_stop = grid.chunk_range(chunk)
    whole = first == base and grid.is_chunk_end(stop - 1)
    key = part_key(
        config.segment_id,
        config.start + chunk_first,
        config.start + chunk_stop,
        None if whole else (first - base, stop - base),
        config.attempt,
    )
    offsets = sorted(offset for batch in work.batches[first - base : stop - base] for offset in batch.rows)
    ids = work.chunk.ids.take(pa.array([offset - work.chunk.first for offset in offsets], pa.int64()))
    store.put(key, encode_part(ids, [results[o][0] for o in offsets], [results[o][1] for o in offsets]))
    return WrittenPart(
        key,
        id_digest(ids),
        str(ids[0].as_py()) if offsets[0] == 0 else "",
        str(ids[-1].as_py()) if offsets[-1] == grid.total_rows - 1 else "",
    )
