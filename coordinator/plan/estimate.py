"""What a job costs and takes in one pool under one policy: in closed form to rank every pool, then with the
matrix model (`whatif/matrix_model.py`, the model the simulator's figures are checked against) for the
pools a plan shows.

The closed forms (`whatif/first_principles.py`) give the expected bill of one segment: on-demand pays its
work and a boot; spot-only relaunches on spot after each reclaim (the reclaims during the work, and the
boots a reclaim cuts short); the hybrid puts 90% of the segments on spot and moves one to on-demand at its
first reclaim. The deadline policy has no closed form: it ranks as spot-only (it stays on spot while its
slack lasts) and the matrix model prices it. Data transfer is added to every policy: the input read from
another region than the data's.

Usage::

    setup = Setup(pool, sizing, rows=2_100_000, boot=DEFAULT_BOOT_MODEL, hazard=hazard(0.3, 300))
    closed_form(setup, "spot-only")                  # expected USD
    sampled(setup, "hybrid", samples=400)            # Estimate with a 90% range, job time, deadline share
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass

from coordinator.cost.billing import EC2_LINUX, billed_seconds, cost_usd
from coordinator.job.core import CYCLE_SECONDS, RECLAIM_OVERHEAD_SECONDS
from coordinator.plan.candidates import CandidatePool
from coordinator.plan.sizing import Sizing
from coordinator.whatif.boot_model import BootModel
from coordinator.whatif.first_principles import fallback_savings, relaunch_billed_seconds
from coordinator.whatif.matrix_model import LiveSetup, sample_run
from inference.interruption import NOTICE_POLL_SECONDS

HYBRID_SPOT_SHARE = 0.9  # the hybrid policy's default share of segments started on spot


@dataclass(frozen=True, slots=True)
class Setup:
    pool: CandidatePool
    sizing: Sizing
    rows: int
    boot: BootModel
    hazard: float  # reclaims per second of a spot instance
    batch_size: int
    deadline_seconds: float | None = None
    transfer_usd: float = 0.0

    def segment_rows(self) -> tuple[int, ...]:
        n = self.sizing.segments
        return tuple(self.rows // n + (1 if i < self.rows % n else 0) for i in range(n))

    def live(self) -> LiveSetup:
        return LiveSetup(
            segment_rows=self.segment_rows(),
            cloud_seconds_per_row=1.0 / self.pool.throughput.rows_per_second,
            batch_size=self.batch_size,
            boot=self.boot,
            time_to_interruption=self._time_to_interruption,
            spot_usd_per_hour=self.pool.spot.usd_per_hour,
            on_demand_usd_per_hour=self.pool.on_demand.usd_per_hour,
            billing=EC2_LINUX,
            cycle_seconds=CYCLE_SECONDS,
            notice_poll_seconds=NOTICE_POLL_SECONDS,
            discover_seconds=0.0,  # EC2 starts the instance itself
            reclaim_overhead_seconds=RECLAIM_OVERHEAD_SECONDS,
            deadline_seconds=self.deadline_seconds,
        )

    def _time_to_interruption(self, rng: random.Random) -> float:
        return rng.expovariate(self.hazard) if self.hazard > 0 else math.inf


@dataclass(frozen=True, slots=True)
class Estimate:
    policy: str
    mean_usd: float
    range_usd: tuple[float, float]  # 5% and 95% of one run's cost
    mean_job_seconds: float
    completed_share: float
    deadline_met_share: float | None
    samples: int


def closed_form(setup: Setup, policy: str) -> float:
    """The expected bill of the job (and its transfer) under `policy`, without sampling."""
    pool, boot = setup.pool, setup.boot.mean("spot")
    per_segment = [rows / pool.throughput.rows_per_second for rows in setup.segment_rows()]
    lam, spot, on_demand = setup.hazard, pool.spot.usd_per_hour, pool.on_demand.usd_per_hour
    if policy == "on-demand":
        total = sum(cost_usd(on_demand, billed_seconds(EC2_LINUX, 0.0, w + boot)) for w in per_segment)
    elif policy in ("spot-only", "deadline"):
        total = sum(cost_usd(spot, relaunch_billed_seconds(lam, w, boot)) for w in per_segment)
    elif policy == "hybrid":
        ratio = spot / on_demand
        total = sum(
            cost_usd(on_demand, w + boot) * (1 - fallback_savings(lam, w, boot, ratio, HYBRID_SPOT_SHARE))
            for w in per_segment
        )
    else:
        raise ValueError(f"no closed form for policy {policy!r}")
    return total + setup.transfer_usd


def sampled(setup: Setup, policy: str, *, samples: int, seed: int = 0) -> Estimate:
    """The matrix model's runs of the job: the mean, the 90% range, the job time, the deadlines met."""
    live = setup.live()
    rng = random.Random(f"plan/{seed}/{setup.pool.name}/{policy}")
    runs = [sample_run(live, policy, {}, rng) for _ in range(samples)]
    costs = sorted(r.cost_usd + setup.transfer_usd for r in runs)
    finished = [r.job_seconds for r in runs if r.job_seconds is not None]
    met = [r.deadline_met for r in runs if r.deadline_met is not None]
    cuts = statistics.quantiles(costs, n=20, method="inclusive")
    return Estimate(
        policy=policy,
        mean_usd=statistics.fmean(costs),
        range_usd=(cuts[0], cuts[-1]),
        mean_job_seconds=statistics.fmean(finished) if finished else math.inf,
        completed_share=len(finished) / samples,
        deadline_met_share=sum(met) / len(met) if met else None,
        samples=samples,
    )
