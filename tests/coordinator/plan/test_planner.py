"""The planner's arithmetic against a case worked by hand: two regions, one type, no interruptions, a boot of
exactly 100 s, so that every figure is a product of a price and a number of seconds."""

from __future__ import annotations

import pytest

from coordinator.cost.billing import EC2_LINUX
from coordinator.cost.pricing import Market, PriceRow, PriceTable
from coordinator.plan.planner import Job, make_plan
from coordinator.plan.sizing import size_job
from coordinator.plan.throughput import Throughput, Throughputs
from coordinator.whatif.boot_model import BootModel, Phase

KIND = "c7i.xlarge"
EXACT_BOOT = BootModel(
    {"spot": (Phase("boot", 100, 100, 100),), "on-demand": (Phase("boot", 100, 100, 100),)}
)


def row(region: str, zone: str, market: Market, usd: float, kind: str = KIND) -> PriceRow:
    return PriceRow("aws", region, zone, kind, market, usd, 4, 0, "", 0, "n/a", EC2_LINUX, None, "hand-made")


TABLE = PriceTable(
    [
        row("us-east-1", "", "on-demand", 0.36),
        row("us-east-1", "use1-az1", "spot", 0.036),
        row("us-east-1", "use1-az2", "spot", 0.108),
        row("us-east-1", "use1-atl2-az1", "spot", 0.0036),  # a Local Zone: cheapest, and left out
        row("eu-south-2", "", "on-demand", 0.18),
        row("eu-south-2", "eus2-az1", "spot", 0.072),
        row("eu-south-2", "", "on-demand", 1.0, kind="p3.2xlarge"),
        row("eu-south-2", "eus2-az1", "spot", 0.1, kind="p3.2xlarge"),  # V100: the image cannot run it
    ],
    "hand-made.csv",
)
FIGURES = Throughputs({KIND: Throughput(KIND, 100.0, "given", "test")}, {})
# 90,000 rows at 100 rows/s: 900 s of work, one segment (900 s is 9 boots: boots are 10% of its bill)
JOB = Job(rows=90_000, input_bytes=1_000_000_000, probability=0.0, boot=EXACT_BOOT)


def test_the_plan_ranks_by_cost_counts_transfer_and_uses_the_cheapest_on_demand_anywhere() -> None:
    plan = make_plan(JOB, TABLE, FIGURES, samples=50)
    first, second, third = plan.ranked
    assert first.pool.name == "us-east-1 use1-az1 c7i.xlarge" and first.sizing.segments == 1
    # spot-only, no reclaim: 1,000 s (work and boot) at $0.036/h = $0.01
    assert first.closed["spot-only"] == pytest.approx(0.01)
    assert first.closed["on-demand"] == pytest.approx(0.1)  # 1,000 s at $0.36/h
    # the hybrid: 90% of segments on spot, none reclaimed: 1 - 0.9 x (1 - 0.1) of on-demand's $0.1
    assert first.closed["hybrid"] == pytest.approx(0.1 * (1 - 0.9 * 0.9))
    assert second.pool.zone_id == "use1-az2" and second.closed["spot-only"] == pytest.approx(0.03)
    # eu-south-2: 1,000 s at $0.072/h = $0.02, plus 1 GB read from us-east-1 at $0.02/GB
    assert third.pool.region == "eu-south-2" and third.closed["spot-only"] == pytest.approx(0.04)
    # the fair baseline: eu-south-2 on-demand, $0.05 and the $0.02 transfer, below us-east-1's $0.1
    assert plan.baseline.region == "eu-south-2" and plan.baseline_usd == pytest.approx(0.07)
    # the matrix model agrees with the closed form where nothing is random but the coordinator's cycle
    # (its terminate lands up to a 5-s cycle after the end: 2.5 s on average at $0.036/h)
    sampled = first.sampled["spot-only"]
    assert sampled.mean_usd == pytest.approx(0.01 + 2.5 * 0.036 / 3600, rel=0.01)
    assert sampled.completed_share == 1.0 and sampled.deadline_met_share is None
    assert plan.skipped["1 Local/Wavelength Zone pools"] == "need opting in to the zone: --local-zones"
    assert "V100" in plan.skipped["p3.2xlarge"]
    # the default prices spot at the median of the region's zones, as `make simulate` does (the Local Zone's
    # price among them): $0.036
    assert plan.default is not None and plan.default.pool.zone_id == "median"
    assert plan.default.closed["spot-only"] == pytest.approx(0.01)


def test_a_deadline_sizes_the_segments_and_adds_the_deadline_policy() -> None:
    plan = make_plan(
        Job(rows=90_000, input_bytes=1, probability=0.0, boot=EXACT_BOOT, deadline_seconds=500.0),
        TABLE,
        FIGURES,
        regions=("us-east-1",),
        samples=50,
    )
    first = plan.ranked[0]
    # 900 s of work in 500 s, less a boot and a reclaim's boot: 300 s a segment, so 3 segments
    assert first.sizing.segments == 3 and "deadline needs 3" in first.sizing.why
    assert set(first.sampled) == {"on-demand", "spot-only", "hybrid", "deadline"}
    assert first.sampled["on-demand"].deadline_met_share == 1.0  # 400 s and a cycle


def test_young_interval_and_the_bounds_of_the_segment_count() -> None:
    # MTBI of 841 s (30% per 5 minutes) and a 0.5-s checkpoint: sqrt(2 x 0.5 x 841) = 29 s, 2,900 rows
    sized = size_job(rows=10**6, rows_per_second=100, boot_seconds=100, mtbi_seconds=841, batch_size=32)
    assert sized.checkpoint_seconds == pytest.approx(29.0) and sized.checkpoint_every_batches == 91
    assert sized.segments == 10**4 // 900  # 10,000 s of work in segments of at least 900 s
    quota = size_job(
        rows=10**6, rows_per_second=100, boot_seconds=100, mtbi_seconds=841, batch_size=32, max_instances=4
    )
    assert quota.segments == 4 and "quota allows 4" in quota.why
    asked = dict(rows=10**6, rows_per_second=100, boot_seconds=100, mtbi_seconds=841, batch_size=32)
    by_work = size_job(**asked, segment_target_seconds=600)  # 10,000 s of work: 17 segments of 588 s
    assert by_work.segments == 17 and by_work.segment_seconds == pytest.approx(10_000 / 17)
    assert size_job(**asked, segment_target_seconds=600, max_instances=4).segments == 4
    tiny = size_job(
        rows=3,
        rows_per_second=1,
        boot_seconds=1,
        mtbi_seconds=841,
        batch_size=32,
        deadline_seconds=3,
        reclaim_loss_seconds=1,
    )
    assert tiny.segments == 3 and "one row each" in tiny.why
