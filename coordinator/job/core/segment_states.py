"""Where a segment is, and the moves allowed between its states."""

from __future__ import annotations

from enum import StrEnum


class SegmentState(StrEnum):
    """Where a segment is (module docstring); the value is what the state file and the event log hold."""

    PENDING = "PENDING"
    LAUNCHING = "LAUNCHING"
    RUNNING = "RUNNING"
    DRAINING = "DRAINING"
    LOST = "LOST"
    INTERRUPTED = "INTERRUPTED"
    FAILED_LAUNCH = "FAILED_LAUNCH"
    DONE = "DONE"
    FAILED = "FAILED"

    @classmethod
    def terminal(cls) -> frozenset[SegmentState]:
        """The states a segment never leaves."""
        return frozenset({cls.DONE, cls.FAILED})

    @property
    def is_terminal(self) -> bool:
        return self in SegmentState.terminal()


S = SegmentState
# target state -> the states it may come from
ALLOWED_FROM: dict[SegmentState, frozenset[SegmentState]] = {
    S.LAUNCHING: frozenset({S.PENDING, S.INTERRUPTED, S.FAILED_LAUNCH}),
    S.RUNNING: frozenset({S.LAUNCHING}),
    S.DRAINING: frozenset({S.RUNNING}),
    S.LOST: frozenset({S.LAUNCHING, S.RUNNING, S.DRAINING}),
    S.INTERRUPTED: frozenset({S.DRAINING, S.LOST}),
    S.FAILED_LAUNCH: frozenset({S.LAUNCHING}),
    S.DONE: frozenset({S.RUNNING, S.DRAINING}),
    S.FAILED: frozenset({S.FAILED_LAUNCH, S.INTERRUPTED, S.RUNNING}),
}
