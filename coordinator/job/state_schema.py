"""The coordinator state's SQLite tables: jobs, their segments, each segment's attempts, and every transition.

`state.py` creates them (`CREATE TABLE IF NOT EXISTS`: a restart opens the same file), adds the columns a
state file written by an older version lacks (`upgrade`), and is the only module that reads or writes them.
"""

from __future__ import annotations

import sqlite3

ADDED_COLUMNS = {  # column -> its definition, for state files made before it existed
    ("attempts", "heartbeat_puts"): "INTEGER NOT NULL DEFAULT 0",
}

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY, config TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS segments (
    job_id TEXT NOT NULL, segment_id TEXT NOT NULL, start INTEGER NOT NULL, stop INTEGER NOT NULL,
    state TEXT NOT NULL, market TEXT, attempts INTEGER NOT NULL DEFAULT 0, updated_at REAL NOT NULL,
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
