"""The budget guard: no operation may start if its estimate could break a hard spending ceiling.

Usage::

    guard = BudgetGuard(ceiling_usd=5.0, log_path=Path("runs/budget/spend_log.jsonl"))
    guard.authorize("lab02-tp-spinup", 3.00)      # raises BudgetGuardExceeded if it could pass the ceiling
    guard.record_actual("lab02-tp-spinup", 2.41)  # after the launch, run, terminate: what it really cost

What counts against the ceiling: every recorded actual, plus the estimate of every operation that was
authorized and has no actual yet (a *reservation*). So two launches cannot both pass on the same dollars,
and an operation that crashed before recording keeps its estimate reserved until someone records it.
`record_actual` settles the oldest open reservation with the same label; an actual with no reservation
still counts (money spent is money spent). An actual above its estimate is recorded as it is.

The log is append-only JSONL, one line per event, never edited, never truncated:

    {"ts": "2026-12-02T12:00:00.123456+00:00", "op_label": "...", "estimated": 3.0, "currency": "USD"}
    {"ts": "...", "op_label": "...", "estimated": 3.0, "actual": 2.41, "currency": "USD"}

The log (`spend_log.py`) is locked for every read-check-append, so processes and threads that authorize at
the same time are serialised and cannot pass the ceiling together; each record is written whole or not at
all, and each guard reads the lines appended since its last look (`SpendTally`). A line that does not parse
stops the guard naming the file and line; the guard never repairs the log by itself (`spotbatch budget
repair` cuts only a torn line it began, keeping a copy).

An operation is authorized once: `authorize_once(label, ...)` does nothing if `label` holds an open
reservation (a coordinator restarted between authorizing and recording does not reserve a launch twice).

Errors: `BudgetGuardExceeded` (would pass the ceiling: do not retry), `BudgetConfigError` (a bad ceiling,
estimate, currency or log line).
"""

from __future__ import annotations

import json
import math
import os
from datetime import UTC, datetime
from pathlib import Path

from coordinator.cost.spend_log import Mark, RepairResult, SpendLog
from coordinator.cost.spend_tally import BudgetState, SpendEntry, SpendTally
from coordinator.errors import BudgetConfigError, BudgetGuardExceeded

DEFAULT_CEILING_USD = 5.0  # docs/budget/budget.md: $3 for the GPU run, $2 buffer
CEILING_ENV = "LYNX_CLOUD_BUDGET_USD"
TEST_MODE_ENV = "BUDGET_GUARD_TEST_MODE"
CURRENCY = "USD"
TOLERANCE_USD = 1e-9  # float sums of cents must not refuse an estimate that lands exactly on the ceiling


def parse_amount(value: object, what: str) -> float:
    """A finite number >= 0, or a `BudgetConfigError` that quotes the value.

    Text is parsed (it comes from flags and the environment); truth values and bytes are not amounts,
    whatever `float()` makes of them (`True`, `numpy.bool_(True)` and `b"1"` would all be $1)."""
    if isinstance(value, bool | bytes | bytearray | memoryview) or type(value).__name__ in ("bool", "bool_"):
        raise BudgetConfigError(f"{what} must be a number of dollars, got {value!r}")
    try:
        amount = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise BudgetConfigError(f"{what} must be a number of dollars, got {shown}") from None
    if not math.isfinite(amount) or amount < 0:
        raise BudgetConfigError(f"{what} must be a finite number >= 0, got {value!r}")
    return amount


