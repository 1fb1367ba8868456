"""Progress of a matrix: live on a terminal, plain lines anywhere else.

On a terminal a bar over the runs and a table of the current run's segments redraw a few times a second
(rich). Elsewhere (CI, a pipe, a log file) one line per finished run (configuration, cost, interruptions,
notices, rows) and a heartbeat line every minute while a run is going (its rows and cost so far), so a
27-minute matrix is never silent; each run's `coordinator.log` keeps every status line.

Interruptions are attempts cut short (drained after a notice, or lost); notices are the warnings the
injector served. They differ when a notice reaches a worker that finishes its segment within the 2-minute
grace period (a notice, no interruption).

Usage::

    with ProgressView(total_runs=23) as view:
        view.start_run("hybrid-01", 1)
        view.update(statuses)            # the controller's on_cycle callback
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from coordinator.job.loop import SUMMARY_ABOVE, SegmentStatus, summarize
from coordinator.sim.settings import SimulatedRun

HEARTBEAT_SECONDS = 60.0


def status_table(title: str, statuses: list[SegmentStatus]) -> Table:
    """A row per segment; above `SUMMARY_ABOVE` segments, the slowest active ones under the job's summary."""
    shown, caption = statuses, ""
    if len(statuses) > SUMMARY_ABOVE:
        summary = summarize(statuses)
        shown, caption = list(summary.slowest), f"{summary.line()}; the slowest {len(summary.slowest)} shown"
    table = Table(title=title, expand=False)
    for name in ("segment", "state", "market", "rows done", "rows/s (cloud)", "attempts", "cost so far"):
        table.add_column(name, justify="right" if name not in ("segment", "state", "market") else "left")
    for s in shown:
        table.add_row(
            s.segment_id,
            s.state,
            s.market,
            f"{s.rows_done}/{s.rows_total}",
            f"{s.rows_per_s:.2f}",
            str(s.attempts),
            f"${s.cost_usd:.4f}",
        )
    total = sum(s.cost_usd for s in statuses)
    table.caption = caption or (
        f"{sum(s.rows_done for s in statuses)}/{sum(s.rows_total for s in statuses)} rows, ${total:.4f}"
    )
    return table


def finished_line(run: SimulatedRun, number: int, total: int) -> str:
    outcome = run.result.outcome
    cost = run.cost_usd
    cut_short = sum(a.end_reason in ("interrupted", "lost") for a in outcome.attempts)
    rows = run.result.merge.rows if run.result.merge else 0
    lag, unmodelled = run.pace.get("lag_share", 0.0), run.pace.get("unmodelled_share", 0.0)
    pace = f"workers {lag:.1%} behind their pace, {unmodelled:.1%} of the finished bills beyond the model" + (
        " (DISTORTED)" if run.pace.get("distorted") else ""
    )
    return (
        f"run {number}/{total} {run.name} ({run.configuration}) done: ${cost:.4f}, {cut_short} "
        f"interruption(s), {run.interruptions} notice(s), {rows} rows merged, "
        f"{outcome.segments_done}/{outcome.segments_total} segments, "
        f"{run.job_seconds / 60:.1f} cloud min, "
        f"{outcome.wall_seconds:.0f} s wall, {pace}"
    )


class ProgressView:
    def __init__(self, total_runs: int, console: Console | None = None, plain: TextIO | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.enabled = self.console.is_terminal
        self.plain = plain or sys.stdout  # where the lines go when there is no terminal to draw on
        self.total_runs = total_runs
        self.number = 0
        self.last_line = time.monotonic()
        self.bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()
        )
        self.task = self.bar.add_task("runs", total=total_runs)
        self.title = ""
        self.live = Live(self.bar, console=self.console, refresh_per_second=4) if self.enabled else None

    def start_run(self, name: str, number: int) -> None:
        self.title, self.number = name, number
        self.bar.update(self.task, completed=number - 1, description=f"run {name}")

    def update(self, statuses: list[SegmentStatus]) -> None:
        if self.live is not None:
            self.live.update(Group(self.bar, status_table(self.title, statuses)))
        elif time.monotonic() - self.last_line >= HEARTBEAT_SECONDS:
            rows = sum(s.rows_done for s in statuses)
            total = sum(s.rows_total for s in statuses)
            cost = sum(s.cost_usd for s in statuses)
            self._line(
                f"run {self.number}/{self.total_runs} {self.title}: {rows}/{total} rows, ${cost:.2f} so far"
            )

    def finish_run(self, run: SimulatedRun) -> None:
        if self.live is None:
            self._line(finished_line(run, self.number, self.total_runs))

    def _line(self, text: str) -> None:
        print(text, file=self.plain, flush=True)
        self.last_line = time.monotonic()

    def __enter__(self) -> ProgressView:
        if self.live is not None:
            self.live.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self.live is not None:
            self.bar.update(self.task, completed=self.bar.tasks[0].total)
            self.live.stop()
