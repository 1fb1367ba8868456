"""Segments: contiguous, balanced row ranges, deterministic from the row and segment counts."""

from __future__ import annotations

import pytest

from coordinator.job.core.spec import plan_segments


def test_segments_are_contiguous_and_balanced() -> None:
    segments = plan_segments(10_000, 3, "s3://b/x.parquet")
    assert [(s.start, s.stop) for s in segments] == [(0, 3334), (3334, 6667), (6667, 10_000)]
    assert [s.segment_id for s in segments] == ["seg-0000", "seg-0001", "seg-0002"]
    with pytest.raises(ValueError, match="between 1 and 5"):
        plan_segments(5, 6, "x")
