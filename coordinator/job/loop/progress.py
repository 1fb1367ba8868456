"""What the job looks like now: one status row per segment, for the progress table and the log; and the
run's own log file.

A job of thousands of segments is summarized: the live table, the status lines and `spotbatch status`
show a row per segment up to `SUMMARY_ABOVE` segments; above it, `summarize`'s counts by state, rows and
rows/s, cost, and the `SLOWEST` active segments (lowest rows/s, then least done).

Usage::

    rows = statuses(table, monitor, quotes, clock)    # SegmentStatus per segment: state, rows, cost so far
    status_log = StatusLog(table, monitor, quotes, clock, every=30.0)   # a line per instance every 30 cloud s
    status_log.cycle(on_cycle)                # each cycle: the lines when due, the rows to the live table
    with run_log(run_dir): ...                # the coordinator's lines also in <run_dir>/coordinator.log
    summarize(rows).line()                    # "1000 segments: DONE 412, RUNNING 580, ...; rows ..."
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from coordinator.cost.billing import cost_usd
from coordinator.cost.job_quotes import JobQuotes
from coordinator.job.core import CloudClock, SegmentState
from coordinator.job.loop.monitor import Monitor
from coordinator.job.loop.segment_table import SegmentTable

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


def statuses(
    table: SegmentTable, monitor: Monitor, quotes: JobQuotes, clock: CloudClock
) -> list[SegmentStatus]:
    costs: dict[str, float] = {}
    for a in table.attempts():
        costs[a.segment_id] = costs.get(a.segment_id, 0.0) + (a.cost_usd or 0.0)
    now = clock.now()
    rows = []
    for row in table.segments():
        attempt = table.active(row.segment_id)
        beat = monitor.latest_heartbeat(attempt.attempt_id) if attempt else None
        running_cost = 0.0
        if attempt and attempt.launched_at is not None:
            quote = quotes.of(attempt.market, attempt.instance_type)
            running_cost = cost_usd(quote.rate_usd_per_hour, max(0.0, now - attempt.launched_at))
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
                clock.per_cloud_second(beat.rows_per_s) if beat else 0.0,
                row.attempts,
                costs.get(row.segment_id, 0.0) + running_cost,
            )
        )
    return rows


SUMMARY_ABOVE = 20  # segments: more, and each view summarizes instead of listing
SLOWEST = 5
ACTIVE = ("LAUNCHING", "RUNNING", "DRAINING")
ORDER = (
    "DONE",
    "RUNNING",
    "DRAINING",
    "LAUNCHING",
    "PENDING",
    "INTERRUPTED",
    "LOST",
    "FAILED_LAUNCH",
    "FAILED",
)


@dataclass(frozen=True, slots=True)
class JobSummary:
    segments: int
    by_state: dict[str, int]
    rows_done: int
    rows_total: int
    rows_per_s: float  # the active segments' together
    cost_usd: float
    slowest: tuple[SegmentStatus, ...]

    def line(self) -> str:
        states = ", ".join(f"{state} {self.by_state[state]}" for state in ORDER if self.by_state.get(state))
        share = self.rows_done / self.rows_total if self.rows_total else 0.0
        return (
            f"{self.segments} segments: {states}; rows {self.rows_done:,}/{self.rows_total:,} ({share:.0%}), "
            f"{self.rows_per_s:,.1f} rows/s; ${self.cost_usd:.4f}"
        )


def summarize(statuses: Sequence[SegmentStatus], slowest: int = SLOWEST) -> JobSummary:
    active = [s for s in statuses if s.state in ACTIVE]
    ranked = sorted(active, key=lambda s: (s.rows_per_s, s.rows_done / max(s.rows_total, 1), s.segment_id))
    return JobSummary(
        segments=len(statuses),
        by_state=dict(Counter(s.state for s in statuses)),
        rows_done=sum(s.rows_done for s in statuses),
        rows_total=sum(s.rows_total for s in statuses),
        rows_per_s=sum(s.rows_per_s for s in active),
        cost_usd=sum(s.cost_usd for s in statuses),
        slowest=tuple(ranked[:slowest]),
    )


class StatusLog:
    """A status line per active instance every `every` cloud seconds."""

    def __init__(
        self, table: SegmentTable, monitor: Monitor, quotes: JobQuotes, clock: CloudClock, *, every: float
    ) -> None:
        self._table, self._monitor, self._quotes, self._clock = table, monitor, quotes, clock
        self.every = every
        self.next_at = 0.0

    def due(self) -> bool:
        return self._clock.now() >= self.next_at

    def cycle(self, on_cycle: Callable[[list[SegmentStatus]], None] | None) -> None:
        """Once a cycle: the lines when they are due, and the rows to `on_cycle` (the live table)."""
        if not self.due() and on_cycle is None:
            return
        rows = statuses(self._table, self._monitor, self._quotes, self._clock)
        if self.due():
            self.write(rows)
        if on_cycle is not None:
            on_cycle(rows)

    def write(self, rows: list[SegmentStatus]) -> None:
        """A line per active instance; above `SUMMARY_ABOVE` segments, the job's summary and the slowest."""
        now = self._clock.now()
        self.next_at = now + self.every
        elapsed = clock_text(now - self._clock.origin)
        if len(rows) > SUMMARY_ABOVE:
            summary = summarize(rows)
            log.info("status t=%s %s", elapsed, summary.line())
            rows = list(summary.slowest)
        for s in rows:
            attempt = self._table.active(s.segment_id)
            if attempt is None:
                continue
            log.info(
                "status t=%s %s %s %s %s rows %d/%d %.2f rows/s attempts %d cost $%.4f",
                elapsed,
                s.segment_id,
                attempt.instance_id,
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
