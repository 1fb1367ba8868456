"""The budget guard: no operation may start if its estimate could break a hard spending ceiling.

Usage::

    guard = BudgetGuard(ceiling_usd=5.0, log_path=Path("runs/budget/spend_log.jsonl"))
    guard.authorize("lab02-tp-spinup", 3.00)      # raises BudgetGuardExceeded if it could pass the ceiling
    ...                                            # launch, run, terminate
    guard.record_actual("lab02-tp-spinup", 2.41)  # what it really cost

What counts against the ceiling: every recorded actual, plus the estimate of every operation that was
authorized and has no actual yet (a *reservation*). So two launches cannot both pass on the same dollars,
and an operation that crashed before recording keeps its estimate reserved until someone records it.
`record_actual` settles the oldest open reservation with the same label; an actual with no reservation
still counts (money spent is money spent). An actual above its estimate is recorded as it is.

The log is append-only JSONL, one line per event, never edited, never truncated:

    {"ts": "2026-12-02T12:00:00.123456+00:00", "op_label": "...", "estimated": 3.0, "currency": "USD"}
    {"ts": "...", "op_label": "...", "estimated": 3.0, "actual": 2.41, "currency": "USD"}

Every read-check-append runs under an exclusive `flock` on a lock file beside the log, so processes that
authorize at the same time are serialised and cannot pass the ceiling together. A line that does not parse
(a crash mid-write, a hand edit) stops the guard with an error naming the file and line; the guard never
repairs the log itself.

Environment: `LYNX_CLOUD_BUDGET_USD` overrides the constructor's ceiling; `BUDGET_GUARD_TEST_MODE=1`
keeps the log in memory (nothing on disk).

    SpotbatchError
    ├── BudgetGuardExceeded   the operation would pass the ceiling (do not retry)
    └── BudgetConfigError     a bad ceiling, estimate, currency or log line
"""

from __future__ import annotations

import fcntl
import json
import math
import os
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from coordinator.errors import BudgetConfigError, BudgetGuardExceeded

DEFAULT_CEILING_USD = 5.0  # docs/budget/budget.md: $3 for the GPU run, $2 buffer
CEILING_ENV = "LYNX_CLOUD_BUDGET_USD"
TEST_MODE_ENV = "BUDGET_GUARD_TEST_MODE"
CURRENCY = "USD"
TOLERANCE_USD = 1e-9  # float sums of cents must not refuse an estimate that lands exactly on the ceiling


def parse_amount(value: object, what: str) -> float:
    """A finite number >= 0, or a `BudgetConfigError` that quotes the value."""
    if isinstance(value, bool):
        raise BudgetConfigError(f"{what} must be a number of dollars, got {value!r}")
    try:
        amount = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise BudgetConfigError(f"{what} must be a number of dollars, got {value!r}") from None
    if not math.isfinite(amount) or amount < 0:
        raise BudgetConfigError(f"{what} must be a finite number >= 0, got {value!r}")
    return amount


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
class BudgetState:
    """Totals derived from the log at one instant."""

    spent: float
    reserved: float
    by_label: dict[str, LabelTotals]
    open_reservations: dict[str, list[float]]  # label -> estimates without an actual, oldest first


def _parse_line(where: str, line: str, currency: str) -> SpendEntry:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise BudgetConfigError(
            f"{where}: corrupt line ({error.msg}): {line[:120]!r}. The guard never rewrites the log: move "
            "the "
            "file aside or fix that line by hand, then rerun"
        ) from None
    if not isinstance(record, dict) or not isinstance(record.get("op_label"), str):
        raise BudgetConfigError(f"{where}: expected an object with an op_label, got {line[:120]!r}")
    if record.get("currency") != currency:
        raise BudgetConfigError(
            f"{where}: currency {record.get('currency')!r}, but this guard counts {currency}"
        )
    estimated = record.get("estimated")
    actual = record.get("actual")
    return SpendEntry(
        ts=str(record.get("ts", "")),
        op_label=record["op_label"],
        estimated=None if estimated is None else parse_amount(estimated, f"{where}: estimated"),
        actual=None if actual is None else parse_amount(actual, f"{where}: actual"),
        currency=currency,
    )


def summarize(entries: list[SpendEntry]) -> BudgetState:
    open_reservations: dict[str, list[float]] = defaultdict(list)
    spent_by_label: dict[str, float] = defaultdict(float)
    for entry in entries:
        if entry.actual is None:
            open_reservations[entry.op_label].append(entry.estimated or 0.0)
        else:
            spent_by_label[entry.op_label] += entry.actual
            if entry.estimated is not None and open_reservations[entry.op_label]:
                open_reservations[entry.op_label].pop(0)
    labels = sorted(set(spent_by_label) | {k for k, v in open_reservations.items() if v})
    by_label = {
        label: LabelTotals(spent_by_label.get(label, 0.0), sum(open_reservations.get(label, [])))
        for label in labels
    }
    return BudgetState(
        spent=sum(spent_by_label.values()),
        reserved=sum(sum(v) for v in open_reservations.values()),
        by_label=by_label,
        open_reservations={k: v for k, v in open_reservations.items() if v},
    )


