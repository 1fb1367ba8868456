"""Simulator only: a worker that stands in for an instance type runs at that type's speed, not the host's.

The simulator runs ten instances on two cores: left alone, a worker would run faster when few others run
and slower when the host is busy, and its billed time would measure the host, not the policy. With a pace
(rows per second of the instance type it stands for) and a ready time (the end of the modelled launch:
pending, boot, image pull, model load), the worker waits for the ready time before its first row and,
after each batch, until its rows match the pace. A batch in hand is finished at the pace even when a stop
comes (a real worker finishes the batch it is computing before it drains). Where the host could not keep
up (the model loaded after the ready time, a batch took longer than the pace allows), the worker falls
*behind* the instance's schedule and runs without waiting until it is back on it: the instance it stands
for would have done those rows by then. What the host could not make up by the time the worker stops (its
lag at the end: the attempt billed longer, or checkpointed fewer rows, than the instance would have) is
what marks a run as distorted; the worst lag on the way is reported beside it.

On a real instance there is no pace: the hardware is the instance.

Usage::

    pace = Pace(rows_per_second=20.0, ready_at=time.time() + 3.0)
    pace.until_ready(stop.wait)                   # before the first row (returns early on a stop)
    pace.after(rows_since_start)                  # after each batch: sleeps until the pace allows more
    pace.report()                                 # {"lag_seconds": 0.0, "planned_seconds": 12.5, ...}
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


class Pace:
    def __init__(
        self,
        rows_per_second: float,
        *,
        ready_at: float | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        if not rows_per_second > 0:
            raise ValueError(f"pace must be a positive number of rows per second, got {rows_per_second!r}")
        self.rows_per_second = rows_per_second
        self._clock, self._sleep = clock, sleep
        self._start = ready_at if ready_at is not None else clock()
        self._behind = 0.0  # seconds behind the instance's schedule after the last batch
        self._worst = 0.0  # the most it was ever behind
        self._late_start = 0.0  # the worker was not ready by the end of its modelled launch
        self._planned = 0.0
        self._held = 0.0  # stalls: the instance it stands for was stuck as long

    def until_ready(self, wait: Callable[[float], object]) -> None:
        """Before the first row: wait for the end of the modelled launch. `wait` may return early (a stop)."""
        now = self._clock()
        if now < self._start:
            wait(self._start - now)
        else:
            self._behind = self._worst = self._late_start = now - self._start  # started later than the model

    def after(self, rows: int) -> None:
        """Called after `rows` rows (since the start) are done: sleep until the pace allows the next batch."""
        planned = rows / self.rows_per_second
        elapsed = self._clock() - self._start
        self._planned = planned
        if elapsed > planned:  # behind the instance's schedule: no wait, the next batch catches up
            self._behind = elapsed - planned
            self._worst = max(self._worst, self._behind)
        else:
            self._behind = 0.0
            self._sleep(planned - elapsed)

    def hold(self, seconds: float) -> None:
        """A stall: no rows for `seconds`, and the schedule moves on by as much (the instance it stands for
        was stuck too: the rows are not caught up afterwards)."""
        self._sleep(seconds)
        self._start += seconds
        self._held += seconds

    @property
    def lag_seconds(self) -> float:
        """Seconds behind the instance's schedule now (after the last batch)."""
        return self._behind

    @property
    def lag_share(self) -> float:
        """Lag as a share of the time the rows should have taken (0.05: 5% behind the pace)."""
        return self._behind / self._planned if self._planned > 0 else 0.0

    def report(self) -> dict[str, Any]:
        return {
            "rows_per_second": self.rows_per_second,
            "lag_seconds": round(self._behind, 3),
            "worst_lag_seconds": round(self._worst, 3),
            "late_start_seconds": round(self._late_start, 3),
            "planned_seconds": round(self._planned, 3),
            "held_seconds": round(self._held, 3),
        }

    def save(self, path: str) -> None:
        """Write `report()` to `path` (whole or not at all): the simulator reads it after the run."""
        if not path:
            return
        target = Path(path)
        partial = target.with_name(target.name + ".partial")
        partial.write_text(json.dumps(self.report()) + "\n", encoding="utf-8")
        os.replace(partial, target)
