"""What the live loop watches: each segment's open attempts (its active one and, after an EC2 warning,
its leaving one), what each was told, and the reads every part of the loop asks the segment table.

It is the segment table's own record (`segment_table.SegmentTable` extends it with the moves): only the
table changes it, and no other module holds a segment's attempts (`tests/test_architecture.py`).

Usage::

    table.active("seg-0003")           # its launched attempt (an AttemptRow of the state file), or None
    table.watched()                    # every open attempt the monitor looks at this cycle
"""

from __future__ import annotations

from coordinator.job.core import AttemptRow, CoordinatorState, SegmentRow, SegmentState
from inference.checkpoint import rows_checkpointed
from inference.storage import ObjectStore


class WatchedAttempts:
    def __init__(self, *, job_id: str, state: CoordinatorState, store: ObjectStore) -> None:
        self._job, self._state, self._store = job_id, state, store
        self._index = {row.segment_id: i for i, row in enumerate(state.segments(job_id))}
        self._active: dict[str, AttemptRow] = {}  # segment -> its launched attempt the loop watches
        self._leaving: dict[str, AttemptRow] = {}  # segment -> its warned attempt, draining while one boots
        self._rebalanced: dict[str, bool] = {}  # leaving attempt id -> its instance told to stop yet
        self._switching: dict[str, float] = {}  # segment -> monotonic time its instance was told to stop
        self._budget_stopped: set[str] = set()  # attempt ids whose instance the spend watch stopped
        self._boots: list[float] = []  # cloud seconds from launch to first heartbeat
        self._checkpointed: dict[str, int] = {}  # segment -> rows its checkpoint holds, read once an attempt

    # -- reading ------------------------------------------------------------------------------------------

    @property
    def count(self) -> int:
        return len(self._index)

    def index_of(self, segment: str) -> int:
        return self._index[segment]

    def segments(self) -> list[SegmentRow]:
        return self._state.segments(self._job)

    def segment(self, segment: str) -> SegmentRow:
        return self._state.segment(self._job, segment)

    def attempts(self, segment: str | None = None) -> list[AttemptRow]:
        """Every attempt of the job (or of one segment) in the state file, in launch order."""
        return self._state.attempts(self._job, segment)

    def active(self, segment: str) -> AttemptRow | None:
        return self._active.get(segment)

    def active_attempts(self) -> list[AttemptRow]:
        return list(self._active.values())

    def leaving(self, segment: str) -> AttemptRow | None:
        return self._leaving.get(segment)

    def watched(self) -> list[AttemptRow]:
        """Every open attempt the loop watches: the active ones, then the leaving ones."""
        return [*self._active.values(), *self._leaving.values()]

    def is_leaving(self, attempt: AttemptRow) -> bool:
        return self._leaving.get(attempt.segment_id) == attempt

    def segment_of(self, instance_id: str) -> str | None:
        """The segment whose active attempt runs on the instance (None: none does)."""
        return next((s for s, a in self._active.items() if a.instance_id == instance_id), None)

    def switching(self, segment: str) -> bool:
        return segment in self._switching

    def budget_stopped(self, attempt: AttemptRow) -> bool:
        return attempt.attempt_id in self._budget_stopped

    def boots_seen(self) -> list[float]:
        return list(self._boots)

    def checkpointed_rows(self, segment: str) -> int:
        """The rows the segment's checkpoint holds, read once per attempt."""
        if segment not in self._checkpointed:
            self._checkpointed[segment] = rows_checkpointed(self._store, segment, self.segment(segment).rows)
        return self._checkpointed[segment]

    def finished(self) -> bool:
        return all(row.state.is_terminal for row in self.segments()) and not self._leaving

    def failures(self) -> dict[str, str]:
        """segment -> why it FAILED (in a state file older than causes: its last event's reason)."""
        last_reason = {e.segment_id: e.reason for e in self._state.events(self._job)}  # the newest wins
        return {
            row.segment_id: row.failure or last_reason.get(row.segment_id, "unknown")
            for row in self.segments()
            if row.state == SegmentState.FAILED
        }