class BudgetGuard:
    def __init__(self, ceiling_usd: float, log_path: Path) -> None:
        override = os.environ.get(CEILING_ENV)
        if override is not None:
            self.ceiling_usd = parse_amount(override.strip(), f"${CEILING_ENV}")
        else:
            self.ceiling_usd = parse_amount(ceiling_usd, "budget ceiling")
        self.log_path = Path(log_path)
        self.currency = CURRENCY
        self.in_memory = os.environ.get(TEST_MODE_ENV) == "1"
        self._memory: list[str] = []

    # -- the log -------------------------------------------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[None]:
        if self.in_memory:
            yield
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path.with_name(self.log_path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _read_lines(self) -> list[str]:
        if self.in_memory:
            return list(self._memory)
        try:
            raw = self.log_path.read_bytes()
        except FileNotFoundError:
            return []
        if raw and not raw.endswith(b"\n"):
            last, tail = raw.count(b"\n") + 1, raw.rsplit(b"\n", 1)[-1][:120]
            raise BudgetConfigError(
                f"{self.log_path}:{last}: truncated line (no newline: a crash mid-write?): {tail!r}. "
                "The guard never rewrites the log: fix that line by hand, then rerun"
            )
        try:
            return raw.decode("utf-8").splitlines()
        except UnicodeDecodeError as error:
            line = raw.count(b"\n", 0, error.start) + 1
            raise BudgetConfigError(f"{self.log_path}:{line}: not UTF-8") from None

    def _entries(self) -> list[SpendEntry]:
        where = "memory" if self.in_memory else str(self.log_path)
        return [
            _parse_line(f"{where}:{number}", line, self.currency)
            for number, line in enumerate(self._read_lines(), start=1)
            if line.strip()
        ]

    def _append(self, entry: SpendEntry) -> None:
        line = entry.to_json()
        if self.in_memory:
            self._memory.append(line)
            return
        with open(self.log_path, "a", encoding="utf-8") as log:
            log.write(line + "\n")
            log.flush()
            os.fsync(log.fileno())

    def _check_currency(self, currency: str) -> None:
        if currency != self.currency:
            raise BudgetConfigError(f"currency {currency!r} refused: this guard counts {self.currency}")

    @staticmethod
    def _check_label(op_label: str) -> None:
        if not isinstance(op_label, str) or not op_label.strip():
            raise BudgetConfigError(f"op_label must be a non-empty string, got {op_label!r}")

    # -- the interface ---------------------------------------------------------------------------------------

    def authorize(self, op_label: str, estimated_usd: float, *, currency: str = CURRENCY) -> None:
        """Reserve `estimated_usd` for `op_label`; `BudgetGuardExceeded` if it could pass the ceiling."""
        self._check_label(op_label)
        self._check_currency(currency)
        estimate = parse_amount(estimated_usd, f"estimate for {op_label!r}")
        with self._locked():
            self._refuse_if_over(summarize(self._entries()), op_label, estimate)
            self._append(SpendEntry(_now(), op_label, estimate, None, self.currency))

    def check(self, op_label: str, estimated_usd: float) -> None:
        """Raise as `authorize` would, but reserve nothing and write nothing."""
        self._check_label(op_label)
        self._refuse_if_over(self.state(), op_label, parse_amount(estimated_usd, "estimate"))

    def _refuse_if_over(self, state: BudgetState, op_label: str, estimate: float) -> None:
        committed = state.spent + state.reserved
        if committed + estimate > self.ceiling_usd + TOLERANCE_USD:
            raise BudgetGuardExceeded(
                f"{op_label!r} refused: estimate ${estimate:.2f} + spent ${state.spent:.2f} + reserved "
                f"${state.reserved:.2f} = ${committed + estimate:.2f} would pass the ceiling "
                f"${self.ceiling_usd:.2f} (remaining ${self.ceiling_usd - committed:.2f})"
            )

    def record_actual(self, op_label: str, actual_usd: float, *, currency: str = CURRENCY) -> None:
        """Append what `op_label` really cost; settles its oldest open reservation."""
        self._check_label(op_label)
        self._check_currency(currency)
        actual = parse_amount(actual_usd, f"actual for {op_label!r}")
        with self._locked():
            state = summarize(self._entries())
            reservations = state.open_reservations.get(op_label, [])
            estimated = reservations[0] if reservations else None
            self._append(SpendEntry(_now(), op_label, estimated, actual, self.currency))

    def state(self) -> BudgetState:
        with self._locked():
            return summarize(self._entries())

    @property
    def total_spent(self) -> float:
        return self.state().spent

    @property
    def remaining(self) -> float:
        """Ceiling less actuals and open reservations (what the next `authorize` may still use)."""
        state = self.state()
        return self.ceiling_usd - state.spent - state.reserved


def _now() -> str:
    return datetime.now(UTC).isoformat()
