"""A study's summary: the optimum first, costs and deadlines met per policy."""

from __future__ import annotations

import random

import pytest

from coordinator.whatif.job import WhatIfJob
from coordinator.whatif.study import DEFAULT_POLICIES, run_study, summarise, trace_windows
from coordinator.whatif.traces import AvailabilityTrace
from tests.coordinator.whatif.conftest import TRACES


def test_study_summary_orders_the_optimum_first_and_counts_deadlines() -> None:
    trace = AvailabilityTrace.load(TRACES / "synthetic-zone.json")
    small = WhatIfJob(
        work_seconds=3600,
        deadline_seconds=7200,
        changeover_seconds=360,
        spot_usd_per_hour=1,
        on_demand_usd_per_hour=3,
    )
    windows = trace_windows(trace, small, 10, random.Random(0))
    rows = summarise(run_study(DEFAULT_POLICIES, small, windows), small)
    assert [r.policy for r in rows] == ["optimum", *DEFAULT_POLICIES]
    by_name = {r.policy: r for r in rows}
    assert by_name["on-demand"].mean_vs_on_demand == pytest.approx(1.0)
    assert all(
        r.mean_vs_optimum >= 1.0 - 1e-9 for r in rows if r.deadlines_met == 1.0
    )  # spot-only may be late and cheaper
    assert by_name["deadline"].deadlines_met == 1.0 and by_name["deadline"].runs == 10
