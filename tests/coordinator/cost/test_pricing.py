"""The price table, live spot prices and job estimates, against hand-computed cases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from coordinator.cost.billing import EC2_LINUX
from coordinator.cost.pricing import PriceTable, estimate_job_cost, live_or_table_price
from coordinator.errors import PriceError

SPOT, ON_DEMAND = 0.918, 3.06  # p3.2xlarge, us-east-1, from the shipped table


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
