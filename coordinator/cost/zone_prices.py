"""Each of the stack's zones priced for spot, through the account's zone-ID mapping.

The price table keys spot prices by availability zone ID (`use1-az4`), the same physical zone in every
account, while a subnet names its zone (`us-east-1a`), which each account maps to an ID of its own.
`DescribeAvailabilityZones` gives this account's mapping; the fleet then tries a type's zones cheapest
first (`job/aws/capacity_pools.py`), as EC2 Fleet's price-capacity-optimized strategy prefers its
cheapest pools.
On-demand costs the same in every zone of a region: no zone price.

Usage::

    prices = ZonePrices.for_zones(PriceTable.load(), ec2, region="us-east-1", zones=["us-east-1a"])
    prices.of("spot", "c7i.xlarge", "us-east-1a")     # 0.0678, or None where the table has no row
"""

from __future__ import annotations

import logging
from typing import Any

from coordinator.cost.pricing import PriceTable
from coordinator.errors import PriceError

log = logging.getLogger("coordinator.fleet")


def zone_ids(ec2: Any, zones: list[str]) -> dict[str, str]:
    """zone name -> zone ID, in this account."""
    if not zones:
        return {}
    answer = ec2.describe_availability_zones(ZoneNames=sorted(zones))
    return {z["ZoneName"]: z["ZoneId"] for z in answer.get("AvailabilityZones", []) if z.get("ZoneId")}


class ZonePrices:
    def __init__(self, table: PriceTable, region: str, ids: dict[str, str]) -> None:
        self.table, self.region, self.ids = table, region, ids
        self._cache: dict[tuple[str, str], float | None] = {}

    @classmethod
    def for_zones(cls, table: PriceTable, ec2: Any, *, region: str, zones: list[str]) -> ZonePrices:
        """The mapping read once; where it cannot be read the zones go unpriced, with a warning (the fleet
        then spreads a type's launches over its zones in each segment's rotation)."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            ids = zone_ids(ec2, zones)
        except (BotoCoreError, ClientError) as error:
            log.warning("zone IDs unreadable (%s): the zones go unpriced", str(error)[:160])
            ids = {}
        return cls(table, region, ids)

    def of(self, market: str, instance_type: str, zone: str) -> float | None:
        """USD an hour of `market` for the type in the zone (by name); None: not known for that zone."""
        zone_id = self.ids.get(zone)
        if market != "spot" or zone_id is None:
            return None
        key = (instance_type, zone_id)
        if key not in self._cache:
            try:
                row = self.table.lookup("aws", self.region, instance_type, "spot", zone_id=zone_id)
                self._cache[key] = row.usd_per_hour
            except PriceError:
                self._cache[key] = None
        return self._cache[key]
