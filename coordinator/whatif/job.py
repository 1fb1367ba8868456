"""A what-if job (its work, deadline, changeover and prices) and the outcome of simulating it.

Usage::

    job = WhatIfJob(work_seconds=36_000, deadline_seconds=43_200, changeover_seconds=360,
                    spot_usd_per_hour=0.918, on_demand_usd_per_hour=3.06)
    job.all_on_demand_usd          # the baseline every policy is compared with
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from coordinator.cost.pricing import Market
from coordinator.errors import WhatIfError

MIN_BILLED_SECONDS = 60  # EC2 Linux: per second after the first minute


@dataclass(frozen=True, slots=True, kw_only=True)
class WhatIfJob:
    work_seconds: int  # the whole job at one instance's speed
    deadline_seconds: int  # from the start
    changeover_seconds: int  # boot + model load before the first row
    spot_usd_per_hour: float
    on_demand_usd_per_hour: float
    instances: int = 1
    checkpoint_seconds: int = 0  # work between checkpoints; 0: a reclaim's notice drains, nothing is lost
    # EC2's rebalance recommendation comes this long before a reclaim; > 0: the replacement starts on it
    rebalance_lead_seconds: int = 0

    def __post_init__(self) -> None:
        for field in ("work_seconds", "deadline_seconds", "instances"):
            if getattr(self, field) <= 0:
                raise WhatIfError(f"{field} must be positive, got {getattr(self, field)}")
        for field in ("changeover_seconds", "checkpoint_seconds", "rebalance_lead_seconds"):
            if getattr(self, field) < 0:
                raise WhatIfError(f"{field} must be >= 0, got {getattr(self, field)}")
        for field in ("spot_usd_per_hour", "on_demand_usd_per_hour"):
            value = getattr(self, field)
            if not (math.isfinite(value) and value > 0):
                raise WhatIfError(f"{field} must be a positive price, got {value}")
        if self.segment_work_seconds + self.changeover_seconds > self.deadline_seconds:
            raise WhatIfError(
                f"deadline_seconds={self.deadline_seconds} is shorter than one segment on on-demand "
                f"({self.segment_work_seconds} s of work + {self.changeover_seconds} s changeover): no "
                "policy can meet it"
            )

    @property
    def segment_work_seconds(self) -> int:
        return math.ceil(self.work_seconds / self.instances)

    def price(self, market: Market) -> float:
        return self.spot_usd_per_hour if market == "spot" else self.on_demand_usd_per_hour

    @property
    def all_on_demand_usd(self) -> float:
        """The baseline: every segment on one on-demand instance from start to end."""
        seconds = max(MIN_BILLED_SECONDS, self.segment_work_seconds + self.changeover_seconds)
        return self.instances * self.on_demand_usd_per_hour * seconds / 3600


@dataclass(frozen=True, slots=True)
class Outcome:
    cost_usd: float
    finish_seconds: float | None  # None: not done within the availability sequence
    deadline_met: bool
    interruptions: int
    redone_seconds: float  # work lost to reclaims and done again
    spot_seconds: float  # billed
    on_demand_seconds: float
    changeovers: int
    work_left_seconds: float  # > 0 only when not done within the availability sequence
