"""Capacity pools: cheapest type first, each type's zones in the segment's rotation, a refused pool last
until the refusal is forgotten."""

from __future__ import annotations

from coordinator.job.aws.capacity_pools import CapacityPool, CapacityPools

SUBNETS = {"us-east-1a": "subnet-a", "us-east-1b": "subnet-b"}
PRICES = {("spot", "c7i.xlarge"): 0.07, ("spot", "m7i.xlarge"): 0.05, ("on-demand", "c7i.xlarge"): 0.18}


def price(market: str, kind: str) -> float:
    return PRICES.get((market, kind), 0.20)


def test_the_cheapest_type_is_tried_first_in_every_zone_then_the_next() -> None:
    pools = CapacityPools(SUBNETS, instance_types=["c7i.xlarge", "m7i.xlarge"], price=price)
    zones = [zone for zone, _ in pools.zones_for("seg-0003")]
    order = pools.order("seg-0003", "spot")
    assert order == [CapacityPool("m7i.xlarge", z, SUBNETS[z]) for z in zones] + [
        CapacityPool("c7i.xlarge", z, SUBNETS[z]) for z in zones
    ]
    assert pools.order("seg-0003", "on-demand")[0].instance_type == "c7i.xlarge"  # per market


def test_a_refused_pool_goes_last_and_comes_back_after_the_memory() -> None:
    now = [0.0]
    pools = CapacityPools(
        SUBNETS, instance_types=["c7i.xlarge", "m7i.xlarge"], price=price, clock=lambda: now[0]
    )
    first = pools.order("seg-0000", "spot")[0]
    pools.avoid("spot", first.instance_type, first.zone)
    assert pools.order("seg-0000", "spot")[-1] == first
    assert pools.order("seg-0000", "spot")[0].instance_type == "m7i.xlarge"  # its other zone is next
    now[0] += 181.0
    assert pools.order("seg-0000", "spot")[0] == first


def test_without_types_the_pools_are_the_templates_type_in_each_zone() -> None:
    pools = CapacityPools(SUBNETS)
    assert {p.instance_type for p in pools.order("seg-0000", "spot")} == {""}
    pools.avoid("spot", "c7i.xlarge", "us-east-1a")  # a described instance's type: the template's pools
    assert pools.order("seg-0000", "spot")[-1].zone == "us-east-1a"
    assert CapacityPools({}).order("seg-0000", "spot") == [CapacityPool("", "", "")]  # the default subnet


def test_a_zones_own_price_orders_the_pools_across_types_and_ties_keep_the_rotation() -> None:
    own = {("c7i.xlarge", "us-east-1b"): 0.03, ("m7i.xlarge", "us-east-1a"): 0.09}

    def zone_price(market: str, kind: str, zone: str) -> float | None:
        return own.get((kind, zone)) if market == "spot" else None

    pools = CapacityPools(
        SUBNETS, instance_types=["c7i.xlarge", "m7i.xlarge"], price=price, zone_price=zone_price
    )
    # c7i in us-east-1b at $0.03, then m7i's unpriced zone at its type's $0.05, c7i's other at $0.07, m7i 1a
    assert [(p.instance_type, p.zone) for p in pools.order("seg-0003", "spot")] == [
        ("c7i.xlarge", "us-east-1b"),
        ("m7i.xlarge", "us-east-1b"),
        ("c7i.xlarge", "us-east-1a"),
        ("m7i.xlarge", "us-east-1a"),
    ]
    # on-demand has no zone price: each segment's rotation spreads it as before
    firsts = {pools.order(f"seg-{n:04d}", "on-demand")[0].zone for n in range(8)}
    assert firsts == set(SUBNETS)
