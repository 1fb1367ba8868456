"""Hand-worked what-if jobs: 180-s ticks, 1 hour of work, a 360-s changeover, spot $1/h, on-demand $3/h."""

from __future__ import annotations

from coordinator.whatif.engine import simulate_job
from coordinator.whatif.job import Outcome, WhatIfJob
from coordinator.whatif.study import policy_for
from tests.conftest import FIXTURES

TICK = 180
TRACES = FIXTURES / "traces"


def job(deadline: int = 7200, **overrides: int) -> WhatIfJob:
    settings = {"work_seconds": 3600, "deadline_seconds": deadline, "changeover_seconds": 360, **overrides}
    return WhatIfJob(spot_usd_per_hour=1.0, on_demand_usd_per_hour=3.0, **settings)


def run(policy: str, trace: list[bool], the_job: WhatIfJob | None = None) -> Outcome:
    return simulate_job(policy_for(policy), the_job or job(), trace, TICK)
