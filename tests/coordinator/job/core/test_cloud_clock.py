"""The cloud clock: scaled durations, and cloud times of wall timestamps."""

from __future__ import annotations

import pytest

from coordinator.job.core.cloud_clock import CloudClock


def test_cloud_clock_scales_durations() -> None:
    clock = CloudClock(scale=30.0, origin=1_000.0)
    assert clock.at(1_002.0) == 1_060.0
    assert clock.wall_at(1_060.0) == 1_002.0  # and back
    assert clock.wall(120.0) == 4.0 and clock.cloud(4.0) == 120.0
    assert clock.per_cloud_second(600.0) == 20.0 and clock.per_wall_second(20.0) == 600.0
    with pytest.raises(ValueError, match="positive"):
        CloudClock(scale=0)
