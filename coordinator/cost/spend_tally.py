"""The spend log's records and what they add up to: the entries, each label's totals, the open
reservations, and the tally a guard keeps line by line (`budget.py` reads, checks and appends).

Usage::

    tally = SpendTally()
    tally.add(SpendEntry(ts, "job-1/seg-0001/1", 0.05, None, "USD"))   # a reservation
    spent, reserved = tally.committed()
    tally.state()                                                       # BudgetState, by label
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class SpendEntry:
    ts: str
    op_label: str
    estimated: float | None
    actual: float | None
    currency: str

    def to_json(self) -> str:
        record: dict[str, Any] = {"ts": self.ts, "op_label": self.op_label, "estimated": self.estimated}
        if self.actual is not None:
            record["actual"] = self.actual
        record["currency"] = self.currency
        return json.dumps(record)


@dataclass(frozen=True, slots=True)
class LabelTotals:
    spent: float
    reserved: float


@dataclass(frozen=True, slots=True)
class Reservation:
    estimate: float
    ts: str  # when it was authorized (ISO 8601, UTC)

    def age_seconds(self, now: datetime | None = None) -> float | None:
        try:
            then = datetime.fromisoformat(self.ts)
        except ValueError:
            return None
        return ((now or datetime.now(UTC)) - then).total_seconds()


@dataclass(frozen=True, slots=True)
class BudgetState:
    """Totals derived from the log at one instant."""

    spent: float
    reserved: float
    by_label: dict[str, LabelTotals]
    reservations: dict[str, list[Reservation]]  # label -> reservations without an actual, oldest first

    @property
    def open_reservations(self) -> dict[str, list[float]]:
        return {label: [r.estimate for r in found] for label, found in self.reservations.items()}


class SpendTally:
    """The log's totals, kept line by line: a guard reads each line once (`SpendLog.appended`), not the
    whole log at each authorize (at 1,000 instances growing their reservations, most of a cycle's CPU)."""

    def __init__(self) -> None:
        self.reservations: dict[str, list[Reservation]] = defaultdict(list)
        self.spent_by_label: dict[str, float] = defaultdict(float)

    def add(self, entry: SpendEntry) -> None:
        if entry.actual is None:
            self.reservations[entry.op_label].append(Reservation(entry.estimated or 0.0, entry.ts))
            return
        self.spent_by_label[entry.op_label] += entry.actual
        if entry.estimated is not None and self.reservations[entry.op_label]:
            self.reservations[entry.op_label].pop(0)

    def committed(self) -> tuple[float, float]:
        """Spent and reserved, as `state()` sums them."""
        return sum(self.spent_by_label.values()), sum(
            r.estimate for v in self.reservations.values() for r in v
        )

    def state(self) -> BudgetState:
        reservations = self.reservations
        labels = sorted(set(self.spent_by_label) | {k for k, v in reservations.items() if v})
        by_label = {
            label: LabelTotals(
                self.spent_by_label.get(label, 0.0), sum(r.estimate for r in reservations.get(label, []))
            )
            for label in labels
        }
        spent, reserved = self.committed()
        open_ones = {k: list(v) for k, v in reservations.items() if v}
        return BudgetState(spent=spent, reserved=reserved, by_label=by_label, reservations=open_ones)
