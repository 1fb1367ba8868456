"""A background part's `with` block is its lifetime: started on entry, closed on exit, an error or not."""

from __future__ import annotations

from typing import Self

import pytest

from coordinator.background import Background


class Part(Background):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def start(self) -> Self:
        self.calls.append("start")
        return self

    def close(self) -> None:
        self.calls.append("close")


def test_a_with_block_starts_and_closes_it_even_on_an_error() -> None:
    with Part() as part:
        assert part.calls == ["start"]
    assert part.calls == ["start", "close"]
    failing = Part()
    with pytest.raises(RuntimeError), failing:
        raise RuntimeError("inside")
    assert failing.calls == ["start", "close"]
