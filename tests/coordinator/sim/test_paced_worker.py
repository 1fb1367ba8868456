"""The simulator's hook reads the machine's pace from its environment, as the instance runtime sets it."""

from __future__ import annotations

import json
from pathlib import Path

from coordinator.sim.paced_worker import PACE_ENV, PACE_REPORT_ENV, READY_AT_ENV, PaceHook


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
