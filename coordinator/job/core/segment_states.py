"""Where a segment is, and the moves allowed between its states.

A segment is one row range of the job's input, worked by one instance at a time. `ALLOWED_FROM` is the whole
state machine: for each target state, the states a segment may come from. The state file refuses any other
move (`state_file.py`), the segment table makes each one (`loop/segment_table.py`), and the documentation's
state diagram is drawn from this table (`docs/hooks.py`), so the three cannot disagree.

Usage::

    SegmentState.RUNNING in ALLOWED_FROM[SegmentState.DRAINING]     # True: a notice may come while it runs
    SegmentState.DONE.is_terminal                                   # True: a segment never leaves DONE
"""

from __future__ import annotations

from enum import StrEnum


class SegmentState(StrEnum):
    """Where a segment is; the value is what the state file and the event log hold."""

    # made with the job, no attempt yet: the policy picks the market of its first launch
    PENDING = "PENDING"
    # the budget guard allowed an attempt and it is recorded; the launch call is made or being made, and
    # the instance boots until its worker's first heartbeat
    LAUNCHING = "LAUNCHING"
    # its worker heartbeats: it reads rows, predicts, writes parts and checkpoints
    RUNNING = "RUNNING"
    # its worker said it stops (an interruption notice or SIGTERM): it finishes its batch and checkpoints
    DRAINING = "DRAINING"
    # its instance is gone, or its worker went silent, without a last word: recovered from the checkpoint
    LOST = "LOST"
    # its attempt is over (drained or lost) and the work left waits for the policy's next launch
    INTERRUPTED = "INTERRUPTED"
    # a launch got no instance (capacity, throttling): the policy retries, falls back, or gives up
    FAILED_LAUNCH = "FAILED_LAUNCH"
    # its worker finished every row and its checkpoint proves it
    DONE = "DONE"
    # given up, with its cause kept in the state file: a policy's limit, the budget guard, a worker that
    # failed, the account
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


def moves() -> list[tuple[SegmentState, SegmentState]]:
    """Every allowed move (from, to), in the enum's order: what the state diagram draws."""
    order = list(SegmentState)
    return sorted(
        ((old, new) for new, olds in ALLOWED_FROM.items() for old in olds),
        key=lambda move: (order.index(move[0]), order.index(move[1])),
    )
