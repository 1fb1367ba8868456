"""What the job looks like now: one status row per segment, for the progress table and the log; and the
run's own log file.

Usage::

    rows = statuses(book)                     # SegmentStatus per segment: state, market, rows, cost so far
    status_log = StatusLog(book, every=30.0)  # one log line per active instance every 30 cloud seconds
    status_log.cycle(on_cycle)                # each cycle: the lines when due, the rows to the live table
    with run_log(run_dir): ...                # the coordinator's lines also in <run_dir>/coordinator.log
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from coordinator.cost.billing import cost_usd
from coordinator.job.attempts import AttemptBook
from coordinator.job.state_schema import SegmentState

log = logging.getLogger("coordinator")


@dataclass(frozen=True, slots=True)
class SegmentStatus:
    """One row of the progress table."""

    segment_id: str
    state: str
    market: str
    rows_done: int
    rows_total: int
    rows_per_s: float
    attempts: int
    cost_usd: float


def statuses(book: AttemptBook) -> list[SegmentStatus]:
    costs: dict[str, float] = {}
    for a in book.state.attempts(book.job_id):
        costs[a.segment_id] = costs.get(a.segment_id, 0.0) + (a.cost_usd or 0.0)
    now = book.clock.now()
    rows = []
    for row in book.state.segments(book.job_id):
        tracked = book.active.get(row.segment_id)
        beat = book.monitor.latest_heartbeat(tracked.active.attempt_id) if tracked else None
        running_cost = 0.0
        if tracked:
            quote = book.quotes.of(tracked.active.market, tracked.instance_type)
            running_cost = cost_usd(quote.rate_usd_per_hour, max(0.0, now - tracked.launched_cloud))
        done_rows = (
            row.stop - row.start if row.state == SegmentState.DONE else (beat.rows_done if beat else 0)
        )
        rows.append(
            SegmentStatus(
                row.segment_id,
                row.state,
                row.market or "",
                done_rows,
                row.stop - row.start,
                book.clock_rate(beat.rows_per_s) if beat else 0.0,
                row.attempts,
                costs.get(row.segment_id, 0.0) + running_cost,
            )
        )
    return rows


class StatusLog:
    """A status line per active instance every `every` cloud seconds."""

    def __init__(self, book: AttemptBook, every: float) -> None:
        self.book = book
        self.every = every
        self.next_at = 0.0

    def due(self) -> bool:
        return self.book.clock.now() >= self.next_at

    def cycle(self, on_cycle: Callable[[list[SegmentStatus]], None] | None) -> None:
        """Once a cycle: the lines when they are due, and the rows to `on_cycle` (the live table)."""
        if not self.due() and on_cycle is None:
            return
        rows = statuses(self.book)
        if self.due():
            self.write(rows)
        if on_cycle is not None:
            on_cycle(rows)

    def write(self, rows: list[SegmentStatus]) -> None:
        clock = self.book.clock
        now = clock.now()
        self.next_at = now + self.every
        elapsed = clock_text(now - clock.origin)
        for s in rows:
            tracked = self.book.active.get(s.segment_id)
            if tracked is None:
                continue
            log.info(
                "status t=%s %s %s %s %s rows %d/%d %.2f rows/s attempts %d cost $%.4f",
                elapsed,
                s.segment_id,
                tracked.active.instance_id,
                s.market,
                s.state,
                s.rows_done,
                s.rows_total,
                s.rows_per_s,
                s.attempts,
                s.cost_usd,
            )


def clock_text(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    minutes, secs = divmod(int(seconds), 60)
    return f"+{minutes}m{secs:02d}s"


@contextmanager
def run_log(run_dir: Path) -> Iterator[Path]:
    """The coordinator's log lines for this run go to `<run_dir>/coordinator.log` as well."""
    path = run_dir / "coordinator.log"
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logger = logging.getLogger("coordinator")
    logger.addHandler(handler)
    previous, propagates = logger.level, logger.propagate
    logger.setLevel(logging.INFO)
    logger.propagate = False  # the terminal shows the progress table; the file keeps every line
    try:
        yield path
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
        logger.propagate = propagates
        handler.close()
