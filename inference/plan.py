"""The batch plan of a segment: which rows go into which batch, fixed before the first batch runs.

The segment is cut into *chunks* of `batch_size * checkpoint_every` rows, aligned at the segment's first
row. Inside a chunk the rows are sorted by token length (ties by row) and cut into batches, so each batch
pads to nearly the same length (dynamic padding wastes little). A chunk ends with a part and a checkpoint.

The plan depends only on the texts and the two sizes, so a restarted worker computes the same batches and
resumes at a batch index: every row is predicted in the same company as in an uninterrupted run, and the
scores are the same to the last bit.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Batch:
    index: int  # position in the plan, 0-based
    chunk: int
    rows: tuple[int, ...]  # offsets from the segment's first row, sorted by token length


@dataclass(frozen=True, slots=True)
class BatchPlan:
    batches: tuple[Batch, ...]
    chunk_rows: int
    total_rows: int

    def chunk_range(self, chunk: int) -> tuple[int, int]:
        """Row offsets `[first, stop)` of a chunk."""
        first = chunk * self.chunk_rows
        return first, min(first + self.chunk_rows, self.total_rows)

    def first_batch_of_chunk(self, chunk: int) -> int:
        return next(batch.index for batch in self.batches if batch.chunk == chunk)

    def is_chunk_end(self, batch_index: int) -> bool:
        last = batch_index == len(self.batches) - 1
        return last or self.batches[batch_index + 1].chunk != self.batches[batch_index].chunk


def plan_batches(lengths: list[int], batch_size: int, checkpoint_every: int) -> BatchPlan:
    if batch_size < 1 or checkpoint_every < 1:
        raise ValueError(
            f"batch size ({batch_size}) and checkpoint interval ({checkpoint_every}) must be >= 1"
        )
    chunk_rows = batch_size * checkpoint_every
    batches: list[Batch] = []
    for chunk, first in enumerate(range(0, len(lengths), chunk_rows)):
        offsets = range(first, min(first + chunk_rows, len(lengths)))
        ordered = sorted(offsets, key=lambda offset: (lengths[offset], offset))
        for cut in range(0, len(ordered), batch_size):
            batches.append(Batch(len(batches), chunk, tuple(ordered[cut : cut + batch_size])))
    return BatchPlan(tuple(batches), chunk_rows, len(lengths))
