"""Prices: the table shipped in the repo (live prices: `live_prices.py`), and job estimates.

`prices.csv` (beside this file) has one row per provider, region, instance type and market, in USD per
instance-hour for EC2 and per GPU-hour for GPU clouds (`gpus` says how many GPUs an instance has), with
the billing rule, the snapshot date and the source of every figure.

Usage::

    table = PriceTable.load()
    row = table.lookup("aws", "us-east-1", "c7i.xlarge", "spot")             # median of the zones
    quote = table.quote("aws", "us-east-1", "c7i.xlarge", "on-demand")      # rate, source, billing
    estimate = estimate_job_cost(work_hours=2.0, instances=10, rate_per_hour=row.instance_usd_per_hour)
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Literal

from coordinator.cost.billing import BillingRule, rule_named
from coordinator.errors import PriceError

Market = Literal["spot", "on-demand"]
MARKETS: tuple[Market, ...] = ("spot", "on-demand")
COLUMNS = (
    "provider",
    "region",
    "availability_zone_id",
    "instance_type",
    "market",
    "usd_per_hour",
    "vcpus",
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


@dataclass(frozen=True, slots=True)
class PriceRow:
    provider: str
    region: str
    zone_id: str  # spot rows of EC2: the availability zone ID (use1-az1); "" for a region-wide price
    instance_type: str
    market: Market
    usd_per_hour: float  # per instance-hour (EC2) or per GPU-hour (GPU clouds with gpus > 1)
    vcpus: int  # 0 where the source does not say
    gpus: int
    gpu_model: str
    gpu_memory_gb: int
    nvlink_pair: str  # "yes", "no" or "n/a" (one GPU)
    billing: BillingRule
    snapshot_date: date | None  # None: the source carries no date (pre-flight then wants a live price)
    source: str

    @property
    def instance_usd_per_hour(self) -> float:
        """What one instance costs per hour: GPU clouds quote per GPU."""
        return self.usd_per_hour * (self.gpus if self.provider != "aws" else 1)


@dataclass(frozen=True, slots=True)
class PriceQuote:
    rate_usd_per_hour: float
    source: str  # "table <date>: <source>", or the live call and what it read (`live_prices.py`)
    billing: BillingRule
    snapshot_date: date | None = None  # the table row's date (None: undated, or live)
    live: bool = False  # read from AWS now


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
            zone_id=raw["availability_zone_id"],
            instance_type=raw["instance_type"],
            market=market,
            usd_per_hour=price,
            vcpus=int(raw["vcpus"] or 0),
            gpus=int(raw["gpus"]),
            gpu_model=raw["gpu_model"],
            gpu_memory_gb=int(raw["gpu_memory_gb"]),
            nvlink_pair=raw["nvlink_pair"],
            billing=rule_named(raw["billing"]),
            snapshot_date=date.fromisoformat(raw["snapshot_date"]) if raw["snapshot_date"] else None,
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
        try:
            lines = Path(source).read_text(encoding="utf-8").splitlines()
        except OSError as error:
            raise PriceError(f"{source}: cannot read the price table ({error.strerror})") from None
        numbered = [(n, line) for n, line in enumerate(lines, start=1) if not line.startswith("#")]
        reader = csv.DictReader(line for _, line in numbered)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise PriceError(f"{source}: columns {reader.fieldnames} are not {list(COLUMNS)}")
        rows = [_parse_row(f"{source}:{numbered[i][0]}", raw) for i, raw in enumerate(reader, start=1)]
        return cls(rows, str(source))

    def lookup(
        self, provider: str, region: str, instance_type: str, market: str, zone_id: str | None = None
    ) -> PriceRow:
        """The row for a market; EC2 spot is per zone: `zone_id`'s row, or without one the median over
        the region's zones (a row whose source says so)."""
        rows = [
            row
            for row in self.rows
            if (row.provider, row.region, row.instance_type, row.market)
            == (provider, region, instance_type, market)
            and (zone_id is None or row.zone_id == zone_id)
        ]
        if not rows:
            where = f"{region}" + (f" zone {zone_id}" if zone_id else "")
            raise PriceError(
                f"{self.path}: no {market} price for {provider} {instance_type} in {where}; "
                f"types with prices there: {', '.join(self.instance_types(provider, region)) or 'none'}"
            )
        if len(rows) == 1:
            return rows[0]
        prices = sorted(row.usd_per_hour for row in rows)
        middle = len(prices) // 2
        median = prices[middle] if len(prices) % 2 else (prices[middle - 1] + prices[middle]) / 2
        zones = ", ".join(sorted(row.zone_id for row in rows))
        return replace(
            rows[0],
            zone_id="",
            usd_per_hour=round(median, 6),
            source=f"median of {len(rows)} zones ({zones}); {rows[0].source.split(', ', 2)[-1]}",
        )

    def instance_types(self, provider: str, region: str) -> list[str]:
        return sorted({r.instance_type for r in self.rows if (r.provider, r.region) == (provider, region)})

    def vcpus(self, instance_type: str) -> int:
        """vCPUs of an EC2 type (the quota pre-flight counts them); `PriceError` if the table lacks it."""
        counts = {r.vcpus for r in self.rows if r.provider == "aws" and r.instance_type == instance_type}
        counts.discard(0)
        if len(counts) != 1:
            raise PriceError(f"{self.path}: no vCPU count for {instance_type}")
        return counts.pop()

    def gpus(self, provider: str, instance_type: str) -> int:
        """GPUs of a type (0 for a CPU type or one the table lacks: the ledger counts, it does not price)."""
        counts = {r.gpus for r in self.rows if r.provider == provider and r.instance_type == instance_type}
        return counts.pop() if len(counts) == 1 else 0

    def quote(self, provider: str, region: str, instance_type: str, market: str) -> PriceQuote:
        row = self.lookup(provider, region, instance_type, market)
        dated = row.snapshot_date.isoformat() if row.snapshot_date else "of unknown date"
        return PriceQuote(
            row.instance_usd_per_hour, f"table {dated}: {row.source}", row.billing, row.snapshot_date
        )


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
