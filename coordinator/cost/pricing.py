"""Prices: the dated table shipped in the repo, live EC2 spot prices where credentials allow, estimates.

`prices.csv` (beside this file) has one row per provider, region, instance type and market, in USD per
instance-hour for EC2 and per GPU-hour for GPU clouds (`gpus` says how many GPUs an instance has), with
the billing rule, the snapshot date and the source of every figure.

Usage::

    table = PriceTable.load()
    row = table.lookup("aws", "us-east-1", "p3.2xlarge", "spot")
    quote = live_or_table_price(table, "us-east-1", "p3.2xlarge", "spot", ec2_client)  # records which
    estimate = estimate_job_cost(work_hours=2.0, instances=10, rate_per_hour=row.instance_usd_per_hour)
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from coordinator.cost.billing import BillingRule, rule_named
from coordinator.errors import PriceError

Market = Literal["spot", "on-demand"]
MARKETS: tuple[Market, ...] = ("spot", "on-demand")
COLUMNS = (
    "provider",
    "region",
    "instance_type",
    "market",
    "usd_per_hour",
    "gpus",
    "gpu_model",
    "gpu_memory_gb",
    "nvlink_pair",
    "billing",
    "snapshot_date",
    "source",
)
ESTIMATE_MARGIN = (
    0.25  # on top of expected hours: boot, model load, a retry; the budget guard reserves it too
)
LIVE_PRICE_MAX_AGE = timedelta(days=7)  # an older "latest" price is not today's (moto answers with 2006)


@dataclass(frozen=True, slots=True)
class PriceRow:
    provider: str
    region: str
    instance_type: str
    market: Market
    usd_per_hour: float  # per instance-hour (EC2) or per GPU-hour (GPU clouds with gpus > 1)
    gpus: int
    gpu_model: str
    gpu_memory_gb: int
    nvlink_pair: str  # "yes", "no" or "n/a" (one GPU)
    billing: BillingRule
    snapshot_date: date
    source: str

    @property
    def instance_usd_per_hour(self) -> float:
        """What one instance costs per hour: GPU clouds quote per GPU."""
        return self.usd_per_hour * (self.gpus if self.provider != "aws" else 1)


@dataclass(frozen=True, slots=True)
class PriceQuote:
    rate_usd_per_hour: float
    source: str  # "table <date>: <source>" or "live describe_spot_price_history <timestamp> <zone>"
    billing: BillingRule


def _parse_row(where: str, raw: dict[str, str]) -> PriceRow:
    try:
        market = raw["market"]
        if market not in MARKETS:
            raise ValueError(f"market {market!r} is not one of {MARKETS}")
        price = float(raw["usd_per_hour"])
        if not math.isfinite(price) or price <= 0:
            raise ValueError(f"usd_per_hour {raw['usd_per_hour']!r} must be a positive number")
        if not raw["source"].strip():
            raise ValueError("source is empty: every price says where it comes from")
        return PriceRow(
            provider=raw["provider"],
            region=raw["region"],
            instance_type=raw["instance_type"],
            market=market,
            usd_per_hour=price,
            gpus=int(raw["gpus"]),
            gpu_model=raw["gpu_model"],
            gpu_memory_gb=int(raw["gpu_memory_gb"]),
            nvlink_pair=raw["nvlink_pair"],
            billing=rule_named(raw["billing"]),
            snapshot_date=date.fromisoformat(raw["snapshot_date"]),
            source=raw["source"],
        )
    except (KeyError, ValueError, TypeError) as error:
        raise PriceError(f"{where}: {error}") from None


class PriceTable:
    def __init__(self, rows: list[PriceRow], path: str) -> None:
        self.rows = rows
        self.path = path

    @classmethod
    def load(cls, path: Path | None = None) -> PriceTable:
        source = path or Path(str(resources.files("coordinator.cost") / "prices.csv"))
        with open(source, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            if tuple(reader.fieldnames or ()) != COLUMNS:
                raise PriceError(f"{source}: columns {reader.fieldnames} are not {list(COLUMNS)}")
            rows = [_parse_row(f"{source}:{number}", raw) for number, raw in enumerate(reader, start=2)]
        return cls(rows, str(source))

    def lookup(self, provider: str, region: str, instance_type: str, market: str) -> PriceRow:
        for row in self.rows:
            if (row.provider, row.region, row.instance_type, row.market) == (
                provider,
                region,
                instance_type,
                market,
            ):
                return row
        raise PriceError(
            f"{self.path}: no {market} price for {provider} {instance_type} in {region}; add a dated row "
            "with "
            "its source"
        )

    def quote(self, provider: str, region: str, instance_type: str, market: str) -> PriceQuote:
        row = self.lookup(provider, region, instance_type, market)
        return PriceQuote(
            row.instance_usd_per_hour, f"table {row.snapshot_date.isoformat()}: {row.source}", row.billing
        )


def live_spot_price(ec2: Any, instance_type: str, now: datetime | None = None) -> tuple[float, str] | None:
    """The newest Linux spot price across the region's zones, if EC2 gives a recent one; else None."""
    now = now or datetime.now(UTC)
    history = ec2.describe_spot_price_history(
        InstanceTypes=[instance_type], ProductDescriptions=["Linux/UNIX"], StartTime=now, MaxResults=20
    ).get("SpotPriceHistory", [])
    recent = [
        item for item in history if now - item["Timestamp"].astimezone(UTC) <= LIVE_PRICE_MAX_AGE
    ]  # moto answers with placeholder rows dated 2006: those are not a price of the day
    if not recent:
        return None
    cheapest = min(recent, key=lambda item: float(item["SpotPrice"]))
    stamp = cheapest["Timestamp"].astimezone(UTC).isoformat()
    return float(
        cheapest["SpotPrice"]
    ), f"live describe_spot_price_history {stamp} {cheapest['AvailabilityZone']}"


