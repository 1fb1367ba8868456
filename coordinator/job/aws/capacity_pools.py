"""Capacity pools: where a launch of a market is tried, in order.

A pool is (instance type, zone): EC2's unit of spot capacity. The stack gives a subnet per zone; the job
gives its instance types (one by default: the launch template's) and their prices. A segment's launch
tries the pools cheapest first, as EC2 Fleet's price-capacity-optimized strategy prefers the cheapest
pools that have capacity: by the zone's own price where it is known (spot, through the account's
zone-ID mapping: `cost/zone_prices.py`), else by the market's price of the type; pools of one price in
an order rotated by the segment, stable, so that one zone's reclaim does not take every segment at
once. A pool that refused capacity, or whose instance had a rebalance recommendation, is tried last for
`REFUSAL_MEMORY_SECONDS` (Karpenter keeps an unavailable offering out for three minutes), so the next
launches go straight to the pools that may have some.

Usage::

    pools = CapacityPools({"us-east-1a": "subnet-1", "us-east-1b": "subnet-2"},
                          instance_types=["c7i.xlarge", "m7i.xlarge"], price=lambda market, kind: ...)
    for pool in pools.order("seg-0003", "spot"):      # CapacityPool(instance_type, zone, subnet)
        ...
    pools.avoid("spot", "m7i.xlarge", "us-east-1b")   # refused: last for three minutes
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import NamedTuple

REFUSAL_MEMORY_SECONDS = 180.0  # Karpenter's unavailable-offerings cache: 3 minutes


class CapacityPool(NamedTuple):
    instance_type: str  # "" the launch template's own
    zone: str  # "" the default subnet (a stack without subnets)
    subnet: str


class Placement(NamedTuple):
    """Where a launch landed: the instance and its pool ("" type: the template's). `launch_time`: EC2's
    LaunchTime (epoch seconds) of an instance found again after a restart, which bills from then; None for
    the answer of the launch just made (it bills from now)."""

    instance_id: str
    instance_type: str
    zone: str
    launch_time: float | None = None


class CapacityPools:
    def __init__(
        self,
        subnets: dict[str, str],
        *,
        instance_types: list[str] | None = None,
        price: Callable[[str, str], float] | None = None,
        zone_price: Callable[[str, str, str], float | None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`instance_types` None or empty: the template's type only. `price(market, type)`: USD an hour
        (None: the types in the order given); `zone_price(market, type, zone)`: the zone's own, where
        known (None: the type's). `clock`: the job's (cloud seconds in the simulator)."""
        self.subnets = dict(sorted(subnets.items()))  # zone -> subnet, in zone order
        self.instance_types = list(instance_types or [""])
        self.price = price
        self.zone_price = zone_price
        self.clock = clock
        self.refused_until: dict[tuple[str, str, str], float] = {}  # (market, type, zone) -> last until

    def avoid(self, market: str, instance_type: str, zone: str) -> None:
        """Try the pool last for `market` for a while (a refusal, or its capacity is at risk). A type that is
        not one of the pools' (the template's own, named) stands for the template's pools."""
        instance_type = instance_type if instance_type in self.instance_types else ""
        self.refused_until[(market, instance_type, zone)] = self.clock() + REFUSAL_MEMORY_SECONDS

    def zones_for(self, segment_id: str, market: str = "", instance_type: str = "") -> list[tuple[str, str]]:
        """The stack's (zone, subnet) pairs, starting at a zone picked by the segment; the zones whose pool
        of `instance_type` refused `market` recently moved to the end."""
        pairs = list(self.subnets.items())
        if not pairs:
            return []
        first = int(hashlib.sha256(segment_id.encode()).hexdigest(), 16) % len(pairs)
        rotated = pairs[first:] + pairs[:first]
        now = self.clock()
        return sorted(rotated, key=lambda pair: self._refused(market, instance_type, pair[0], now))

    def order(self, segment_id: str, market: str) -> list[CapacityPool]:
        """Every pool for a launch of `market`: the ones not refused recently first, cheapest first (the
        zone's price, else the type's), ties in the job's order of types, then in the segment's rotation
        of zones."""
        now = self.clock()
        ranked = []
        for rank, kind in enumerate(self.instance_types):
            price = self.price(market, kind) if self.price is not None else 0.0
            for position, (zone, subnet) in enumerate(self.zones_for(segment_id) or [("", "")]):
                refused = self._refused(market, kind, zone, now)
                own = self.zone_price(market, kind, zone) if self.zone_price is not None else None
                key = (refused, price if own is None else own, rank, position)
                ranked.append((key, CapacityPool(kind, zone, subnet)))
        return [pool for _, pool in sorted(ranked)]

    def _refused(self, market: str, instance_type: str, zone: str, now: float) -> bool:
        return self.refused_until.get((market, instance_type, zone), 0.0) > now
