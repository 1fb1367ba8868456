"""The plan: every pool that can run the job priced per policy, ranked, against the fair baseline.

For each pool (`candidates.py`): the job sized for the pool's type (`sizing.py`), every policy priced in
closed form (`estimate.py`), the pool ranked by its cheapest policy. The best `top` pools and the pinned
default (us-east-1 c7i.xlarge at the median of its zones, what `make simulate` runs) are then priced with the
matrix model: mean, 90% range, job time, deadlines met. The baseline savings are counted against is the
cheapest on-demand way to run the job over the regions considered (its own type's speed, its own sizing, its
transfer), not the same region's on-demand.

Usage::

    plan = make_plan(Job(rows=2_100_000, input_bytes=185_000_000), PriceTable.load(), Throughputs.load())
    plan.ranked[0].pool.name, plan.baseline_usd
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from coordinator.cost.pricing import PriceTable
from coordinator.errors import ConfigError
from coordinator.plan.candidates import CandidatePool, OnDemandPool, candidate_pools
from coordinator.plan.estimate import Estimate, Setup, closed_form, sampled
from coordinator.plan.sizing import Sizing, size_job
from coordinator.plan.throughput import Throughputs
from coordinator.stack.defaults import DEFAULT_INSTANCE_TYPE
from coordinator.stack.target import EMULATOR_REGION
from coordinator.whatif.boot_model import DEFAULT_BOOT_MODEL, BootModel
from coordinator.whatif.first_principles import hazard

DEFAULT_REGION = EMULATOR_REGION  # the pinned default's region: where `make simulate` prices its pools
# the task's interruption rate: 30% of spot instances reclaimed in each 5 minutes (the simulator's default)
TASK_PROBABILITY, TASK_INTERVAL = 0.3, 300.0
# S3 data transfer out to another AWS region, per GB: $0.02 from US and most EU regions (AWS S3 pricing
# page, "Data Transfer"; up to $0.09 from some regions: pass --transfer-usd-per-gb)
TRANSFER_USD_PER_GB = 0.02
DEFAULT_BATCH = 32


@dataclass(frozen=True, slots=True)
class Job:
    rows: int
    input_bytes: int
    data_region: str = DEFAULT_REGION
    deadline_seconds: float | None = None
    segments: int | None = None
    segment_seconds: float | None = None  # segments of about this much work each (instead of `segments`)
    max_instances: int | None = None
    probability: float = TASK_PROBABILITY
    interval: float = TASK_INTERVAL
    transfer_usd_per_gb: float = TRANSFER_USD_PER_GB
    batch_size: int = DEFAULT_BATCH
    boot: BootModel = DEFAULT_BOOT_MODEL

    @property
    def policies(self) -> tuple[str, ...]:
        base = ("on-demand", "spot-only", "hybrid")
        return (*base, "deadline") if self.deadline_seconds is not None else base

    def transfer_usd(self, region: str) -> float:
        return 0.0 if region == self.data_region else self.input_bytes / 1e9 * self.transfer_usd_per_gb


@dataclass(frozen=True, slots=True)
class Ranked:
    setup: Setup  # the pool and the job sized for it
    closed: dict[str, float]  # policy -> expected USD in closed form
    sampled: dict[str, Estimate] = field(default_factory=dict)

    @property
    def pool(self) -> CandidatePool:
        return self.setup.pool

    @property
    def sizing(self) -> Sizing:
        return self.setup.sizing

    @property
    def best_policy(self) -> str:
        return min(self.closed, key=lambda p: self.closed[p])


@dataclass(frozen=True, slots=True)
class Plan:
    job: Job
    ranked: list[Ranked]  # the shown pools, cheapest first
    default: Ranked | None  # the pinned default, priced the same way
    pools_priced: int
    baseline: OnDemandPool
    baseline_usd: float
    skipped: dict[str, str]


def _setup(job: Job, pool: CandidatePool, lam: float) -> Setup:
    boot = job.boot.mean("spot")
    sizing = size_job(
        rows=job.rows,
        rows_per_second=pool.throughput.rows_per_second,
        boot_seconds=boot,
        mtbi_seconds=1 / lam if lam > 0 else float("inf"),
        batch_size=job.batch_size,
        deadline_seconds=job.deadline_seconds,
        reclaim_loss_seconds=boot,
        max_instances=job.max_instances,
        segments=job.segments,
        segment_target_seconds=job.segment_seconds,
    )
    return Setup(
        pool,
        sizing,
        job.rows,
        job.boot,
        lam,
        job.batch_size,
        job.deadline_seconds,
        job.transfer_usd(pool.region),
    )


def _ranked(job: Job, pool: CandidatePool, lam: float) -> Ranked:
    """The pool with the job sized for it, every policy priced in closed form."""
    setup = _setup(job, pool, lam)
    return Ranked(setup, {p: closed_form(setup, p) for p in job.policies})


def _on_demand_usd(job: Job, pool: OnDemandPool, lam: float) -> float:
    as_pool = CandidatePool(pool.region, "", pool.instance_type, pool.price, pool.price, pool.throughput)
    return closed_form(_setup(job, as_pool, lam), "on-demand")


def make_plan(
    job: Job,
    table: PriceTable,
    figures: Throughputs,
    *,
    regions: Sequence[str] = (),
    types: Sequence[str] = (),
    local_zones: bool = False,
    top: int = 5,
    samples: int = 400,
) -> Plan:
    lam = hazard(job.probability, job.interval)
    found = candidate_pools(table, figures, regions=regions, types=types, local_zones=local_zones)
    if not found.pools or not found.on_demand:
        why = "; ".join(f"{what}: {reason}" for what, reason in sorted(found.skipped.items()))
        raise ConfigError(f"no pool can run the job ({why or 'nothing matches the filters'})")
    ranked = sorted(
        (_ranked(job, pool, lam) for pool in found.pools),
        key=lambda r: (r.closed[r.best_policy], r.pool.name),
    )
    on_demand = {(p.region, p.instance_type): (_on_demand_usd(job, p, lam), p) for p in found.on_demand}
    baseline_usd, baseline = min(on_demand.values(), key=lambda c: (c[0], c[1].region, c[1].instance_type))
    default = median_pool(table, figures, DEFAULT_REGION, DEFAULT_INSTANCE_TYPE)
    return Plan(
        job=job,
        ranked=[_sampled(job, r, samples) for r in ranked[:top]],
        default=_sampled(job, _ranked(job, default, lam), samples) if default else None,
        pools_priced=len(ranked),
        baseline=baseline,
        baseline_usd=baseline_usd,
        skipped=found.skipped,
    )


def _sampled(job: Job, ranked: Ranked, samples: int) -> Ranked:
    estimates = {p: sampled(ranked.setup, p, samples=samples) for p in job.policies}
    return Ranked(ranked.setup, ranked.closed, estimates)


def median_pool(
    table: PriceTable, figures: Throughputs, region: str, instance_type: str
) -> CandidatePool | None:
    """A type in a region at the median of its zones' spot prices, as `make simulate` bills it (the pinned
    default us-east-1 c7i.xlarge, or the matrix's own pool); None without a throughput figure."""
    figure = figures.of(instance_type)
    if figure is None:
        return None
    spot = table.lookup("aws", region, instance_type, "spot")
    on_demand = table.lookup("aws", region, instance_type, "on-demand")
    return CandidatePool(region, "median", instance_type, spot, on_demand, figure)
