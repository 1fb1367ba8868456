"""The planned pool's matrix runs at a time scale this host can pace: a type twice as fast as the pinned
one runs at half the time scale, so its ten workers ask for the same rows per wall second (at 15x, the
full matrix's c7i.2xlarge workers ran 30-60% behind their pace on 2 cores and every run was distorted)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from coordinator.sim.planned import same_wall_load
from coordinator.sim.settings import SimulationSettings


def test_a_faster_type_runs_at_a_lower_time_scale_for_the_same_wall_pace(tmp_path: Path) -> None:
    pinned = SimulationSettings(
        out_dir=tmp_path, model=tmp_path, dataset=tmp_path, instance_type="c7i.xlarge"
    )
    faster = replace(pinned, instance_type="c7i.2xlarge")
    scale = same_wall_load(pinned, faster)
    assert scale == pytest.approx(7.5)
    slowed = replace(faster, time_scale=scale)
    assert slowed.workload().wall_rows_per_second == pytest.approx(pinned.workload().wall_rows_per_second)
    assert same_wall_load(pinned, pinned) == 15.0  # the same type: unchanged
    assert same_wall_load(faster, pinned) == 15.0  # a slower type keeps the time scale
    assert same_wall_load(replace(pinned, paced=False), faster) == 15.0  # unpaced: as fast as the host goes
