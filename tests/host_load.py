"""Timeouts that follow the host: a test's timeout (pytest-timeout's, and the ones it gives the processes it
waits on) is the work's nominal time times how slow this host is while the tests run.

A timeout is there to catch a hang, and a busy host is not one: `make test` beside a CPU hog of twice the
cores failed a quick matrix at its fixed 600 s. The slowness is measured, not guessed: the share of a CPU
this process gets while it spins for a moment (its CPU time over the wall time): about 1 on a quiet host,
about a third beside a hog of twice the cores, whatever the machine's speed. Every test's pytest-timeout
is multiplied by it at collection; `scaled(seconds)` measures again (at most every `REFRESH_SECONDS`) for the
processes a test starts later.

Usage::

    subprocess.run(command, timeout=scaled(240))     # 240 s on a quiet host, more on a busy one
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from coordinator.sim.machine import PACE_REPORT

SAMPLE_SECONDS = 0.3  # long enough for the scheduler to share out a core, short beside any slow test
REFRESH_SECONDS = 30.0
MAX_SLOWNESS = 10.0  # a host that gives a process under a tenth of a core is as good as hung
_measured: tuple[float, float] | None = None  # (when, slowness)


def cpu_share(seconds: float = SAMPLE_SECONDS) -> float:
    """The share of one CPU this process got while it spun for `seconds` of wall time."""
    wall, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - wall < seconds:
        pass
    return (time.process_time() - cpu) / (time.perf_counter() - wall)


def slowness() -> float:
    """How many times longer than on a quiet host the work takes now (1 at least)."""
    global _measured
    now = time.monotonic()
    if _measured is None or now - _measured[0] > REFRESH_SECONDS:
        _measured = (now, min(MAX_SLOWNESS, max(1.0, 1.0 / max(cpu_share(), 1e-3))))
    return _measured[1]


def scaled(seconds: float) -> float:
    """A timeout of `seconds` on a quiet host, as long as this host needs now."""
    return seconds * slowness()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    factor = slowness()
    default = float(config.getini("timeout") or 300)
    for item in items:
        marker = item.get_closest_marker("timeout")
        base = float(marker.args[0]) if marker is not None and marker.args else default
        item.add_marker(pytest.mark.timeout(base * factor), append=False)  # the closest: it wins


def behind_pace(run_dir: Path, instance_id: str) -> float:
    """The most its machine's pace report says the host held its worker back (a late start included)."""
    report = run_dir / "workers" / "machines" / instance_id / PACE_REPORT
    if not report.is_file():
        return 0.0
    pace = json.loads(report.read_text(encoding="utf-8"))
    return max(float(pace.get("worst_lag_seconds", 0.0)), float(pace.get("late_start_seconds", 0.0)))
