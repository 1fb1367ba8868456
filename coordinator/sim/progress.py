"""Live progress on a terminal: a bar over the runs and a table of the current run's segments (rich).

On a terminal the table redraws a few times a second; elsewhere (CI, a pipe) nothing is drawn and the
status lines in each run's `coordinator.log` are the record.

Usage::

    with ProgressView(total_runs=23) as view:
        view.start_run("hybrid-01", 1)
        view.update(statuses)            # the controller's on_cycle callback
"""

from __future__ import annotations

from types import TracebackType

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from coordinator.job.status import SegmentStatus


def status_table(title: str, statuses: list[SegmentStatus]) -> Table:
    table = Table(title=title, expand=False)
    for name in ("segment", "state", "market", "rows done", "rows/s (cloud)", "attempts", "cost so far"):
        table.add_column(name, justify="right" if name not in ("segment", "state", "market") else "left")
    for s in statuses:
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
    table.caption = (
        f"{sum(s.rows_done for s in statuses)}/{sum(s.rows_total for s in statuses)} rows, ${total:.4f}"
    )
    return table


class ProgressView:
    def __init__(self, total_runs: int, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.enabled = self.console.is_terminal
        self.bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()
        )
        self.task = self.bar.add_task("runs", total=total_runs)
        self.title = ""
        self.live = Live(self.bar, console=self.console, refresh_per_second=4) if self.enabled else None

    def start_run(self, name: str, number: int) -> None:
        self.title = name
        self.bar.update(self.task, completed=number - 1, description=f"run {name}")

    def update(self, statuses: list[SegmentStatus]) -> None:
        if self.live is not None:
            self.live.update(Group(self.bar, status_table(self.title, statuses)))

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
