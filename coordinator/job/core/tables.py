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
}

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY, config TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS segments (
    job_id TEXT NOT NULL, segment_id TEXT NOT NULL, start INTEGER NOT NULL, stop INTEGER NOT NULL,
    state TEXT NOT NULL, market TEXT, attempts INTEGER NOT NULL DEFAULT 0, updated_at REAL NOT NULL,
    input_key TEXT NOT NULL DEFAULT '', input_digest TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (job_id, segment_id)
);
CREATE TABLE IF NOT EXISTS attempts (
    attempt_id TEXT PRIMARY KEY, job_id TEXT NOT NULL, segment_id TEXT NOT NULL, market TEXT NOT NULL,
    instance_type TEXT NOT NULL, instance_id TEXT, launched_at REAL, ended_at REAL, end_reason TEXT,
    rows_kept INTEGER NOT NULL DEFAULT 0, rows_wasted INTEGER NOT NULL DEFAULT 0,
    rows_per_s REAL NOT NULL DEFAULT 0, billed_seconds INTEGER, cost_usd REAL,
    heartbeat_puts INTEGER NOT NULL DEFAULT 0
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

    @property
    def rows(self) -> tuple[int, int]:
        """Its row range: (start, stop)."""
        return self.start, self.stop


@dataclass(frozen=True, slots=True)
class AttemptRow:
    """One attempt as the state file holds it: launched (an instance id and time) and ended (a reason, its
    rows and cost) once each."""

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


def segment_row(row: tuple[Any, ...]) -> SegmentRow:
    job_id, segment_id, start, stop, state, market, attempts, input_key, input_digest = row
    return SegmentRow(
        job_id, segment_id, start, stop, SegmentState(state), market, attempts, input_key, input_digest
    )


SEGMENT_COLUMNS = "job_id, segment_id, start, stop, state, market, attempts, input_key, input_digest"


ATTEMPT_COLUMNS = ", ".join(f.name for f in fields(AttemptRow))


@dataclass(frozen=True, slots=True)
class EventRow:
    ts: float
    segment_id: str | None
    from_state: str | None
    to_state: str | None
    reason: str
