"""Simulator only: the matrix's job as the planner sees it, the planned pool to run it in, and the fair
baseline its bar line is drawn against.

The job a matrix stands for is its sample rows times their weight (6,000 x 350 = 2,100,000 sentences by
default), read from us-east-1 (where a user's data is assumed to be). `simulate` runs one matrix per pool:
"planned", the plan's cheapest pool (region and type: moto serves every region, with the zone IDs the
price table keys its spot prices by), and "pinned", the stack's default (us-east-1 c7i.xlarge). Each
matrix's folder keeps the fair baseline it is judged against (`fair.json`), and its bar line is drawn
against it.

Usage::

    plan = plan_for(settings)
    planned = in_pool(settings, plan, "planned", out / "planned")
    fair_for(planned, plan).write(planned.out_dir)
    bar_lines(fair_for(planned, plan), costs, reliability)
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from coordinator.build.local_parquet import rows_and_bytes
from coordinator.cost.pricing import PriceTable
from coordinator.errors import SimulationError
from coordinator.paths import SIMULATE_POOLS
from coordinator.plan.bar import Fair
from coordinator.plan.planner import Job, Plan, make_plan, median_pool
from coordinator.plan.throughput import Throughputs
from coordinator.sim.settings import SimulationSettings

SAMPLES = 100  # the plan's matrix-model runs per shown pool: the simulation measures the rest


def job_of(settings: SimulationSettings) -> Job:
    rows = settings.rows * settings.row_weight
    dataset_rows, size = rows_and_bytes(settings.dataset)  # a file, or a folder's files
    return Job(
        rows=rows,
        input_bytes=round(rows * size / max(1, dataset_rows)),
        probability=settings.interruption_probability,
        interval=settings.interruption_interval,
        boot=settings.boot_model,
    )


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


def same_wall_load(pinned: SimulationSettings, planned: SimulationSettings) -> float:
    """The time scale at which the planned type's workers ask this host for no more rows per wall second
    than the pinned type's: a type twice as fast runs at half the time scale (its matrix takes twice the
    wall time), or its workers fall behind their pace and every run is distorted (measured: c7i.2xlarge's
    ten workers at 15x ran 30-60% behind on 2 cores, where c7i.xlarge's keep within 1%)."""
    if not pinned.paced:
        return pinned.time_scale
    faster = planned.workload().wall_rows_per_second / pinned.workload().wall_rows_per_second
    return pinned.time_scale / faster if faster > 1 else pinned.time_scale


def in_pool(settings: SimulationSettings, plan: Plan, pool: str, out_dir: Path) -> SimulationSettings:
    """The matrix's settings in `pool` ("planned": the plan's cheapest, at a time scale this host can pace;
    "pinned": as given), its runs under `out_dir`; job ids carry the pool's name, MLflow stays where the
    runs folder's would be."""
    if pool not in SIMULATE_POOLS:
        raise SimulationError(f"unknown pool {pool!r}; valid: {', '.join(SIMULATE_POOLS)}")
    if pool == "planned":
        first = plan.ranked[0].pool
        moved = replace(settings, region=first.region, instance_type=first.instance_type)
        settings = replace(moved, time_scale=same_wall_load(settings, moved))
    if out_dir == settings.out_dir:
        return settings
    return replace(
        settings,
        out_dir=out_dir,
        job_prefix=f"{settings.out_dir.name}-{pool}",
        mlflow_dir=settings.tracking_dir,
    )
