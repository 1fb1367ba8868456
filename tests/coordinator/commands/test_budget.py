"""`spotbatch budget status|check|estimate` through the CLI: what it prints, and its exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from coordinator.cli import main
from coordinator.cost.budget import BudgetGuard
from coordinator.cost.pricing import PriceTable


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "spend_log.jsonl"


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_cli_status_and_check(log_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    guard = BudgetGuard(5.0, log_path)
    guard.authorize("lab02-tp-spinup", 3.00)
    guard.record_actual("lab02-tp-spinup", 2.10)
    guard.authorize("smoke", 0.40)
    assert main(["budget", "status", "--spend-log", str(log_path), "--ceiling", "5"]) == 0
    out = capsys.readouterr().out
    for expected in (
        "ceiling   $5.00",
        "spent     $2.10",
        "reserved  $0.40",
        "remaining $2.50",
        "lab02-tp-spinup",
    ):
        assert expected in out
    assert (
        main(["budget", "check", "--estimate", "2.50", "--spend-log", str(log_path), "--ceiling", "5"]) == 0
    )
    assert "fits" in capsys.readouterr().out
    assert (
        main(["budget", "check", "--estimate", "2.51", "--spend-log", str(log_path), "--ceiling", "5"]) == 3
    )
    assert "would pass the ceiling" in capsys.readouterr().err
    assert len(lines(log_path)) == 3  # check never writes


def test_cli_bad_estimate_through_the_real_entry_point(log_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "coordinator",
            "budget",
            "check",
            "--estimate",
            "abc",
            "--spend-log",
            str(log_path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "estimate must be a number of dollars, got 'abc'" in result.stderr


def test_cli_estimate_shows_the_arithmetic_and_asks_the_guard(
    log_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        "budget",
        "estimate",
        "--hours",
        "0.5",
        "--instances",
        "8",
        "--spend-log",
        str(log_path),
        "--ceiling",
        "5",
        "--region",
        "us-east-1",
        "--instance-type",
        "p3.2xlarge",
    ]
    assert main([*args, "--market", "spot"]) == 0
    out = capsys.readouterr().out
    spot = (
        PriceTable.load().lookup("aws", "us-east-1", "p3.2xlarge", "spot").usd_per_hour
    )  # the zones' median
    assert f"0.500 h x ${spot:.4f}/h x 8 instance(s) x (1 + 25% margin) = ${0.5 * spot * 8 * 1.25:.2f}" in out
    assert main([*args, "--market", "on-demand"]) == 3  # $15.30 cannot fit under $5
    assert "would pass the ceiling $5.00" in capsys.readouterr().err


def test_cli_status_lists_open_reservations_by_label_and_age(
    log_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_path.write_text(
        '{"ts": "2026-01-01T00:00:00+00:00", "op_label": "job-1/seg-0002/1 spot", "estimated": 0.5, '
        '"currency": "USD"}\n'
    )
    BudgetGuard(5.0, log_path).authorize("job-1/seg-0003/1 spot", 0.25)
    assert main(["budget", "status", "--spend-log", str(log_path)]) == 0
    out = capsys.readouterr().out
    assert "open reservations" in out
    old = next(line for line in out.splitlines() if "seg-0002" in line and "since" in line)
    new = next(line for line in out.splitlines() if "seg-0003" in line and "since" in line)
    assert "$0.50" in old and " h old)" in old  # a reservation nobody settled for months stands out
    assert "$0.25" in new and " s old)" in new


def test_version() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "coordinator", "--version"], capture_output=True, text=True, check=True
    )
    assert shown.stdout.startswith("spotbatch 0.1.0")
