"""Prices of the day from AWS (`--live-prices`), with the table as the fallback and the source recorded.

- Spot: `DescribeSpotPriceHistory` for the type in each of the chosen zones (the stack's subnets), the
  newest Linux price of each; the quote is their median (the fleet spreads segments over the zones) and
  its source lists every zone's price and time. A price older than a week is not today's (moto answers
  with placeholder rows dated 2006): such zones are left out.
- On-demand: the Price List API (`pricing:GetProducts`, served from us-east-1) for Linux, shared tenancy,
  no pre-installed software, in the region.

Whatever cannot be read live (no permission, no answer, an emulator) falls back to the table's price, and
the quote's source says why.

Usage::

    quotes = live_quotes(table, region="us-east-1", instance_type="c7i.xlarge",
                         zones=["us-east-1a", "us-east-1b"], ec2=ec2, pricing=pricing_client)
"""

from __future__ import annotations

import json
import statistics
from datetime import UTC, datetime, timedelta
from typing import Any

from coordinator.cost.pricing import Market, PriceQuote, PriceTable
from coordinator.errors import ConfigError
from coordinator.stack.opt_in_regions import OPT_IN_REGIONS, enable_hint

MAX_AGE = timedelta(days=7)
PRICING_REGION = "us-east-1"  # where the Price List API answers
PRODUCT_FILTERS = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "licenseModel": "No License required",
}


def live_spot(ec2: Any, instance_type: str, zones: list[str], now: datetime) -> tuple[float, str] | None:
    prices: dict[str, tuple[float, datetime]] = {}
    for zone in zones:
        history = ec2.describe_spot_price_history(
            InstanceTypes=[instance_type],
            ProductDescriptions=["Linux/UNIX"],
            AvailabilityZone=zone,
            StartTime=now,
            MaxResults=10,
        ).get("SpotPriceHistory", [])
        recent = [h for h in history if now - h["Timestamp"].astimezone(UTC) <= MAX_AGE]
        if recent:
            newest = max(recent, key=lambda h: h["Timestamp"])
            prices[zone] = (float(newest["SpotPrice"]), newest["Timestamp"].astimezone(UTC))
    if not prices:
        return None
    median = statistics.median(price for price, _ in prices.values())
    seen = ", ".join(f"{z} {p:g} at {t:%Y-%m-%dT%H:%MZ}" for z, (p, t) in sorted(prices.items()))
    return median, f"live describe_spot_price_history, median of {len(prices)} zone(s): {seen}"


def live_on_demand(pricing: Any, region: str, instance_type: str) -> tuple[float, str] | None:
    filters = [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in PRODUCT_FILTERS.items()]
    filters += [
        {"Type": "TERM_MATCH", "Field": "instanceType", "Value": instance_type},
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
    ]
    answer = pricing.get_products(ServiceCode="AmazonEC2", Filters=filters, MaxResults=10)
    for text in answer.get("PriceList", []):
        product = json.loads(text) if isinstance(text, str) else text
        for term in product.get("terms", {}).get("OnDemand", {}).values():
            for dimension in term.get("priceDimensions", {}).values():
                usd = float(dimension.get("pricePerUnit", {}).get("USD", 0) or 0)
                if usd > 0 and dimension.get("unit") == "Hrs":
                    published = product.get("publicationDate", term.get("effectiveDate", ""))
                    return usd, f"live Price List API (AmazonEC2 {product['product']['sku']}, {published})"
    return None


def zone_names(ec2: Any) -> list[str]:
    """The region's availability zones, for a quote without a stack's subnets (pre-flight, apply-real); an
    opt-in region the account has not enabled is one `ConfigError` line saying so (it was a traceback)."""
    from botocore.exceptions import ClientError

    try:
        answer = ec2.describe_availability_zones()
    except ClientError as error:
        region = str(ec2.meta.region_name)
        code = str(error.response.get("Error", {}).get("Code", ""))
        if region in OPT_IN_REGIONS and code in ("AuthFailure", "OptInRequired", "PendingVerification"):
            raise ConfigError(f"EC2 in {region} answered {code}: {enable_hint(region)}") from None
        raise
    return [z["ZoneName"] for z in answer["AvailabilityZones"]]


def live_quotes(
    table: PriceTable,
    *,
    region: str,
    instance_type: str,
    zones: list[str],
    ec2: Any,
    pricing: Any,
    now: datetime | None = None,
) -> dict[str, PriceQuote]:
    """Both markets' quotes: live where AWS answers, else the table's with the reason in the source."""
    now = now or datetime.now(UTC)
    readers = {
        "spot": lambda: live_spot(ec2, instance_type, zones, now),
        "on-demand": lambda: live_on_demand(pricing, region, instance_type),
    }
    quotes: dict[str, PriceQuote] = {}
    markets: tuple[Market, ...] = ("spot", "on-demand")
    for market in markets:
        fallback = table.quote("aws", region, instance_type, market)
        try:
            live = readers[market]()
            why = "no recent price"
        except Exception as error:  # no permission, no endpoint: the table, and the reason on record
            live, why = None, f"{type(error).__name__}: {error}"[:200]
        if live is None:
            quotes[market] = PriceQuote(
                fallback.rate_usd_per_hour,
                f"{fallback.source} (live price unavailable: {why})",
                fallback.billing,
                fallback.snapshot_date,
            )
        else:
            quotes[market] = PriceQuote(live[0], live[1], fallback.billing, None, live=True)
    return quotes