def live_or_table_price(
    table: PriceTable, region: str, instance_type: str, market: str, ec2: Any | None
) -> PriceQuote:
    """A live spot price where one can be read, else the table's; the quote says which."""
    fallback = table.quote("aws", region, instance_type, market)
    if market != "spot" or ec2 is None:
        return fallback
    live = live_spot_price(ec2, instance_type)
    if live is None:
        return fallback
    return PriceQuote(live[0], live[1], fallback.billing)


@dataclass(frozen=True, slots=True)
class CostEstimate:
    expected_hours: float  # per instance
    instances: int
    rate_usd_per_hour: float
    margin: float
    total_usd: float

    def describe(self) -> str:
        return (
            f"{self.expected_hours:.3f} h x ${self.rate_usd_per_hour:.4f}/h x {self.instances} instance(s) "
            f"x (1 + {self.margin:.0%} margin) = ${self.total_usd:.2f}"
        )


def estimate_job_cost(
    *, work_hours: float, instances: int, rate_usd_per_hour: float, margin: float = ESTIMATE_MARGIN
) -> CostEstimate:
    """Expected hours per instance x rate x instances, plus a margin."""
    if work_hours < 0 or instances < 1 or rate_usd_per_hour <= 0 or margin < 0:
        raise PriceError(
            f"cannot estimate: work_hours={work_hours}, instances={instances}, rate={rate_usd_per_hour}, "
            f"margin={margin}"
        )
    total = work_hours * rate_usd_per_hour * instances * (1 + margin)
    return CostEstimate(work_hours, instances, rate_usd_per_hour, margin, total)


def recommend_two_gpu_vendor(table: PriceTable) -> PriceRow:
    """The survey's rule: the cheapest spot tier with NVLink between the pair, else the cheapest guaranteed
    (on-demand) 2-GPU single node. Prices compare per GPU-hour."""
    pairs = [row for row in table.rows if row.provider != "aws" and row.gpus == 2]
    nvlinked_spot = [row for row in pairs if row.market == "spot" and row.nvlink_pair == "yes"]
    candidates = nvlinked_spot or [row for row in pairs if row.market == "on-demand"]
    if not candidates:
        raise PriceError(f"{table.path}: no 2-GPU rows to recommend from")
    return min(candidates, key=lambda row: (row.usd_per_hour, row.provider, row.instance_type))
