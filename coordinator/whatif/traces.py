"""Spot availability over time: the trace file format and the two synthetic models built on it.

A trace is `{"metadata": {"gap_seconds": 195}, "data": [1, 0, ...]}`: one value per tick. Which value means
"a spot instance can be held" is not in the file, so the caller says it (`one_means`): the SkyPilot traces
(Wu et al., NSDI 2024) use 1 = available. The live simulator replays a trace through the interruption
injector; the what-if mode steps through it tick by tick.

Synthetic availability, for when no trace of the zone exists:

- `random_availability(probability, interval, gap, ticks, rng)`: the simulator's random model (a spot
  instance is reclaimed with `probability` per `interval`); a reclaimed tick is unavailable, the next one
  available again (the relaunch finds capacity).
- `RunLengths.of(trace)` + `.sample(ticks, rng)`: per-zone run-length statistics; available and unavailable
  runs drawn from the trace's own runs (a bootstrap of the alternating process), which keeps their heavy
  tail without replaying the same hours.

Usage::

    trace = AvailabilityTrace.load(Path("us-west-2a_v100_1.json"), one_means="available")
    runs = RunLengths.of(trace)                        # runs.available_hours(): mean, median, longest
    synthetic = runs.sample(ticks=500, rng=random.Random(0))
"""

from __future__ import annotations

import itertools
import json
import random
import statistics
from dataclasses import dataclass
from pathlib import Path

from coordinator.errors import TraceError


@dataclass(frozen=True, slots=True)
class AvailabilityTrace:
    name: str
    gap_seconds: float
    available: tuple[bool, ...]

    @classmethod
    def load(cls, path: Path, *, one_means: str = "available") -> AvailabilityTrace:
        """`one_means`: "available" (the SkyPilot traces) or "preempted"."""
        if one_means not in ("available", "preempted"):
            raise TraceError(f"one_means must be 'available' or 'preempted', got {one_means!r}")
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            gap = float(raw["metadata"]["gap_seconds"])
            values = raw["data"]
        except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            raise TraceError(f"{path}: not a trace {{metadata.gap_seconds, data[]}} ({error})") from None
        if not gap > 0:
            raise TraceError(f"{path}: metadata.gap_seconds must be positive, got {gap}")
        if not isinstance(values, list) or not values or any(not _zero_or_one(v) for v in values):
            bad = (
                next((v for v in values if not _zero_or_one(v)), None) if isinstance(values, list) else values
            )
            raise TraceError(f"{path}: data must be a non-empty list of 0/1, found {bad!r}")
        flip = one_means == "preempted"
        return cls(path.stem, gap, tuple(bool(v) != flip for v in values))

    @property
    def hours(self) -> float:
        return len(self.available) * self.gap_seconds / 3600

    def window(self, offset: int, ticks: int) -> tuple[bool, ...]:
        """`ticks` values from `offset`; the trace must hold them (no wrapping: its end is not its start)."""
        if offset < 0 or offset + ticks > len(self.available):
            raise TraceError(
                f"trace {self.name}: ticks {offset}..{offset + ticks} are outside its {len(self.available)} "
                "ticks"
            )
        return self.available[offset : offset + ticks]


def random_availability(
    probability: float, interval: float, gap: float, ticks: int, rng: random.Random
) -> tuple[bool, ...]:
    """The random model as availability: each tick is a reclaim with the per-tick share of `probability`."""
    if not 0.0 <= probability <= 1.0:
        raise TraceError(f"interruption probability must be in [0, 1], got {probability}")
    if not interval > 0 or not gap > 0:
        raise TraceError(f"interval and tick must be positive, got {interval} and {gap}")
    per_tick = 1.0 - (1.0 - probability) ** (gap / interval)
    return tuple(rng.random() >= per_tick for _ in range(ticks))


def _runs(values: tuple[bool, ...]) -> tuple[list[int], list[int]]:
    available: list[int] = []
    unavailable: list[int] = []
    length = 1
    for before, value in itertools.pairwise(values):
        if value == before:
            length += 1
            continue
        (available if before else unavailable).append(length)
        length = 1
    (available if values[-1] else unavailable).append(length)
    return available, unavailable


@dataclass(frozen=True, slots=True)
class RunLengths:
    """A zone's available and unavailable run lengths, in ticks."""

    gap_seconds: float
    available: tuple[int, ...]
    unavailable: tuple[int, ...]

    @classmethod
    def of(cls, trace: AvailabilityTrace) -> RunLengths:
        available, unavailable = _runs(trace.available)
        if not available:
            raise TraceError(f"trace {trace.name}: spot is never available, there are no runs to draw from")
        return cls(trace.gap_seconds, tuple(available), tuple(unavailable or [0]))

    def available_hours(self) -> dict[str, float]:
        hours = [n * self.gap_seconds / 3600 for n in self.available]
        return {"mean": statistics.fmean(hours), "median": statistics.median(hours), "longest": max(hours)}

    def sample(self, ticks: int, rng: random.Random) -> tuple[bool, ...]:
        """An alternating sequence of drawn runs, starting in either state as often as the zone is in it."""
        share = sum(self.available) / (sum(self.available) + sum(self.unavailable))
        state = rng.random() < share
        values: list[bool] = []
        while len(values) < ticks:
            length = rng.choice(self.available if state else self.unavailable)
            values.extend([state] * length)
            state = not state
        return tuple(values[:ticks])


def _zero_or_one(value: object) -> bool:
    """0 or 1 as JSON integers: `true`/`false` (equal to 1 and 0 in Python) are not a trace's values."""
    return type(value) is int and value in (0, 1)
