"""The price table, live spot prices and job estimates, against hand-computed cases."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from coordinator.cost.billing import EC2_LINUX
from coordinator.cost.live_prices import live_quotes
from coordinator.cost.pricing import PriceQuote, PriceTable, estimate_job_cost
from coordinator.errors import PriceError

# p3.2xlarge, us-east-1, in the shipped table: the median of the 4 zones with a spot price, and on-demand
SPOT, ON_DEMAND = (0.3841 + 0.4041) / 2, 3.06
SPOT_ZONES = ("use1-az1", "use1-az2", "use1-az5", "use1-az6")


def test_shipped_table_prices_every_region_and_zone_of_its_types() -> None:
    table = PriceTable.load()
    spot = table.lookup("aws", "us-east-1", "p3.2xlarge", "spot")
    on_demand = table.lookup("aws", "us-east-1", "p3.2xlarge", "on-demand")
    assert spot.usd_per_hour == pytest.approx(SPOT) and on_demand.usd_per_hour == ON_DEMAND
    assert spot.source.startswith(f"median of 4 zones ({', '.join(SPOT_ZONES)}); SkyPilot catalog")
    assert spot.billing is EC2_LINUX and spot.snapshot_date is None  # the catalog carries no date
    assert table.lookup("aws", "us-east-1", "p3.2xlarge", "spot", "use1-az1").usd_per_hour == 0.3707
    aws = [row for row in table.rows if row.provider == "aws"]
    assert len({row.instance_type for row in aws}) == 12 and len({row.region for row in aws}) == 24
    assert not any(row.instance_type.startswith("inf") or "-atl" in row.zone_id for row in aws)
    assert (table.vcpus("c7i.xlarge"), table.vcpus("g5.2xlarge")) == (4, 8)
    assert {row.provider for row in table.rows} >= {"aws", "lambda", "runpod"}
    two_gpu = table.lookup("runpod", "us", "2x_a100_sxm4_80gb", "on-demand")
    assert two_gpu.instance_usd_per_hour == pytest.approx(2 * two_gpu.usd_per_hour)  # quoted per GPU
    with pytest.raises(PriceError, match=r"no spot price for aws c6i\.metal in us-east-1; types with"):
        table.lookup("aws", "us-east-1", "c6i.metal", "spot")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ((",0.228,", ",-1,"), r"prices.csv:3: usd_per_hour '-1' must be a positive number"),
        (("on-demand", "reserved"), r"prices.csv:3: market 'reserved' is not one of"),
        (("per-second-60s-min", "per-fortnight"), r"prices.csv:3: unknown billing rule 'per-fortnight'"),
    ],
)
def test_bad_price_rows_are_named(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    shipped = Path(PriceTable.load().path).read_text().splitlines()
    assert shipped[0].startswith("#") and "af-south-1,,c6i.xlarge,on-demand,0.228," in shipped[2]
    shipped[2] = shipped[2].replace(*change, 1)
    path = tmp_path / "prices.csv"
    path.write_text("\n".join(shipped) + "\n")
    with pytest.raises(PriceError, match=message):
        PriceTable.load(path)


def p3_quotes(ec2: Any, pricing: Any) -> dict[str, PriceQuote]:
    return live_quotes(
        PriceTable.load(),
        region="us-east-1",
        instance_type="p3.2xlarge",
        zones=["us-east-1a"],
        ec2=ec2,
        pricing=pricing,
    )


def test_moto_placeholder_spot_prices_fall_back_to_the_table(aws_credentials: None) -> None:
    from moto import mock_aws

    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        pricing = boto3.client("pricing", region_name="us-east-1")
        quotes = p3_quotes(ec2, pricing)
    assert quotes["spot"].rate_usd_per_hour == pytest.approx(SPOT) and not quotes["spot"].live
    assert quotes["spot"].source.startswith("table of unknown date: median of 4 zones")
    assert quotes["spot"].source.endswith("(live price unavailable: no recent price)")
    assert quotes["on-demand"].rate_usd_per_hour == ON_DEMAND and not quotes["on-demand"].live


def product(usd: str) -> str:
    """A Price List API product, as get_products returns it (a JSON string), trimmed to what is read."""
    return json.dumps(
        {
            "product": {"sku": "ABC123", "attributes": {"instanceType": "p3.2xlarge"}},
            "publicationDate": "2026-11-30T00:00:00Z",
            "terms": {
                "OnDemand": {
                    "ABC123.JRTCKXETXF": {
                        "effectiveDate": "2026-11-01T00:00:00Z",
                        "priceDimensions": {
                            "ABC123.JRTCKXETXF.6YS6EN2CT7": {"unit": "Hrs", "pricePerUnit": {"USD": usd}}
                        },
                    }
                }
            },
        }
    )


def test_live_prices_per_zone_and_from_the_price_list_are_used_and_recorded(aws_credentials: None) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    pricing = boto3.client("pricing", region_name="us-east-1")
    now = datetime.now(UTC)
    with Stubber(ec2) as ec2_stub, Stubber(pricing) as pricing_stub:  # no emulator has prices
        for zone, price, minutes in (("us-east-1a", "0.9312", 9), ("us-east-1b", "0.9541", 5)):
            ec2_stub.add_response(
                "describe_spot_price_history",
                {
                    "SpotPriceHistory": [
                        {
                            "AvailabilityZone": zone,
                            "InstanceType": "p3.2xlarge",
                            "ProductDescription": "Linux/UNIX",
                            "SpotPrice": price,
                            "Timestamp": now - timedelta(minutes=minutes),
                        }
                    ]
                },
            )
        pricing_stub.add_response("get_products", {"PriceList": [product("3.0600000000")]})
        quotes = live_quotes(
            PriceTable.load(),
            region="us-east-1",
            instance_type="p3.2xlarge",
            zones=["us-east-1a", "us-east-1b"],
            ec2=ec2,
            pricing=pricing,
            now=now,
        )
    spot, on_demand = quotes["spot"], quotes["on-demand"]
    assert spot.live and spot.rate_usd_per_hour == pytest.approx((0.9312 + 0.9541) / 2)
    assert spot.source.startswith("live describe_spot_price_history, median of 2 zone(s): us-east-1a 0.9312")
    assert on_demand.live and on_demand.rate_usd_per_hour == 3.06
    assert on_demand.source == "live Price List API (AmazonEC2 ABC123, 2026-11-30T00:00:00Z)"


def test_a_refused_live_price_falls_back_with_the_reason(aws_credentials: None) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    pricing = boto3.client("pricing", region_name="us-east-1")
    with Stubber(ec2) as ec2_stub, Stubber(pricing) as pricing_stub:
        ec2_stub.add_client_error(
            "describe_spot_price_history", "UnauthorizedOperation", http_status_code=403
        )
        pricing_stub.add_client_error("get_products", "AccessDeniedException", http_status_code=400)
        quotes = p3_quotes(ec2, pricing)
    assert not quotes["spot"].live and "live price unavailable: ClientError" in quotes["spot"].source
    assert "UnauthorizedOperation" in quotes["spot"].source
    assert "AccessDeniedException" in quotes["on-demand"].source


def test_job_estimate_shows_its_arithmetic() -> None:
    estimate = estimate_job_cost(work_hours=0.5, instances=10, rate_usd_per_hour=SPOT)
    assert estimate.total_usd == pytest.approx(0.5 * SPOT * 10 * 1.25)
    assert estimate.describe() == "0.500 h x $0.3941/h x 10 instance(s) x (1 + 25% margin) = $2.46"
    with pytest.raises(PriceError):
        estimate_job_cost(work_hours=1, instances=0, rate_usd_per_hour=SPOT)
