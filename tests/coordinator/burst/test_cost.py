"""A burst's cost: whole minutes at the rate, bad times refused by name."""

from __future__ import annotations

import pytest

from coordinator.burst.cost import price_burst
from coordinator.errors import (
    BurstCostError,
)


def test_price_burst_bills_whole_minutes_and_refuses_bad_times() -> None:
    cost = price_burst(
        1.79, 1, "2026-12-02T18:00:03Z", "2026-12-02T18:21:40Z", "lambda", "gpu_1x_a100_sxm4_80gb"
    )
    assert cost.billable_hours == pytest.approx(22 / 60) and cost.cost_usd == pytest.approx(1.79 * 22 / 60)
    assert price_burst(
        1.79, 2, "2026-12-02T18:00:00Z", "2026-12-02T18:00:10Z", "lambda", "x"
    ).cost_usd == pytest.approx(2 * 1.79 / 60, abs=1e-6)
    with pytest.raises(BurstCostError, match="teardown 2026-12-02T17:00:00Z is before boot"):
        price_burst(1.79, 1, "2026-12-02T18:00:00Z", "2026-12-02T17:00:00Z", "lambda", "x")
    with pytest.raises(BurstCostError, match="boot_utc_iso='yesterday' is not an ISO 8601 time"):
        price_burst(1.79, 1, "yesterday", "2026-12-02T17:00:00Z", "lambda", "x")
