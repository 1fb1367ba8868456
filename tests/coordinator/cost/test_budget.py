"""The budget guard: the ceiling, reservations, the append-only log, concurrency and bad input."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from coordinator.cost.budget import BudgetGuard
from coordinator.errors import BudgetConfigError, BudgetGuardExceeded
from tests.host_load import scaled


@pytest.fixture(autouse=True)
def no_budget_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LYNX_CLOUD_BUDGET_USD", raising=False)
    monkeypatch.delenv("BUDGET_GUARD_TEST_MODE", raising=False)


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "spend_log.jsonl"


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_five_dollar_example(log_path: Path) -> None:
    guard = BudgetGuard(ceiling_usd=5.0, log_path=log_path)
    guard.authorize("lab02-tp-spinup", 3.00)
    with pytest.raises(BudgetGuardExceeded, match=r"'hypothetical-lab' refused: estimate \$10.00"):
        guard.authorize("hypothetical-lab", 10.00)
    assert guard.remaining == pytest.approx(2.00)
    assert [entry["op_label"] for entry in lines(log_path)] == ["lab02-tp-spinup"]  # the refusal logs nothing


def test_reservations_count_until_the_actual_is_recorded(log_path: Path) -> None:
    guard = BudgetGuard(5.0, log_path)
    guard.authorize("a", 3.00)
    with pytest.raises(BudgetGuardExceeded):
        guard.authorize("b", 2.50)  # 3.00 reserved + 2.50 > 5.00, though nothing is spent yet
    guard.record_actual("a", 1.25)
    assert guard.total_spent == pytest.approx(1.25)
    assert guard.remaining == pytest.approx(3.75)
    guard.authorize("b", 2.50)
    guard.authorize("c", 1.25)  # exactly on the ceiling: allowed
    with pytest.raises(BudgetGuardExceeded):
        guard.authorize("d", 0.01)
    assert lines(log_path)[1] == {
        "ts": lines(log_path)[1]["ts"],
        "op_label": "a",
        "estimated": 3.0,
        "actual": 1.25,
        "currency": "USD",
    }


def test_actual_without_reservation_and_actual_over_estimate_both_count(log_path: Path) -> None:
    guard = BudgetGuard(5.0, log_path)
    guard.record_actual("forgotten-box", 0.75)
    guard.authorize("run", 1.00)
    guard.record_actual("run", 1.60)
    state = guard.state()
    assert state.spent == pytest.approx(2.35) and state.reserved == 0
    assert state.by_label["run"].spent == pytest.approx(1.60)


def test_log_is_only_ever_appended(log_path: Path) -> None:
    guard = BudgetGuard(5.0, log_path)
    guard.authorize("a", 1.0)
    before = log_path.read_bytes()
    guard.record_actual("a", 0.5)
    with pytest.raises(BudgetGuardExceeded):
        guard.authorize("b", 99.0)
    after = log_path.read_bytes()
    assert after.startswith(before) and len(after) > len(before)


def test_env_overrides_the_ceiling_and_an_in_memory_guard_stays_in_memory(
    log_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LYNX_CLOUD_BUDGET_USD", "20")
    guard = BudgetGuard(5.0, log_path, in_memory=True)
    guard.authorize("bigger", 15.0)
    assert guard.remaining == pytest.approx(5.0)
    assert not log_path.exists()


@pytest.mark.parametrize("value", ["abc", "-5", "nan", "inf", "-inf", ""])
def test_bad_ceiling_from_env_is_named(value: str, log_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LYNX_CLOUD_BUDGET_USD", value)
    with pytest.raises(BudgetConfigError, match=r"\$LYNX_CLOUD_BUDGET_USD must be a"):
        BudgetGuard(5.0, log_path)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0, True])
def test_bad_ceiling_argument(value: float, log_path: Path) -> None:
    with pytest.raises(BudgetConfigError, match="budget ceiling must be a"):
        BudgetGuard(value, log_path)


@pytest.mark.parametrize("estimate", [-0.01, float("nan"), float("inf"), "abc"])
def test_bad_estimates_are_refused(estimate: float, log_path: Path) -> None:
    guard = BudgetGuard(5.0, log_path)
    with pytest.raises(
        BudgetConfigError, match=r"estimate for 'x' must be a (finite number >= 0|number of dollars)"
    ):
        guard.authorize("x", estimate)


def test_wrong_currency_is_refused(log_path: Path) -> None:
    guard = BudgetGuard(5.0, log_path)
    with pytest.raises(BudgetConfigError, match="currency 'EUR' refused"):
        guard.authorize("x", 1.0, currency="EUR")
    log_path.write_text('{"ts": "t", "op_label": "y", "estimated": 1.0, "currency": "EUR"}\n')
    with pytest.raises(
        BudgetConfigError, match=r"spend_log.jsonl:1: currency 'EUR', but this guard counts USD"
    ):
        guard.authorize("x", 1.0)


def test_truncated_last_line_stops_the_guard_and_is_left_alone(log_path: Path) -> None:
    guard = BudgetGuard(5.0, log_path)
    guard.authorize("a", 1.0)
    with open(log_path, "a") as log:
        log.write('{"ts": "2026-12-02T12:00:00", "op_label": "b", "estim')  # a crash mid-write
    before = log_path.read_bytes()
    with pytest.raises(BudgetConfigError, match=r"spend_log.jsonl:2: truncated line"):
        guard.authorize("c", 1.0)
    with pytest.raises(BudgetConfigError, match="truncated line"):
        guard.record_actual("a", 1.0)
    assert log_path.read_bytes() == before


def test_corrupt_line_in_the_middle_is_named(log_path: Path) -> None:
    log_path.write_text(
        '{"ts": "t", "op_label": "a", "estimated": 1.0, "currency": "USD"}\n'
        "not json at all\n"
        '{"ts": "t", "op_label": "a", "estimated": -3, "actual": 1.0, "currency": "USD"}\n'
    )
    with pytest.raises(BudgetConfigError, match=r"spend_log.jsonl:2: corrupt line"):
        BudgetGuard(5.0, log_path).authorize("x", 1.0)
    log_path.write_text('{"ts": "t", "op_label": "a", "estimated": -3, "currency": "USD"}\n')
    with pytest.raises(BudgetConfigError, match=r"spend_log.jsonl:1: estimated must be a finite number"):
        BudgetGuard(5.0, log_path).authorize("x", 1.0)


def _authorize_in_child(log_path: str, index: int, results: multiprocessing.Queue[str]) -> None:
    guard = BudgetGuard(5.0, Path(log_path))
    try:
        guard.authorize(f"worker-{index}", 1.0)
        results.put("ok")
    except BudgetGuardExceeded:
        results.put("refused")


def test_concurrent_processes_never_pass_the_ceiling_together(log_path: Path) -> None:
    """12 processes ask for $1 each under a $5 ceiling at once: exactly 5 pass."""
    context = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue[str] = context.Queue()
    start = context.Barrier(12)
    processes = [
        context.Process(target=_authorize_after_barrier, args=(str(log_path), i, results, start))
        for i in range(12)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
        assert process.exitcode == 0
    outcomes = sorted(results.get(timeout=scaled(5)) for _ in processes)
    assert outcomes.count("ok") == 5 and outcomes.count("refused") == 7
    assert len(lines(log_path)) == 5
    assert BudgetGuard(5.0, log_path).remaining == pytest.approx(0.0)


def _authorize_after_barrier(
    log_path: str, index: int, results: multiprocessing.Queue[str], start: multiprocessing.synchronize.Barrier
) -> None:
    start.wait()
    _authorize_in_child(log_path, index, results)


def test_the_test_mode_variable_alone_never_turns_the_spend_log_off(
    log_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUDGET_GUARD_TEST_MODE", "1")
    BudgetGuard(5.0, log_path).authorize("real", 1.0)
    assert log_path.exists()
