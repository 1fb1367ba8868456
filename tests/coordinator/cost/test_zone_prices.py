"""Each zone priced by its zone ID, through the account's mapping: with Stubber for the answers AWS gives,
and with moto for the call itself."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from coordinator.cost.pricing import PriceTable
from coordinator.cost.zone_prices import ZonePrices, zone_ids


def test_zone_names_map_to_this_accounts_ids_and_the_tables_zone_prices() -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(ec2) as stub:
        # this account's us-east-1a is use1-az4 (another account's may be use1-az1)
        stub.add_response(
            "describe_availability_zones",
            {
                "AvailabilityZones": [
                    {"ZoneName": "us-east-1a", "ZoneId": "use1-az4"},
                    {"ZoneName": "us-east-1b", "ZoneId": "use1-az6"},
                ]
            },
            {"ZoneNames": ["us-east-1a", "us-east-1b"]},
        )
        prices = ZonePrices.for_zones(
            PriceTable.load(), ec2, region="us-east-1", zones=["us-east-1b", "us-east-1a"]
        )
    table = PriceTable.load()
    expected = table.lookup("aws", "us-east-1", "c7i.xlarge", "spot", zone_id="use1-az4").usd_per_hour
    assert prices.of("spot", "c7i.xlarge", "us-east-1a") == expected
    assert prices.of("on-demand", "c7i.xlarge", "us-east-1a") is None  # the same in every zone
    assert prices.of("spot", "c7i.xlarge", "us-east-1z") is None  # not one of the stack's
    assert prices.of("spot", "x9.huge", "us-east-1a") is None  # the table has no row


def test_a_mapping_that_cannot_be_read_leaves_the_zones_unpriced(caplog: pytest.LogCaptureFixture) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(ec2) as stub:
        stub.add_client_error("describe_availability_zones", "UnauthorizedOperation", http_status_code=403)
        prices = ZonePrices.for_zones(PriceTable.load(), ec2, region="us-east-1", zones=["us-east-1a"])
    assert prices.of("spot", "c7i.xlarge", "us-east-1a") is None and "zone IDs unreadable" in caplog.text


def test_moto_answers_the_mapping_with_zone_ids(aws_credentials: None) -> None:
    from moto import mock_aws

    with mock_aws():
        ids = zone_ids(boto3.client("ec2", region_name="us-east-1"), ["us-east-1a", "us-east-1b"])
    assert set(ids) == {"us-east-1a", "us-east-1b"} and all(i.startswith("use1-az") for i in ids.values())
