"""A worker that stands in for an instance type runs at that type's speed, not the host's.

The simulator runs ten instances on two cores: left alone, a worker would run faster when few others run
and slower when the host is busy, and its billed time would measure the host, not the policy. With a pace
(rows per second of the instance type it stands for), the worker sleeps after each batch until its rows
match the pace, and measures how far it fell *behind* the pace when the host could not keep up: that lag,
as a share of the planned time, is what marks a run as distorted.

On a real instance there is no pace: the hardware is the instance.

Usage::

    pace = Pace(rows_per_second=120.0)
    ...after each batch:
    pace.after(rows_since_start, stop.wait)     # sleeps (or returns early on a stop)
    pace.lag_share                                # 0.0 when the host kept up
"""

from __future__ import annotations

import time
from collections.abc import Callable


class Pace:
    def __init__(self, rows_per_second: float, clock: Callable[[], float] = time.monotonic) -> None:
        if not rows_per_second > 0:
            raise ValueError(f"pace must be a positive number of rows per second, got {rows_per_second!r}")
        self.rows_per_second = rows_per_second
        self._clock = clock
        self._started = clock()
        self._behind = 0.0  # seconds the host added beyond the pace, summed over batches
        self._planned = 0.0

    def after(self, rows: int, wait: Callable[[float], object]) -> None:
        """Called after `rows` rows (since the start) are done: wait until the pace allows the next batch."""
        planned = rows / self.rows_per_second
        elapsed = self._clock() - self._started
        if elapsed > planned + self._behind:
            self._behind = elapsed - planned  # the host was slower than the instance: that time is lag
        else:
            wait(planned + self._behind - elapsed)
        self._planned = planned

    @property
    def lag_seconds(self) -> float:
        return self._behind

    @property
    def lag_share(self) -> float:
        """Lag as a share of the time the rows should have taken (0.05: 5% behind the pace)."""
        return self._behind / self._planned if self._planned > 0 else 0.0
