"""Billing rules, the price table, estimates and the ledger, against hand-computed cases."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from coordinator.cost.billing import EC2_LINUX, PER_HOUR, PER_MINUTE, billed_seconds, cost_usd
from coordinator.cost.ledger import (
    AttemptRecord,
    log_to_mlflow,
    price_attempt,
    read_ledger,
    summarize_job,
    write_ledger,
)
from coordinator.cost.pricing import PriceTable, estimate_job_cost, live_or_table_price
from coordinator.errors import PriceError

SPOT, ON_DEMAND = 0.918, 3.06  # p3.2xlarge, us-east-1, from the shipped table


@pytest.mark.parametrize(
    ("rule", "start", "end", "seconds"),
    [
        (EC2_LINUX, 0.0, 12.0, 60),  # the 60-second minimum
        (EC2_LINUX, 0.0, 60.0, 60),
        (EC2_LINUX, 0.0, 61.2, 62),  # per second, rounded up
        (EC2_LINUX, 100.0, 161.0000001, 61),  # float noise is not a second
        (EC2_LINUX, 0.0, 3_600.0, 3_600),
        (PER_MINUTE, 0.0, 61.0, 120),
        (PER_HOUR, 0.0, 1.0, 3_600),
        (PER_HOUR, 0.0, 3_601.0, 7_200),
    ],
)
def test_billing_rules(rule: object, start: float, end: float, seconds: int) -> None:
    assert billed_seconds(rule, start, end) == seconds  # type: ignore[arg-type]


def test_billing_refuses_time_travel() -> None:
    with pytest.raises(ValueError, match="ended"):
        billed_seconds(EC2_LINUX, 10.0, 5.0)


def test_shipped_table_has_dated_sourced_prices_for_the_template_type() -> None:
    table = PriceTable.load()
    spot = table.lookup("aws", "us-east-1", "p3.2xlarge", "spot")
    on_demand = table.lookup("aws", "us-east-1", "p3.2xlarge", "on-demand")
    assert (spot.usd_per_hour, on_demand.usd_per_hour) == (SPOT, ON_DEMAND)
    assert spot.billing is EC2_LINUX and spot.source and spot.snapshot_date.year >= 2025
    assert {row.provider for row in table.rows} >= {"aws", "lambda", "runpod"}
    two_gpu = table.lookup("runpod", "us", "2x_a100_sxm4_80gb", "on-demand")
    assert two_gpu.instance_usd_per_hour == pytest.approx(2 * two_gpu.usd_per_hour)  # quoted per GPU
    with pytest.raises(PriceError, match=r"no spot price for aws c6i\.metal in us-east-1"):
        table.lookup("aws", "us-east-1", "c6i.metal", "spot")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("3.06", "-1"), r"prices.csv:2: usd_per_hour '-1' must be a positive number"),
        (("on-demand", "reserved"), r"prices.csv:2: market 'reserved' is not one of"),
        (("per-second-60s-min", "per-fortnight"), r"prices.csv:2: unknown billing rule 'per-fortnight'"),
    ],
)
def test_bad_price_rows_are_named(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    shipped = Path(PriceTable.load().path).read_text().splitlines()
    shipped[1] = shipped[1].replace(*change, 1)
    path = tmp_path / "prices.csv"
    path.write_text("\n".join(shipped) + "\n")
    with pytest.raises(PriceError, match=message):
        PriceTable.load(path)


def test_moto_placeholder_spot_prices_fall_back_to_the_table(aws_credentials: None) -> None:
    from moto import mock_aws

    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        quote = live_or_table_price(PriceTable.load(), "us-east-1", "p3.2xlarge", "spot", ec2)
    assert quote.rate_usd_per_hour == SPOT
    assert quote.source.startswith("table 2026-12-02")


def test_a_recent_live_spot_price_is_used_and_recorded(aws_credentials: None) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    now = datetime.now(UTC)
    with Stubber(ec2) as stub:  # the real client; only EC2's answer is canned (no emulator has prices)
        stub.add_response(
            "describe_spot_price_history",
            {
                "SpotPriceHistory": [
                    {
                        "AvailabilityZone": "us-east-1b",
                        "InstanceType": "p3.2xlarge",
                        "ProductDescription": "Linux/UNIX",
                        "SpotPrice": "0.9541",
                        "Timestamp": now - timedelta(minutes=5),
                    },
                    {
                        "AvailabilityZone": "us-east-1a",
                        "InstanceType": "p3.2xlarge",
                        "ProductDescription": "Linux/UNIX",
                        "SpotPrice": "0.9312",
                        "Timestamp": now - timedelta(minutes=9),
                    },
                ]
            },
        )
        quote = live_or_table_price(PriceTable.load(), "us-east-1", "p3.2xlarge", "spot", ec2)
    assert quote.rate_usd_per_hour == 0.9312
    assert quote.source.startswith("live describe_spot_price_history") and "us-east-1a" in quote.source


def test_job_estimate_shows_its_arithmetic() -> None:
    estimate = estimate_job_cost(work_hours=0.5, instances=10, rate_usd_per_hour=SPOT)
    assert estimate.total_usd == pytest.approx(0.5 * 0.918 * 10 * 1.25)
    assert estimate.describe() == "0.500 h x $0.9180/h x 10 instance(s) x (1 + 25% margin) = $5.74"
    with pytest.raises(PriceError):
        estimate_job_cost(work_hours=1, instances=0, rate_usd_per_hour=SPOT)


def attempt(
    segment: str, market: str, start: float, end: float, reason: str, kept: int, wasted: int
) -> AttemptRecord:
    return price_attempt(
        rule=EC2_LINUX,
        rate_usd_per_hour=SPOT if market == "spot" else ON_DEMAND,
        launched_at=start,
        ended_at=end,
        job_id="job-1",
        segment_id=segment,
        attempt_id=f"{segment}-{start:g}",
        instance_id=f"i-{segment}{start:g}",
        provider="aws",
        region="us-east-1",
        instance_type="p3.2xlarge",
        market=market,
        gpus=1,
        price_source="table",
        end_reason=reason,
        rows_kept=kept,
        rows_wasted=wasted,
        rows_per_s=2.0,
    )


def test_mixed_spot_and_on_demand_job_by_hand(tmp_path: Path) -> None:
    attempts = [
        attempt("a", "spot", 0, 1_800, "interrupted", kept=3_000, wasted=500),  # 1,800 s at 0.918 = 0.459
        attempt("a", "on-demand", 1_900, 3_400, "done", kept=1_000, wasted=0),  # 1,500 s at 3.06 = 1.275
        attempt("b", "spot", 0, 2_000, "done", kept=4_000, wasted=0),  # 2,000 s at 0.918 = 0.51
        attempt("c", "spot", 0, 10, "failed", kept=0, wasted=0),  # 10 s bills 60 s: 0.0153
    ]
    assert [a.billed_seconds for a in attempts] == [1_800, 1_500, 2_000, 60]
    summary = summarize_job("job-1", attempts, ON_DEMAND)
    assert summary.total_cost_usd == pytest.approx(0.459 + 1.275 + 0.51 + 0.0153)
    assert summary.spot_cost_usd == pytest.approx(0.459 + 0.51 + 0.0153)
    assert summary.spot_hours == pytest.approx(3_860 / 3_600)
    assert summary.on_demand_hours == pytest.approx(1_500 / 3_600)
    assert summary.interruptions == 1 and summary.rows_redone == 500
    assert summary.redone_cost_usd == pytest.approx(250 * 0.918 / 3_600)  # 500 rows at 2 rows/s
    # all on demand: the interrupted attempt counts only its kept rows (3,000 / 2 = 1,500 s)
    all_on_demand = (1_500 + 1_500 + 2_000 + 60) * 3.06 / 3_600
    assert summary.all_on_demand_cost_usd == pytest.approx(all_on_demand)
    assert summary.savings_pct == pytest.approx(
        (all_on_demand - summary.total_cost_usd) / all_on_demand * 100
    )

    path = write_ledger(tmp_path / "run", attempts, summary)
    assert read_ledger(path) == (attempts, summary)


def test_corrupt_ledger_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    path.write_text('{"kind": "job", "job_id": "x"}\n')
    with pytest.raises(ValueError, match=r"ledger.jsonl:1: corrupt ledger line"):
        read_ledger(path)


@pytest.mark.slow
def test_job_lands_in_mlflow_with_its_params_and_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking import MlflowClient

    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # MLflow's default artifact root is ./mlruns of the working directory

    attempts = [attempt("a", "spot", 0, 1_800, "done", kept=3_600, wasted=0)]
    summary = summarize_job("job-ml", attempts, ON_DEMAND)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    ledger = write_ledger(tmp_path / "run", attempts, summary)
    run_id = log_to_mlflow(summary, attempts, tracking_uri=uri, ledger_path=ledger)
    run = MlflowClient(tracking_uri=uri).get_run(run_id)
    assert run.data.metrics["cost_usd"] == pytest.approx(cost_usd(SPOT, 1_800))
    assert run.data.metrics["billable_hours"] == pytest.approx(0.5)
    assert run.data.params["instance_type"] == "p3.2xlarge"
    assert run.data.params["spot_rate_usd_per_hour"] == "0.918"
    assert run.data.params["boot_utc"] == "1970-01-01T00:00:00+00:00"
    assert run.info.artifact_uri.startswith(
        (tmp_path / "mlartifacts" / "spotbatch").as_uri()
    )  # beside the store
    assert (
        list(tmp_path.glob("mlartifacts/*/*/artifacts/ledger.jsonl")) and not (elsewhere / "mlruns").exists()
    )


def test_logging_to_mlflow_leaves_the_environment_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mlflow.set_tracking_uri sets MLFLOW_TRACKING_URI; child processes started later must not inherit it."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    attempts = [attempt("a", "spot", 0, 600, "done", kept=1_200, wasted=0)]
    summary = summarize_job("job-env", attempts, ON_DEMAND)
    log_to_mlflow(summary, attempts, tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert "MLFLOW_TRACKING_URI" not in os.environ
