"""`spotbatch whatif` through the real entry point: a fixture trace, and bad input refused by name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from coordinator.cost.pricing import PriceTable
from coordinator.whatif.study import DEFAULT_POLICIES
from tests.coordinator.whatif.conftest import TRACES
from tests.host_load import scaled

ONE_HOUR = ["--model", "random", "--work-hours", "1", "--deadline-hours", "2"]  # a job the random model runs


def spotbatch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coordinator", "whatif", *args],
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )


def test_whatif_cli_on_a_fixture_trace(tmp_path: Path) -> None:
    out = tmp_path / "runs.jsonl"
    result = spotbatch(
        "--trace",
        str(TRACES / "synthetic-zone.json"),
        "--work-hours",
        "1",
        "--deadline-hours",
        "2",
        "--runs",
        "5",
        "--json",
        str(out),
        "--region",
        "us-east-1",
        "--instance-type",
        "p3.2xlarge",
    )
    assert result.returncode == 0, result.stderr
    assert "| optimum | 5 |" in result.stdout and "| deadline | 5 |" in result.stdout
    table = PriceTable.load()
    spot, on_demand = (
        table.lookup("aws", "us-east-1", "p3.2xlarge", m).usd_per_hour for m in ("spot", "on-demand")
    )
    assert f"spot {spot:g} $/h, on-demand {on_demand:g} $/h" in result.stdout  # the price table's rows
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 5 * (len(DEFAULT_POLICIES) + 1)
    assert all(line["optimum_usd"] <= line["cost_usd"] + 1e-9 for line in lines if line["deadline_met"])
    # the JSON's cost is the printed one: what the instances cost and, for a run that did not finish, the
    # work left at on-demand (it used to be the outcome's bill alone: 0.728x in the JSON vs 0.763x printed)
    for line in lines:
        left = line["work_left_seconds"] / 3600 * on_demand
        assert line["cost_usd"] == pytest.approx(line["billed_usd"] + left, rel=1e-6, abs=1e-9), line

    one = spotbatch(
        "--model",
        "random",
        "--rows",
        "36000",
        "--rows-per-s",
        "10",
        "--deadline-hours",
        "2",
        "--runs",
        "1",
        "--checkpoint-seconds",
        "600",
        "--spot-price",
        "1",
        "--on-demand-price",
        "3",
    )
    assert one.returncode == 0, one.stderr
    assert "one run (random 30%/300s #0):" in one.stdout and "rows redone" in one.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--trace", "missing.json", "--work-hours", "1", "--deadline-hours", "2"],
            "--trace missing.json: no such file or folder",
        ),
        (["--work-hours", "1", "--deadline-hours", "2"], "--model trace needs --trace FILE|FOLDER"),
        (["--model", "random", "--rows", "10", "--deadline-hours", "2"], "--rows needs --rows-per-s"),
        (
            ["--model", "random", "--work-hours", "3", "--deadline-hours", "2"],
            "deadline_seconds=7200 is shorter",
        ),
        (
            [
                "--model",
                "random",
                "--work-hours",
                "1",
                "--deadline-hours",
                "2",
                "--policies",
                "greedy,fastest",
            ],
            "unknown policy 'fastest'",
        ),
        (
            ["--model", "random", "--work-hours", "1", "--deadline-hours", "2", "--instance-type", "x9.huge"],
            "no spot price for aws x9.huge",
        ),
        ([*ONE_HOUR, "--rebalance-lead-seconds", "900"], "rebalance_lead_seconds=900 is longer than a tick"),
        ([*ONE_HOUR, "--rebalance-lead-seconds", "-1"], "rebalance_lead_seconds must be >= 0, got -1"),
        (
            [*ONE_HOUR, "--zones"],
            "--zones: fails over between two or more --trace files (with --model trace)",
        ),
        (
            ["--zones", "--trace", str(TRACES / "synthetic-zone.json"), *ONE_HOUR[2:]],
            "--zones: fails over between two or more --trace files, got 1",
        ),
        (
            [*ONE_HOUR, "--spot-price", "4", "--on-demand-price", "3"],
            "--spot-price 4 / --on-demand-price 3: both positive, and spot at most on-demand",
        ),
    ],
)
def test_whatif_cli_refuses_bad_input_by_name(args: list[str], message: str) -> None:
    result = spotbatch(*args)
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_the_json_cost_of_an_unfinished_run_charges_the_work_left_at_on_demand(tmp_path: Path) -> None:
    """A zone with no spot capacity at all: spot-only never finishes; its JSON cost is its bill and the
    work left at on-demand, as printed (the JSON gave the bill alone)."""
    trace = tmp_path / "never.json"
    trace.write_text(json.dumps({"metadata": {"gap_seconds": 300}, "data": [0] * 400}))
    out = tmp_path / "runs.jsonl"
    args = ["--trace", str(trace), "--work-hours", "1", "--deadline-hours", "2", "--runs", "1"]
    prices = ["--spot-price", "1", "--on-demand-price", "3", "--policies", "spot-only"]
    result = spotbatch(*args, *prices, "--json", str(out))
    assert result.returncode == 0, result.stderr
    (line,) = [json.loads(text) for text in out.read_text().splitlines() if '"spot-only"' in text]
    assert line["work_left_seconds"] == 3600 and line["cost_usd"] == pytest.approx(line["billed_usd"] + 3.0)


def test_a_trace_of_true_and_false_is_refused_by_name(tmp_path: Path) -> None:
    """`true` equals 1 in Python: a trace of JSON booleans passed as availability without a word."""
    trace = tmp_path / "booleans.json"
    trace.write_text(json.dumps({"metadata": {"gap_seconds": 300}, "data": [True, False] * 200}))
    result = spotbatch("--trace", str(trace), "--work-hours", "1", "--deadline-hours", "2")
    assert result.returncode == 2 and "data must be a non-empty list of 0/1, found True" in result.stderr


def test_failover_between_two_zones_through_the_cli(tmp_path: Path) -> None:
    """Zone a has capacity 5 ticks in 25, zone b always: alone, a reclaims spot-only again and again;
    failing over to the steadier zone, it is not reclaimed, and the optimum over both zones bounds it."""
    zone_a, zone_b = tmp_path / "us-east-1a.json", tmp_path / "us-east-1b.json"
    zone_a.write_text(json.dumps({"metadata": {"gap_seconds": 300}, "data": ([1] * 5 + [0] * 20) * 16}))
    zone_b.write_text(json.dumps({"metadata": {"gap_seconds": 300}, "data": [1] * 400}))
    job = ["--work-hours", "1", "--deadline-hours", "2", "--runs", "6", "--policies", "spot-only,deadline"]
    job += ["--spot-price", "1", "--on-demand-price", "3"]
    alone = spotbatch("--trace", str(zone_a), *job, "--json", str(tmp_path / "alone.jsonl"))
    both = spotbatch(
        "--zones",
        "--trace",
        str(zone_a),
        "--trace",
        str(zone_b),
        *job,
        "--json",
        str(tmp_path / "both.jsonl"),
    )
    assert alone.returncode == 0 and both.returncode == 0, alone.stderr + both.stderr
    runs = {
        name: [json.loads(line) for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
        for name in ("alone", "both")
    }
    assert all(line["window"].startswith("2 zones (steadiest) @ tick ") for line in runs["both"])
    spot_only = {name: [r for r in lines if r["policy"] == "spot-only"] for name, lines in runs.items()}
    assert sum(r["interruptions"] for r in spot_only["alone"]) >= 6
    assert sum(r["interruptions"] for r in spot_only["both"]) < sum(
        r["interruptions"] for r in spot_only["alone"]
    )
    assert all(r["optimum_usd"] <= r["cost_usd"] + 1e-9 for r in runs["both"] if r["deadline_met"])
    one_zone_optimum = min(r["optimum_usd"] for r in runs["alone"])
    assert max(r["optimum_usd"] for r in runs["both"]) <= one_zone_optimum + 1e-9
