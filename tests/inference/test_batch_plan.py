"""The batch plan: length-sorted batches inside checkpoint chunks, every row once, nonsense sizes refused."""

from __future__ import annotations

import pytest

from inference.batch_plan import plan_batches


def test_plan_sorts_by_length_inside_chunks_and_covers_every_row_once() -> None:
    lengths = [(i * 37) % 50 + 3 for i in range(1_000)]
    plan = plan_batches(lengths, batch_size=16, checkpoint_every=5)
    rows = [offset for batch in plan.batches for offset in batch.rows]
    assert sorted(rows) == list(range(1_000))
    for batch in plan.batches:
        first, stop = plan.chunk_range(batch.chunk)
        assert all(first <= offset < stop for offset in batch.rows)  # never crosses a checkpoint chunk
        assert [lengths[o] for o in batch.rows] == sorted(lengths[o] for o in batch.rows)
    assert plan.batches == plan_batches(lengths, 16, 5).batches  # deterministic: resume relies on it
    assert [plan.is_chunk_end(b.index) for b in plan.batches].count(True) == 13  # ceil(1000 / 80)


def test_plan_rejects_nonsense_sizes() -> None:
    with pytest.raises(ValueError, match="batch size"):
        plan_batches([1, 2], batch_size=0, checkpoint_every=1)
