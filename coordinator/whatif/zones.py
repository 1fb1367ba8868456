"""Several zones' spot availability over the same ticks, for failover between the zones of a region.

A spot instance holds one zone and is reclaimed when that zone goes unavailable, whatever the others have.
A spot launch takes a zone available at that tick (a zone that refused capacity is found unavailable and
skipped), by `choice`:

- "steadiest" (default): the zone that had capacity for the largest share of the last `LOOKBACK_TICKS`
  ticks, what a fleet learns from its own interruptions and the zones' placement scores; ties go to
  the order given. `history` (the ticks before the window, per zone) lets a window's first launch
  use it too; a tick's own look-back never includes that tick or later ones.
- "first": the first zone in the order given (by name), as the fleet's subnet order does without scores.

One zone is the engine's plain availability sequence, and gives the same outcome.

Usage::

    zones = ZoneSet.of({"us-east-1a": trace_a.available, "us-east-1c": trace_c.available})
    outcome = simulate_job(policy, job, zones, gap_seconds=195)
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from coordinator.errors import WhatIfError

LOOKBACK_TICKS = 111  # 6 hours of the traces' 195-s ticks
CHOICES = ("steadiest", "first")


@dataclass(frozen=True, slots=True)
class ZoneSet:
    names: tuple[str, ...]
    columns: tuple[Sequence[bool], ...]  # one availability sequence per zone, all of one length
    any_up: Sequence[bool]  # per tick: some zone has spot capacity
    choice: str = "steadiest"
    # per zone: ticks with capacity before each tick of history + window (prefix sums), and history's length
    up_before: tuple[tuple[int, ...], ...] = ()
    history_ticks: int = 0

    @classmethod
    def of(
        cls,
        zones: Mapping[str, Sequence[bool]],
        *,
        choice: str = "steadiest",
        history: Mapping[str, Sequence[bool]] | None = None,
    ) -> ZoneSet:
        if not zones:
            raise WhatIfError("a zone set needs at least one zone")
        if choice not in CHOICES:
            raise WhatIfError(f"zone choice {choice!r}: expected one of {', '.join(CHOICES)}")
        lengths = {name: len(column) for name, column in zones.items()}
        if len(set(lengths.values())) != 1:
            raise WhatIfError(f"the zones' availability must cover the same ticks, got lengths {lengths}")
        past = {name: tuple(history.get(name, ())) for name in zones} if history else {n: () for n in zones}
        if len({len(p) for p in past.values()}) != 1:
            raise WhatIfError(f"the zones' history must cover the same ticks, got {past.keys()}")
        columns = tuple(zones.values())
        any_up = columns[0] if len(columns) == 1 else tuple(any(tick) for tick in zip(*columns, strict=True))
        up_before = tuple(
            tuple(itertools.accumulate(map(int, (*past[name], *column)), initial=0))
            for name, column in zones.items()
        )
        history_ticks = len(next(iter(past.values())))
        return cls(tuple(zones), columns, any_up, choice, up_before, history_ticks)

    @classmethod
    def one(cls, available: Sequence[bool]) -> ZoneSet:
        return cls(("zone",), (available,), available)

    def pick(self, tick: int, *, unless: Sequence[bool] | None = None) -> int | None:
        """The zone a spot launch at `tick` lands in, not the one whose column is `unless` (the zone being
        left); None when no zone has capacity."""
        up = [z for z, column in enumerate(self.columns) if column[tick] and column is not unless]
        if not up or self.choice == "first" or not self.up_before:
            return up[0] if up else None
        return max(up, key=lambda z: (self.steadiness(z, tick), -z))

    def steadiness(self, zone: int, tick: int) -> float:
        """The zone's share of ticks with capacity over the look-back before `tick` (0.5 with none)."""
        end = self.history_ticks + tick
        start = max(0, end - LOOKBACK_TICKS)
        if end == start:
            return 0.5
        ups = self.up_before[zone]
        return (ups[end] - ups[start]) / (end - start)
