"""The guard reads each line of the spend log once, and still sees what another guard (process) appended,
a log moved aside and a new one begun, a line changed before its mark, and a corrupt line (named by its
number, counted by no look until it is fixed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coordinator.cost.budget import BudgetGuard
from coordinator.errors import BudgetConfigError, BudgetGuardExceeded


def test_two_guards_on_one_log_see_each_others_lines(tmp_path: Path) -> None:
    log = tmp_path / "spend.jsonl"
    first, second = BudgetGuard(10.0, log), BudgetGuard(10.0, log)
    first.authorize("a", 4.0)
    second.authorize("b", 4.0)  # it reads a's line
    with pytest.raises(BudgetGuardExceeded, match=r"reserved \$8\.00"):
        first.authorize("c", 3.0)  # and the first reads b's
    first.record_actual("a", 1.0)
    assert second.state().spent == 1.0 and second.state().reserved == 4.0
    second.authorize("c", 3.0)
    for _ in range(50):  # many looks: each line counted once
        assert first.state().reserved == 7.0


def test_a_log_replaced_or_changed_is_read_whole_again(tmp_path: Path) -> None:
    log = tmp_path / "spend.jsonl"
    guard = BudgetGuard(10.0, log)
    guard.authorize("a", 6.0)
    assert guard.state().reserved == 6.0
    os.replace(log, tmp_path / "old.jsonl")  # moved aside: a new log begins
    assert guard.state().reserved == 0.0
    guard.authorize("b", 2.0)
    text = log.read_text()
    log.write_text(text.replace('"estimated": 2.0', '"estimated": 3.0'))  # rewritten in place, same length
    assert guard.state().reserved == 3.0


def test_a_corrupt_line_is_named_and_counts_nothing_until_fixed(tmp_path: Path) -> None:
    log = tmp_path / "spend.jsonl"
    guard = BudgetGuard(10.0, log)
    guard.authorize("a", 1.0)
    guard.authorize("b", 1.0)
    good = log.read_bytes()
    with log.open("ab") as handle:
        handle.write(b'{"ts": "x", "op_label": "c", "estimated": 1.0, "currency": "USD"}\n{not json}\n')
    with pytest.raises(BudgetConfigError, match=r"spend.jsonl:4: corrupt line"):
        guard.authorize("d", 1.0)
    with pytest.raises(
        BudgetConfigError, match=r"spend.jsonl:4: corrupt line"
    ):  # again: nothing half-counted
        guard.state()
    log.write_bytes(good + b'{"ts": "x", "op_label": "c", "estimated": 1.0, "currency": "USD"}\n')
    assert guard.state().reserved == 3.0
