"""Segments: contiguous row ranges of the dataset, one per worker instance.

A segment is deterministic from the dataset size and the segment count, so a restarted coordinator (or a
user) computes the same boundaries again.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Segment:
    segment_id: str
    start: int
    stop: int
    input_uri: str

    @property
    def rows(self) -> int:
        return self.stop - self.start


def segment_name(index: int) -> str:
    return f"seg-{index:04d}"


def plan_segments(num_rows: int, count: int, input_uri: str) -> list[Segment]:
    """Split `[0, num_rows)` into `count` ranges whose sizes differ by at most one row."""
    if num_rows <= 0:
        raise ValueError(f"cannot split {num_rows} rows into segments")
    if not 1 <= count <= num_rows:
        raise ValueError(f"segment count must be between 1 and {num_rows} (the row count), got {count}")
    base, extra = divmod(num_rows, count)
    segments, start = [], 0
    for index in range(count):
        stop = start + base + (1 if index < extra else 0)
        segments.append(Segment(segment_name(index), start, stop, input_uri))
        start = stop
    return segments
