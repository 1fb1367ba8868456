"""The batch plan of a segment: which rows go into which batch, fixed before the first batch runs.

The segment is cut into *chunks* of `batch_size * checkpoint_every` rows, aligned at the segment's first
row. Inside a chunk the rows are sorted by token length (ties by row) and cut into batches, so each batch
pads to nearly the same length (dynamic padding wastes little). A chunk ends with a part and a checkpoint.

Every chunk but the last has exactly `checkpoint_every` batches, so a batch's index says its chunk without
reading a row: a worker plans one chunk at a time from that chunk's texts alone, streaming the segment, and
a restarted worker resumes at a batch index by reading from that batch's chunk on. The plan depends only on
the texts and the two sizes: every row is predicted in the same company as in an uninterrupted run, and the
scores are the same to the last bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Batch:
    index: int  # position in the segment's plan, 0-based
    chunk: int
    rows: tuple[int, ...]  # offsets from the segment's first row, sorted by token length


@dataclass(frozen=True, slots=True)
class ChunkGrid:
    """Where a segment's chunks and batches fall, from its row count and the two sizes alone."""

    total_rows: int
    batch_size: int
    checkpoint_every: int

    def __post_init__(self) -> None:
        if self.batch_size < 1 or self.checkpoint_every < 1:
            raise ValueError(
                f"batch size ({self.batch_size}) and checkpoint interval ({self.checkpoint_every}) "
                "must be >= 1"
            )

    @property
    def chunk_rows(self) -> int:
        return self.batch_size * self.checkpoint_every

    @property
    def chunks(self) -> int:
        return math.ceil(self.total_rows / self.chunk_rows)

    @property
    def batches(self) -> int:
        full, rest = divmod(self.total_rows, self.chunk_rows)
        return full * self.checkpoint_every + math.ceil(rest / self.batch_size)

    def chunk_range(self, chunk: int) -> tuple[int, int]:
        """Row offsets `[first, stop)` of a chunk."""
        first = chunk * self.chunk_rows
        return first, min(first + self.chunk_rows, self.total_rows)

    def chunk_of(self, batch_index: int) -> int:
        return batch_index // self.checkpoint_every

    def first_batch_of_chunk(self, chunk: int) -> int:
        return chunk * self.checkpoint_every

    def is_chunk_end(self, batch_index: int) -> bool:
        last = batch_index == self.batches - 1
        return last or self.chunk_of(batch_index + 1) != self.chunk_of(batch_index)

    def plan_chunk(self, chunk: int, lengths: list[int]) -> tuple[Batch, ...]:
        """The batches of one chunk from its rows' token lengths (`lengths[0]` is the chunk's first row)."""
        first, stop = self.chunk_range(chunk)
        if len(lengths) != stop - first:
            raise ValueError(f"chunk {chunk} has {stop - first} rows, got {len(lengths)} lengths")
        ordered = sorted(range(first, stop), key=lambda offset: (lengths[offset - first], offset))
        index = self.first_batch_of_chunk(chunk)
        return tuple(
            Batch(index + number, chunk, tuple(ordered[cut : cut + self.batch_size]))
            for number, cut in enumerate(range(0, len(ordered), self.batch_size))
        )


@dataclass(frozen=True, slots=True)
class BatchPlan:
    """A whole segment's batches at once (for a segment small enough to hold; the worker streams)."""

    batches: tuple[Batch, ...]
    grid: ChunkGrid

    @property
    def chunk_rows(self) -> int:
        return self.grid.chunk_rows

    @property
    def total_rows(self) -> int:
        return self.grid.total_rows

    def chunk_range(self, chunk: int) -> tuple[int, int]:
        return self.grid.chunk_range(chunk)

    def first_batch_of_chunk(self, chunk: int) -> int:
        return self.grid.first_batch_of_chunk(chunk)

    def is_chunk_end(self, batch_index: int) -> bool:
        return self.grid.is_chunk_end(batch_index)


def plan_batches(lengths: list[int], batch_size: int, checkpoint_every: int) -> BatchPlan:
    grid = ChunkGrid(len(lengths), batch_size, checkpoint_every)
    batches: list[Batch] = []
    for chunk in range(grid.chunks):
        first, stop = grid.chunk_range(chunk)
        batches.extend(grid.plan_chunk(chunk, lengths[first:stop]))
    return BatchPlan(tuple(batches), grid)
