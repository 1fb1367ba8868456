"""Coordinator state in SQLite: jobs, segments, attempts and an event log, changed only by guarded
transitions.

Each transition is named after its target state (`set_running`, `set_interrupted`, ...). It updates the
segment only if it is in one of the allowed prior states (`UPDATE ... WHERE state IN (...)`), checks that
exactly one row changed, and writes an event with the reason, all in one transaction. A coordinator killed
at any point and restarted with the same job id re-reads this file and carries on from what it says. The
moves allowed are `segment_states.ALLOWED_FROM`; in the live loop only the segment table and the launcher
make them (`tests/test_architecture.py` holds that).

Usage::

    state = CoordinatorState(Path("runs/job-1/state.db"))
    state.create_job("job-1", config={...}, segments=[("seg-0000", 0, 2500), ...])
    state.set_launching("job-1", "seg-0000", reason="initial launch, spot")
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from coordinator.errors import InvalidTransition, RunStorageError, SpotbatchError
from coordinator.job.core.segment_states import ALLOWED_FROM, S, SegmentState
from coordinator.job.core.tables import (
    ATTEMPT_COLUMNS,
    SCHEMA,
    SEGMENT_COLUMNS,
    AttemptRow,
    EventRow,
    SegmentRow,
    segment_row,
    upgrade,
)


class CoordinatorState:
    def __init__(self, path: Path) -> None:
        self.path = path
        with self._storage("open the state"):
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            # isolation_level=None: we open transactions ourselves (BEGIN IMMEDIATE), one per transition
            self._db = sqlite3.connect(path, isolation_level=None, timeout=30)
            path.chmod(0o600)
            # a rollback journal, not WAL: WAL's index is a memory-mapped file, and a full disk turns a
            # write into SIGBUS; with the journal a full disk is an error the coordinator can report
            self._db.execute("PRAGMA journal_mode=DELETE")
            self._db.execute("PRAGMA synchronous=FULL")  # a transition that returned survives a kill -9
            self._db.executescript(SCHEMA)
            upgrade(self._db)

    @contextmanager
    def _storage(self, what: str) -> Iterator[None]:
        """SQLite and file errors as one line naming the state file."""
        try:
            yield
        except (sqlite3.OperationalError, sqlite3.DatabaseError, OSError) as error:
            raise RunStorageError(
                f"{self.path}: cannot {what}: {getattr(error, 'strerror', None) or error}"
            ) from None

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._storage("write the state"):
            self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException as error:
            if self._db.in_transaction:
                with self._storage("roll back a transition"):
                    self._db.execute("ROLLBACK")
            if isinstance(error, sqlite3.Error):
                raise RunStorageError(f"{self.path}: cannot write the state: {error}") from None
            raise
        with self._storage("write the state"):
            self._db.execute("COMMIT")

    def _event(
        self,
        db: sqlite3.Connection,
        job_id: str,
        segment_id: str | None,
        old: str | None,
        new: str | None,
        reason: str,
    ) -> None:
        db.execute(
            "INSERT INTO events (ts, job_id, segment_id, from_state, to_state, reason) VALUES (?, ?, ?, ?, "
            "?, ?)",
            (time.time(), job_id, segment_id, old, new, reason),
        )

    # -- jobs ------------------------------------------------------------------------------------------------

    def create_job(
        self,
        job_id: str,
        *,
        config: dict[str, Any],
        segments: Iterable[tuple[str, int, int] | tuple[str, int, int, str, str]],
    ) -> bool:
        """Create the job and its PENDING segments (id, start, stop[, input key, input digest]); False (and
        no change) if the job already exists."""
        with self._transaction() as db:
            if db.execute("SELECT 1 FROM jobs WHERE job_id = ?", (job_id,)).fetchone():
                return False
            now = time.time()
            db.execute("INSERT INTO jobs VALUES (?, ?, ?)", (job_id, json.dumps(config, sort_keys=True), now))
            for segment_id, start, stop, *source in segments:
                key, digest = source if source else ("", "")
                db.execute(
                    "INSERT INTO segments (job_id, segment_id, start, stop, state, updated_at, input_key, "
                    "input_digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (job_id, segment_id, start, stop, S.PENDING, now, key, digest),
                )
            self._event(db, job_id, None, None, None, "job created")
            return True

    def jobs(self) -> list[str]:
        return [row[0] for row in self._db.execute("SELECT job_id FROM jobs ORDER BY created_at")]

    def job_config(self, job_id: str) -> dict[str, Any]:
        row = self._db.execute("SELECT config FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        if row is None:
            raise SpotbatchError(f"no job {job_id!r} in this state file")
        config: dict[str, Any] = json.loads(row[0])
        return config

    # -- segments --------------------------------------------------------------------------------------------

    def segments(self, job_id: str) -> list[SegmentRow]:
        rows = self._db.execute(
            f"SELECT {SEGMENT_COLUMNS} FROM segments WHERE job_id = ? ORDER BY segment_id",
            (job_id,),
        ).fetchall()
        return [segment_row(row) for row in rows]

    def segment(self, job_id: str, segment_id: str) -> SegmentRow:
        row = self._db.execute(
            f"SELECT {SEGMENT_COLUMNS} FROM segments WHERE job_id = ? AND segment_id = ?",
            (job_id, segment_id),
        ).fetchone()
        if row is None:
            raise SpotbatchError(f"job {job_id!r} has no segment {segment_id!r}")
        return segment_row(row)

    def _transition(
        self,
        job_id: str,
        segment_id: str,
        target: SegmentState,
        reason: str,
        market: str | None = None,
        failure: str = "",
    ) -> None:
        allowed = ALLOWED_FROM[target]
        placeholders = ", ".join("?" for _ in allowed)
        with self._transaction() as db:
            row = db.execute(
                "SELECT state FROM segments WHERE job_id = ? AND segment_id = ?", (job_id, segment_id)
            ).fetchone()
            if row is None:
                raise SpotbatchError(f"job {job_id!r} has no segment {segment_id!r}")
            launching = 1 if target == S.LAUNCHING else 0
            changed = db.execute(
                "UPDATE segments SET state = ?, market = COALESCE(?, market), attempts = attempts + ?, "
                "updated_at = ?, failure = ? "
                f"WHERE job_id = ? AND segment_id = ? AND state IN ({placeholders})",
                (target, market, launching, time.time(), failure, job_id, segment_id, *sorted(allowed)),
            ).rowcount
            if changed != 1:
                raise InvalidTransition(
                    f"{job_id}/{segment_id}: {row[0]} -> {target} is not allowed (from "
                    f"{', '.join(sorted(allowed))})"
                )
            self._event(db, job_id, segment_id, row[0], target, reason)

    def set_launching(self, job_id: str, segment_id: str, *, market: str, reason: str) -> None:
        self._transition(job_id, segment_id, S.LAUNCHING, reason, market)

    def set_running(self, job_id: str, segment_id: str, *, reason: str) -> None:
        self._transition(job_id, segment_id, S.RUNNING, reason)

    def set_draining(self, job_id: str, segment_id: str, *, reason: str) -> None:
        self._transition(job_id, segment_id, S.DRAINING, reason)

    def set_lost(self, job_id: str, segment_id: str, *, reason: str) -> None:
        self._transition(job_id, segment_id, S.LOST, reason)

    def set_interrupted(self, job_id: str, segment_id: str, *, reason: str) -> None:
        self._transition(job_id, segment_id, S.INTERRUPTED, reason)

    def set_failed_launch(self, job_id: str, segment_id: str, *, reason: str) -> None:
        self._transition(job_id, segment_id, S.FAILED_LAUNCH, reason)

    def set_done(self, job_id: str, segment_id: str, *, reason: str) -> None:
        self._transition(job_id, segment_id, S.DONE, reason)

    def set_failed(self, job_id: str, segment_id: str, *, reason: str, cause: str = "") -> None:
        """FAILED for good: the event says `reason`; the segment keeps `cause` (or the reason) as why it
        failed, for the job's outcome after any restart."""
        self._transition(job_id, segment_id, S.FAILED, reason, failure=cause or reason)

    # -- attempts --------------------------------------------------------------------------------------------

    def add_attempt(
        self, attempt_id: str, job_id: str, segment_id: str, *, market: str, instance_type: str
    ) -> AttemptRow:
        """Record an attempt before its launch call (the attempt id is the launch's idempotency token); the
        row, not launched yet."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO attempts (attempt_id, job_id, segment_id, market, instance_type) VALUES (?, "
                "?, ?, ?, ?)",
                (attempt_id, job_id, segment_id, market, instance_type),
            )
        return self.attempt(attempt_id)

    def attempt_launched(
        self, attempt_id: str, *, instance_id: str, launched_at: float, instance_type: str, zone: str = ""
    ) -> AttemptRow:
        """The instance EC2 launched for the attempt, and the pool (type, zone) it landed in; the row as
        it now stands."""
        with self._transaction() as db:
            db.execute(
                "UPDATE attempts SET instance_id = ?, launched_at = ?, instance_type = ?, zone = ? "
                "WHERE attempt_id = ?",
                (instance_id, launched_at, instance_type, zone, attempt_id),
            )
        return self.attempt(attempt_id)

    def attempt(self, attempt_id: str) -> AttemptRow:
        row = self._db.execute(
            f"SELECT {ATTEMPT_COLUMNS} FROM attempts WHERE attempt_id = ?", (attempt_id,)
        ).fetchone()
        if row is None:
            raise SpotbatchError(f"no attempt {attempt_id!r} in this state file")
        return AttemptRow(*row)

    def attempt_ended(
        self,
        attempt_id: str,
        *,
        ended_at: float,
        end_reason: str,
        rows_kept: int,
        rows_wasted: int,
        rows_per_s: float = 0.0,
        billed_seconds: int | None = None,
        cost_usd: float | None = None,
        heartbeat_puts: int = 0,
    ) -> AttemptRow:
        """The attempt's end, once; the row as it now stands (`InvalidTransition` if it had ended)."""
        values = (ended_at, end_reason, rows_kept, rows_wasted, rows_per_s, billed_seconds, cost_usd)
        with self._transaction() as db:
            changed = db.execute(
                "UPDATE attempts SET ended_at = ?, end_reason = ?, rows_kept = ?, rows_wasted = ?, "
                "rows_per_s = ?, billed_seconds = ?, cost_usd = ?, heartbeat_puts = ? WHERE attempt_id = ? "
                "AND ended_at IS NULL",
                (*values, heartbeat_puts, attempt_id),
            ).rowcount
            if changed != 1:
                raise InvalidTransition(f"attempt {attempt_id} is unknown or already ended")
        return self.attempt(attempt_id)

    def open_attempts(self, job_id: str) -> list[AttemptRow]:
        """Attempts without an end: after a restart, these instances are adopted or recovered."""
        return [a for a in self.attempts(job_id) if a.ended_at is None]

    def attempts(self, job_id: str, segment_id: str | None = None) -> list[AttemptRow]:
        """Every attempt of the job (or of one segment), in launch order."""
        query = f"SELECT {ATTEMPT_COLUMNS} FROM attempts WHERE job_id = ?"
        query += " AND segment_id = ?" if segment_id else ""
        cursor = self._db.execute(
            query + " ORDER BY rowid", (job_id, segment_id) if segment_id else (job_id,)
        )
        return [AttemptRow(*row) for row in cursor.fetchall()]

    def events(self, job_id: str) -> list[EventRow]:
        rows = self._db.execute(
            "SELECT ts, segment_id, from_state, to_state, reason FROM events WHERE job_id = ? ORDER BY "
            "event_id",
            (job_id,),
        ).fetchall()
        return [EventRow(*row) for row in rows]
