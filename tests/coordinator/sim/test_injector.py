"""The interruption models: seeded random interruptions at the asked rate, and trace replay."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from coordinator.errors import TraceError
from coordinator.sim.injector import RandomInterruptions, TraceReplay
from coordinator.whatif.traces import AvailabilityTrace


def test_random_interruptions_are_seeded_and_match_the_rate() -> None:
    model = RandomInterruptions(0.3, 300.0)
    draws = [model.time_to_interruption(random.Random(f"7/attempt-{i}")) for i in range(20_000)]
    again = [model.time_to_interruption(random.Random(f"7/attempt-{i}")) for i in range(20_000)]
    assert draws == again
    within_interval = sum(d <= 300.0 for d in draws) / len(draws)
    assert within_interval == pytest.approx(0.3, abs=0.015)
    assert RandomInterruptions(0.0).time_to_interruption(random.Random(1)) == math.inf
    with pytest.raises(ValueError, match="probability"):
        RandomInterruptions(1.5)


def test_trace_replay_orientation_offset_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "zone.json"
    path.write_text(json.dumps({"metadata": {"gap_seconds": 60}, "data": [1, 1, 0, 1]}))
    trace = AvailabilityTrace.load(path)
    replay = TraceReplay(trace, offset=1)
    assert [replay.available_at(t) for t in (0, 59, 60, 120, 180)] == [True, True, False, True, True]
    flipped = AvailabilityTrace.load(path, one_means="preempted")
    assert flipped.available == (False, False, True, False)
    for content, message in (
        ("not json", "not a trace"),
        (json.dumps({"data": [1]}), "not a trace"),
        (json.dumps({"metadata": {"gap_seconds": 0}, "data": [1]}), "gap_seconds must be positive"),
        (json.dumps({"metadata": {"gap_seconds": 5}, "data": [1, 2]}), "found 2"),
    ):
        path.write_text(content)
        with pytest.raises(TraceError, match=message) as error:
            AvailabilityTrace.load(path)
        assert str(path) in str(error.value)


def test_the_same_seed_draws_the_same_schedule_in_every_runs_folder() -> None:
    from coordinator.job.core.cloud_clock import CloudClock
    from coordinator.sim.injector import InterruptionInjector

    def key(folder: str) -> str:
        nothing: Any = None  # the draws' key needs no EC2, machines or metadata server
        clock = CloudClock(scale=1.0, origin=0.0)
        injector = InterruptionInjector(nothing, nothing, nothing, clock, None, folder_prefix=f"{folder}-")
        return injector.schedule_key(f"{folder}-hybrid-01/seg-0003/2")

    assert key("simulate-20261206T024436Z") == key("simulate-20261206T034835Z") == "hybrid-01/seg-0003/2"