def _parse_line(where: str, line: str, currency: str) -> SpendEntry:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise BudgetConfigError(
            f"{where}: corrupt line ({error.msg}): {line[:120]!r}. The guard never rewrites the log: move "
            "the file aside or fix that line by hand, then rerun"
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


def test_mode_requested() -> bool:
    """`BUDGET_GUARD_TEST_MODE=1` in the environment: the simulator honours it (and says so); every command
    that can spend money refuses to start with it (`commands/options.budget_guard`), so a value left in a
    shell never turns the persistent guard off for a real run."""
    return os.environ.get(TEST_MODE_ENV) == "1"


class BudgetGuard:
    def __init__(self, ceiling_usd: float, log_path: Path, *, in_memory: bool = False) -> None:
        """`in_memory`: no spend log on disk (tests, and the simulator in test mode); never from the
        environment by itself."""
        override = os.environ.get(CEILING_ENV)
        if override is not None:
            self.ceiling_usd = parse_amount(override.strip(), f"${CEILING_ENV}")
        else:
            self.ceiling_usd = parse_amount(ceiling_usd, "budget ceiling")
        self.log_path = Path(log_path)
        self.currency = CURRENCY
        self.in_memory = in_memory
        self.log = SpendLog(self.log_path, in_memory=self.in_memory)
        self._tally, self._mark = SpendTally(), Mark()

    def _tally_now(self) -> SpendTally:
        """Inside `locked()`: the tally with the lines appended since the last look (the whole log when it
        was replaced or cut). A line that does not parse stops it before any line of the look counts."""
        lines, mark = self.log.appended(self._mark)
        first = 1 if mark.restart else self._mark.lines + 1
        numbered = enumerate(lines, start=first)
        entries = [
            _parse_line(f"{self.log.where}:{n}", line, self.currency) for n, line in numbered if line.strip()
        ]
        tally = SpendTally() if mark.restart else self._tally
        for entry in entries:
            tally.add(entry)
        self._tally, self._mark = tally, mark
        return tally

    def _append(self, entry: SpendEntry) -> None:
        self.log.append(entry.to_json(), repr(entry.op_label))

    def _check_currency(self, currency: str) -> None:
        if currency != self.currency:
            raise BudgetConfigError(f"currency {currency!r} refused: this guard counts {self.currency}")

    @staticmethod
    def _check_label(op_label: str) -> None:
        if not isinstance(op_label, str) or not op_label.strip() or "\n" in op_label:
            raise BudgetConfigError(f"op_label must be a non-empty one-line string, got {op_label!r}")

    # -- the interface ---------------------------------------------------------------------------------------

    def authorize(self, op_label: str, estimated_usd: float, *, currency: str = CURRENCY) -> None:
        """Reserve `estimated_usd` for `op_label`; `BudgetGuardExceeded` if it could pass the ceiling."""
        self._authorize(op_label, estimated_usd, currency, once=False)

    def authorize_once(self, op_label: str, estimated_usd: float, *, currency: str = CURRENCY) -> bool:
        """As `authorize`, unless `op_label` already holds an open reservation: then nothing (False)."""
        return self._authorize(op_label, estimated_usd, currency, once=True)

    def _authorize(self, op_label: str, estimated_usd: float, currency: str, *, once: bool) -> bool:
        self._check_label(op_label)
        self._check_currency(currency)
        estimate = parse_amount(estimated_usd, f"estimate for {op_label!r}")
        with self.log.locked():
            tally = self._tally_now()
            if once and tally.reservations.get(op_label):
                return False
            self._refuse_if_over(*tally.committed(), op_label, estimate)
            self._append(SpendEntry(_now(), op_label, estimate, None, self.currency))
            return True

    def check(self, op_label: str, estimated_usd: float) -> None:
        """Raise as `authorize` would, but reserve nothing and write nothing."""
        self._check_label(op_label)
        state = self.state()
        self._refuse_if_over(state.spent, state.reserved, op_label, parse_amount(estimated_usd, "estimate"))

    def _refuse_if_over(self, spent: float, reserved: float, op_label: str, estimate: float) -> None:
        committed = spent + reserved
        if committed + estimate > self.ceiling_usd + TOLERANCE_USD:
            raise BudgetGuardExceeded(
                f"{op_label!r} refused: estimate ${estimate:.2f} + spent ${spent:.2f} + reserved "
                f"${reserved:.2f} = ${committed + estimate:.2f} would pass the ceiling "
                f"${self.ceiling_usd:.2f} (remaining ${self.ceiling_usd - committed:.2f})"
            )

    def record_actual(self, op_label: str, actual_usd: float, *, currency: str = CURRENCY) -> None:
        """Append what `op_label` really cost; settles its oldest open reservation."""
        self._check_label(op_label)
        self._check_currency(currency)
        actual = parse_amount(actual_usd, f"actual for {op_label!r}")
        with self.log.locked():
            reservations = self._tally_now().reservations.get(op_label, [])
            estimated = reservations[0].estimate if reservations else None
            self._append(SpendEntry(_now(), op_label, estimated, actual, self.currency))

    def state(self) -> BudgetState:
        with self.log.locked():
            return self._tally_now().state()

    def repair(self) -> RepairResult:
        """Remove a torn last line the guard began (`SpendLog.repair`); a corrupt line elsewhere is
        reported, never "repaired"."""
        with self.log.locked():
            result = self.log.repair()
            self._mark = Mark()  # read what is left whole: it parses
            self._tally_now()
            return result

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
