"""An attempt the coordinator is watching, and the budget guard's label of an attempt.

Usage::

    tracked = Tracked(ActiveAttempt(...), segment_index=3, launched_cloud=120.0,
                      budget_label=attempt_label("job-1/seg-0003/2", "spot"))
"""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.job.monitor import ActiveAttempt


@dataclass(slots=True)
class Tracked:
    """An attempt the loop is watching."""

    active: ActiveAttempt
    segment_index: int
    launched_cloud: float
    budget_label: str
    instance_type: str = ""  # its pool's ("" before pools were recorded: the job's first type)
    zone: str = ""  # its pool's ("" unknown: adopted after a restart)


FINAL_BEATS = frozenset({"done", "draining", "failed"})  # a worker's last heartbeat before it exits


def attempt_label(attempt_id: str, market: str) -> str:
    """The budget guard's label of an attempt: its reservation and its actual share it."""
    return f"{attempt_id} {market}"
