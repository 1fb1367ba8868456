"""Traces: loading and orientation, windows, and the run-length model."""

from __future__ import annotations

import random

import pytest

from coordinator.errors import TraceError, WhatIfError
from coordinator.whatif.job import WhatIfJob
from coordinator.whatif.study import trace_windows
from coordinator.whatif.traces import AvailabilityTrace, RunLengths, random_availability
from tests.coordinator.whatif.conftest import TRACES


def test_traces_windows_and_run_lengths() -> None:
    trace = AvailabilityTrace.load(TRACES / "synthetic-zone.json")
    assert trace.gap_seconds == 195 and len(trace.available) == 400
    flipped = AvailabilityTrace.load(TRACES / "synthetic-zone.json", one_means="preempted")
    assert all(a != b for a, b in zip(trace.available, flipped.available, strict=True))
    runs = RunLengths.of(trace)
    assert min(runs.available) >= 5 and max(runs.unavailable) <= 20
    assert sum(runs.available) + sum(runs.unavailable) == 400
    assert len(runs.sample(1000, random.Random(1))) == 1000
    short = WhatIfJob(
        work_seconds=36_000,
        deadline_seconds=43_200,
        changeover_seconds=360,
        spot_usd_per_hour=1,
        on_demand_usd_per_hour=3,
    )
    with pytest.raises(
        WhatIfError, match=r"trace synthetic-zone: 21.7 h is too short for a deadline of 12 h"
    ):
        trace_windows(trace, short, 3, random.Random(0))
    with pytest.raises(TraceError, match="interruption probability must be in"):
        random_availability(1.5, 300, 195, 10, random.Random(0))
    shares = random_availability(0.3, 300, 300, 20_000, random.Random(3))
    assert 1 - sum(shares) / len(shares) == pytest.approx(0.3, abs=0.015)
