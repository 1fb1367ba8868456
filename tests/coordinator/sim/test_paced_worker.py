"""The simulator's hook reads the machine's pace from its environment, as the instance runtime sets it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from coordinator.errors import SimulationError
from coordinator.sim.machine import MachineImage, container_env
from coordinator.sim.pace import Pace
from coordinator.sim.paced_worker import PACE_ENV, PACE_REPORT_ENV, READY_AT_ENV, STALL_ENV, PaceHook, Stall
from coordinator.sim.settings import SimulationSettings


def test_a_paced_machine_waits_for_its_launch_and_reports_its_lag(tmp_path: Path) -> None:
    report = tmp_path / "pace.json"
    env = {PACE_ENV: "100", READY_AT_ENV: "1.5", PACE_REPORT_ENV: str(report)}  # ready long ago
    hook = PaceHook.from_env(env)
    assert hook.ready_at == 1.5 and hook.pace is not None and hook.pace.rows_per_second == 100
    hook.until_ready(lambda seconds: None)
    hook.after_batch(10)
    saved = json.loads(report.read_text())
    assert saved["rows_per_second"] == 100 and saved["late_start_seconds"] > 0  # started after its ready time


def test_an_unpaced_machine_only_defers_its_first_beat() -> None:
    hook = PaceHook.from_env({READY_AT_ENV: "123.0"})
    assert hook.pace is None and hook.ready_at == 123.0
    hook.until_ready(lambda seconds: None)
    hook.after_batch(10)  # nothing to keep: no error, no report
    assert PaceHook.from_env({}).ready_at is None


def test_a_stall_is_drawn_per_attempt_and_holds_the_schedule_back(tmp_path: Path) -> None:
    """`bench.ceiling`'s stalled workers: the share of attempts drawn from the seed and the attempt's id,
    each stuck once, and not caught up afterwards (the instance it stands for was stuck too)."""
    drawn = [Stall.drawn("0.3 2.5 100 7", f"job/seg-0000/{n}") for n in range(200)]
    assert 40 <= sum(s is not None for s in drawn) <= 80  # about 30% of 200
    assert drawn == [Stall.drawn("0.3 2.5 100 7", f"job/seg-0000/{n}") for n in range(200)]
    assert Stall.drawn("", "job/seg-0000/1") is None and Stall.drawn("1 2.5 100 7", "a") == Stall(2.5, 100)
    now, slept = [0.0], []

    def sleep(seconds: float) -> None:
        slept.append(round(seconds, 6))
        now[0] += seconds

    hook = PaceHook(Pace(10.0, ready_at=0.0, clock=lambda: now[0], sleep=sleep), ready_at=0.0, report="")
    hook.stall = Stall(30.0, 100)
    hook.after_batch(50)  # 5 s of rows
    hook.after_batch(100)  # 5 s more, then the stall
    hook.after_batch(150)  # the rows after it come at the pace, not at once
    assert slept == [5.0, 5.0, 30.0, 5.0] and hook.stall is None


def test_the_settings_tell_each_machine_its_slowdown_and_its_stalls(tmp_path: Path) -> None:
    plain = SimulationSettings(out_dir=tmp_path, model=tmp_path, dataset=tmp_path)
    slow = replace(plain, slowdown=2.0, stall_share=0.3, stall_seconds=900.0)
    assert STALL_ENV not in plain.machine_env()
    assert float(slow.machine_env()[PACE_ENV]) == pytest.approx(
        float(plain.machine_env()[PACE_ENV]) / 2, rel=1e-3
    )
    assert slow.machine_env()[STALL_ENV] == "0.3 60.000 200 0"  # 900 cloud s at scale 15, a third of 600 rows
    assert replace(slow, paced=False).machine_env() == {}


def test_each_machine_works_at_its_own_types_speed(tmp_path: Path) -> None:
    """Two types in one job: a c7i.2xlarge (its figure scaled 2x from the measured c7i.xlarge) is paced
    twice as fast; a type the image lists no pace for keeps the stack type's."""
    settings = SimulationSettings(
        out_dir=tmp_path, model=tmp_path, dataset=tmp_path, instance_types=("c7i.xlarge", "c7i.2xlarge")
    )
    paces = settings.pace_by_type()
    assert float(paces["c7i.2xlarge"]) == pytest.approx(2 * float(paces["c7i.xlarge"]), rel=1e-3)
    assert paces["c7i.xlarge"] == settings.machine_env()[PACE_ENV]
    image = MachineImage(files={}, extra_env=settings.machine_env(), pace_by_type=paces)

    def pace_of(kind: str) -> str:
        return container_env(image, {"env": {}}, home=str(tmp_path), hostname="m", instance_type=kind)[
            PACE_ENV
        ]

    assert pace_of("c7i.2xlarge") == paces["c7i.2xlarge"] and pace_of("m7i.xlarge") == paces["c7i.xlarge"]
    with pytest.raises(SimulationError, match=r"g5\.xlarge: no speed to simulate it at"):
        replace(settings, instance_types=("g5.xlarge",)).pace_by_type()
