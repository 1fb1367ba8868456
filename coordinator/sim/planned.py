"""Simulator only: the matrix's job as the planner sees it, the planned pool to run it in, and the fair
baseline its bar line is drawn against.

The job a matrix stands for is its sample rows times their weight (6,000 x 350 = 2,100,000 sentences by
default), read from us-east-1 (where a user's data is assumed to be). `simulate --planned` runs the matrix
in the plan's cheapest pool (region and type: moto serves every region, with the zone IDs the price table
keys its spot prices by); every matrix prints the bar line against the plan's fair baseline.

Usage::

    plan = plan_for(settings)
    settings = replace(settings, region=plan.ranked[0].pool.region, instance_type=...)
    bar_lines(fair_for(settings, plan), costs, reliability)
"""

from __future__ import annotations

from coordinator.cost.pricing import PriceTable
from coordinator.errors import SimulationError
from coordinator.plan.bar import Fair
from coordinator.plan.planner import Job, Plan, make_plan, median_pool
from coordinator.plan.throughput import Throughputs
from coordinator.sim.settings import SimulationSettings

SAMPLES = 100  # the plan's matrix-model runs per shown pool: the simulation measures the rest


def job_of(settings: SimulationSettings) -> Job:
    rows = settings.rows * settings.row_weight
    per_row = settings.dataset.stat().st_size / max(1, _dataset_rows(settings))
    return Job(
        rows=rows,
        input_bytes=round(rows * per_row),
        probability=settings.interruption_probability,
        interval=settings.interruption_interval,
        boot=settings.boot_model,
    )


def _dataset_rows(settings: SimulationSettings) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(settings.dataset).metadata.num_rows)


def plan_for(settings: SimulationSettings) -> Plan:
    return make_plan(job_of(settings), PriceTable.load(), Throughputs.load(), samples=SAMPLES)


def fair_for(settings: SimulationSettings, plan: Plan) -> Fair:
    """The matrix's own pool (its region's median spot price, as its runs are billed) against the plan's
    fair baseline."""
    pool = median_pool(PriceTable.load(), Throughputs.load(), settings.region, settings.instance_type)
    if pool is None:
        raise SimulationError(f"{settings.instance_type}: no throughput figure to price the matrix's pool")
    # spot-only without a reclaim: each of the matrix's segments bills its work and one boot
    work = plan.job.rows / pool.throughput.rows_per_second
    billed = work + settings.segments * plan.job.boot.mean("spot")
    boots_only = billed * pool.spot.usd_per_hour / 3600
    baseline = plan.baseline
    return Fair(
        baseline=f"{baseline.region} {baseline.instance_type} on-demand",
        baseline_per_row=baseline.usd_per_row,
        on_demand_per_row=pool.on_demand_usd_per_row,
        spot_per_row=pool.spot_usd_per_row,
        boots_only_savings=1 - boots_only / plan.baseline_usd,
    )
