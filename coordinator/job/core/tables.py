"""The coordinator state's SQLite tables: jobs, their segments, each segment's attempts, and every transition;
and the typed rows `state_file.py` returns.

`state_file.py` creates them (`CREATE TABLE IF NOT EXISTS`: a restart opens the same file), adds the columns a
state file written by an older version lacks (`upgrade`), and is the only module that reads or writes them.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, fields
from typing import Any

from coordinator.cost.pricing import Market
from coordinator.job.core.segment_states import SegmentState

ADDED_COLUMNS = {  # column -> its definition, for state files made before it existed
    ("attempts", "heartbeat_puts"): "INTEGER NOT NULL DEFAULT 0",
    ("segments", "input_key"): "TEXT NOT NULL DEFAULT ''",
    ("segments", "input_digest"): "TEXT NOT NULL DEFAULT ''",
    ("segments", "failure"): "TEXT NOT NULL DEFAULT ''",
    ("attempts", "zone"): "TEXT NOT NULL DEFAULT ''",
}

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY, config TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS segments (
    job_id TEXT NOT NULL, segment_id TEXT NOT NULL, start INTEGER NOT NULL, stop INTEGER NOT NULL,
    state TEXT NOT NULL, market TEXT, attempts INTEGER NOT NULL DEFAULT 0, updated_at REAL NOT NULL,
    input_key TEXT NOT NULL DEFAULT '', input_digest TEXT NOT NULL DEFAULT '',
    failure TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (job_id, segment_id)
);
CREATE TABLE IF NOT EXISTS attempts (
    attempt_id TEXT PRIMARY KEY, job_id TEXT NOT NULL, segment_id TEXT NOT NULL, market TEXT NOT NULL,
    instance_type TEXT NOT NULL, instance_id TEXT, launched_at REAL, ended_at REAL, end_reason TEXT,
    rows_kept INTEGER NOT NULL DEFAULT 0, rows_wasted INTEGER NOT NULL DEFAULT 0,
    rows_per_s REAL NOT NULL DEFAULT 0, billed_seconds INTEGER, cost_usd REAL,
    heartbeat_puts INTEGER NOT NULL DEFAULT 0, zone TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS events (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL, job_id TEXT NOT NULL, segment_id TEXT,
    from_state TEXT, to_state TEXT, reason TEXT NOT NULL
);
"""


def upgrade(db: sqlite3.Connection) -> None:
    for (table, column), definition in ADDED_COLUMNS.items():
        present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if column not in present:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")


@dataclass(frozen=True, slots=True)
class SegmentRow:
    job_id: str
    segment_id: str
    start: int
    stop: int
    state: SegmentState
    market: str | None
    attempts: int
    input_key: str = ""  # its file in the bucket ("": the job's input_key, as state files before it said)
    input_digest: str = ""  # of its input ids (`inference/digest.py`), to prove its output by
    failure: str = ""  # why it FAILED, for the job's outcome ("" not failed, or a state file before it said)

    @property
    def rows(self) -> tuple[int, int]:
        """Its row range: (start, stop)."""
        return self.start, self.stop


@dataclass(frozen=True, slots=True)
class AttemptRow:
    """One attempt as the state file holds it: recorded before its launch call, launched (an instance id, a
    cloud time, its pool) and ended (a reason, its rows and cost) once each. The live loop watches these
    rows; what it saw of one last is a `loop.monitor.AttemptView`."""

    attempt_id: str
    job_id: str
    segment_id: str
    market: Market
    instance_type: str
    instance_id: str | None
    launched_at: float | None
    ended_at: float | None
    end_reason: str | None
    rows_kept: int
    rows_wasted: int
    rows_per_s: float
    billed_seconds: int | None
    cost_usd: float | None
    heartbeat_puts: int
    zone: str = ""  # its pool's zone ("" unknown: launched before zones were recorded)

    @property
    def budget_label(self) -> str:
        """The budget guard's label of the attempt: its reservation and its actual share it."""
        return budget_label(self.attempt_id, self.market)

    @property
    def is_open(self) -> bool:
        """Not ended yet: its instance (if it has one) may still bill."""
        return self.ended_at is None


def budget_label(attempt_id: str, market: str) -> str:
    """`<attempt id> <market>`: how the spend log names an attempt (a restart parses it back)."""
    return f"{attempt_id} {market}"


def segment_row(row: tuple[Any, ...]) -> SegmentRow:
    job_id, segment_id, start, stop, state, *rest = row
    return SegmentRow(job_id, segment_id, start, stop, SegmentState(state), *rest)


SEGMENT_COLUMNS = ", ".join(f.name for f in fields(SegmentRow))


ATTEMPT_COLUMNS = ", ".join(f.name for f in fields(AttemptRow))


@dataclass(frozen=True, slots=True)
class EventRow:
    ts: float
    segment_id: str | None
    from_state: str | None
    to_state: str | None
    reason: str
