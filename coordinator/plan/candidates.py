"""The capacity pools a job could run in, from the price table: every (region, zone, type) with a spot price,
the on-demand price of the type in that region, and the type's throughput.

Left out, each with its reason in `skipped`: types the worker image cannot run (`stack/defaults.py`: V100,
Graviton, Neuron), types with no throughput figure (`throughput.py`), zones that
are not standard availability zones (Local and Wavelength Zones need opting in: `--local-zones` takes
them), and pools of a region with no on-demand price for the type (nothing to fall back on). Zones are
keyed by zone ID (`use1-az1`), whose mapping to zone names differs per account: `spotbatch run` maps them
through `DescribeAvailabilityZones`.

Usage::

    found = candidate_pools(PriceTable.load(), Throughputs.load(), regions=("us-east-1",))
    found.pools[0].spot_usd_per_row, found.skipped
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from coordinator.cost.pricing import PriceRow, PriceTable
from coordinator.plan.throughput import Throughput, Throughputs
from coordinator.stack.defaults import unsupported_reason

STANDARD_ZONE = re.compile(r"^[a-z]+\d+-az\d+$")  # use1-az1; use1-atl2-az1 is a Local Zone
PROVIDER = "aws"


@dataclass(frozen=True, slots=True)
class CandidatePool:
    region: str
    zone_id: str
    instance_type: str
    spot: PriceRow
    on_demand: PriceRow
    throughput: Throughput

    @property
    def spot_usd_per_row(self) -> float:
        return self.spot.usd_per_hour / 3600 / self.throughput.rows_per_second

    @property
    def on_demand_usd_per_row(self) -> float:
        return self.on_demand.usd_per_hour / 3600 / self.throughput.rows_per_second

    @property
    def name(self) -> str:
        return f"{self.region} {self.zone_id} {self.instance_type}"


@dataclass(frozen=True, slots=True)
class OnDemandPool:
    region: str
    instance_type: str
    price: PriceRow
    throughput: Throughput

    @property
    def usd_per_row(self) -> float:
        return self.price.usd_per_hour / 3600 / self.throughput.rows_per_second


@dataclass(slots=True)
class Candidates:
    pools: list[CandidatePool] = field(default_factory=list)
    on_demand: list[OnDemandPool] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # what -> why


def candidate_pools(
    table: PriceTable,
    figures: Throughputs,
    *,
    regions: Sequence[str] = (),
    types: Sequence[str] = (),
    local_zones: bool = False,
) -> Candidates:
    """`regions`/`types`: only these (all of the table's when empty)."""
    found = Candidates()
    rows = [
        r
        for r in table.rows
        if r.provider == PROVIDER
        and (not regions or r.region in regions)
        and (not types or r.instance_type in types)
    ]
    on_demand = {(r.region, r.instance_type): r for r in rows if r.market == "on-demand"}
    for (region, kind), row in sorted(on_demand.items()):
        figure = figures.of(kind)
        if figure is not None and unsupported_reason(kind) is None:
            found.on_demand.append(OnDemandPool(region, kind, row, figure))
    local = 0
    for row in sorted(rows, key=lambda r: (r.region, r.zone_id, r.instance_type)):
        if row.market != "spot":
            continue
        figure = figures.of(row.instance_type)
        unsupported = unsupported_reason(row.instance_type)
        if unsupported is not None or figure is None:
            found.skipped[row.instance_type] = unsupported or figures.why_not(row.instance_type)
            continue
        if not STANDARD_ZONE.match(row.zone_id) and not local_zones:
            local += 1
            continue
        fallback = on_demand.get((row.region, row.instance_type))
        if fallback is None:
            found.skipped[f"{row.region} {row.instance_type}"] = "no on-demand price there to fall back on"
            continue
        found.pools.append(CandidatePool(row.region, row.zone_id, row.instance_type, row, fallback, figure))
    if local:
        found.skipped[f"{local} Local/Wavelength Zone pools"] = "need opting in to the zone: --local-zones"
    _missing_filters(found, rows, regions, types)
    return found


def _missing_filters(
    found: Candidates, rows: list[PriceRow], regions: Sequence[str], types: Sequence[str]
) -> None:
    for region in regions:
        if not any(r.region == region for r in rows):
            found.skipped[region] = "no prices for that region in the table"
    for kind in types:
        if not any(r.instance_type == kind for r in rows):
            found.skipped[kind] = "no prices for that type in the table"
