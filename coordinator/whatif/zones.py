"""Several zones' spot availability over the same ticks, for failover between the zones of a region.

A spot instance holds one zone and is reclaimed when that zone goes unavailable, whatever the others have;
a spot launch takes the first zone available at that tick, in the order given (the fleet's order: a zone
that refused capacity is found unavailable and skipped). One zone is the engine's plain availability
sequence, and gives the same outcome.

Usage::

    zones = ZoneSet.of({"us-east-1a": trace_a.available, "us-east-1c": trace_c.available})
    outcome = simulate_job(policy, job, zones, gap_seconds=195)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from coordinator.errors import WhatIfError


@dataclass(frozen=True, slots=True)
class ZoneSet:
    names: tuple[str, ...]
    columns: tuple[Sequence[bool], ...]  # one availability sequence per zone, all of one length
    any_up: Sequence[bool]  # per tick: some zone has spot capacity

    @classmethod
    def of(cls, zones: Mapping[str, Sequence[bool]]) -> ZoneSet:
        if not zones:
            raise WhatIfError("a zone set needs at least one zone")
        lengths = {name: len(column) for name, column in zones.items()}
        if len(set(lengths.values())) != 1:
            raise WhatIfError(f"the zones' availability must cover the same ticks, got lengths {lengths}")
        columns = tuple(zones.values())
        any_up = columns[0] if len(columns) == 1 else tuple(any(tick) for tick in zip(*columns, strict=True))
        return cls(tuple(zones), columns, any_up)

    @classmethod
    def one(cls, available: Sequence[bool]) -> ZoneSet:
        return cls(("zone",), (available,), available)

    def first_up(self, tick: int) -> int:
        """The zone a spot launch at `tick` lands in (the caller has checked `any_up[tick]`)."""
        return next(z for z, column in enumerate(self.columns) if column[tick])
