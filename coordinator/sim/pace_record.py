"""Simulator only: how far a run's workers fell behind their pace, recorded in its `run.json`.

Each paced worker writes `pace.json` in its machine's folder (`pace.py`): the seconds its rows
should have taken and the seconds it was still behind them when it stopped (a worker the host left behind
catches up when it can). A run whose workers ended more than `DISTORTION_SHARE` of their planned time
behind is *distorted*: its billed times measure this host, not the instance type, and the
summary and the report say so beside its figures.

Usage::

    record_pace(run_dir, emulator_latency(proxy.latencies))   # adds "pace" (and "emulator_latency")
                                                              # to run_dir/run.json; returns the pace
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path
from typing import Any

from coordinator.sim.machine import PACE_REPORT
from coordinator.sim.settings import DISTORTION_SHARE


def pace_summary(run_dir: Path) -> dict[str, Any]:
    lag = planned = worst = late = most_behind = 0.0
    workers = 0
    for report in sorted((run_dir / "workers" / "machines").glob(f"*/{PACE_REPORT}")):
        try:
            entry = json.loads(report.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a worker killed while writing: its last whole report was replaced, never torn
        workers += 1
        lag += float(entry["lag_seconds"])
        late = max(late, float(entry.get("late_start_seconds", 0.0)))
        most_behind = max(most_behind, float(entry.get("worst_lag_seconds", entry["lag_seconds"])))
        planned += float(entry["planned_seconds"])
        if entry["planned_seconds"]:
            worst = max(worst, float(entry["lag_seconds"]) / float(entry["planned_seconds"]))
    share = lag / planned if planned else 0.0
    return {
        "workers": workers,
        "lag_share": round(share, 4),
        "worst_worker_lag_share": round(worst, 4),
        "latest_start_wall_seconds": round(late, 3),  # a worker not ready by its modelled launch's end
        "most_behind_wall_seconds": round(most_behind, 3),  # on the way, made up before it stopped or not
        "distorted": share > DISTORTION_SHARE,
        "threshold": DISTORTION_SHARE,
    }


def emulator_latency(latencies: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Median and largest wall milliseconds moto took per EC2 action in a run: a matrix's later runs must
    meet the same emulator speed as its first (moto keeps every instance it ever launched)."""
    return {
        action: {
            "calls": len(seconds),
            "median_ms": round(1000 * statistics.median(seconds), 1),
            "max_ms": round(1000 * max(seconds), 1),
        }
        for action, seconds in sorted(latencies.items())
        if seconds
    }


def record_pace(run_dir: Path, latency: dict[str, dict[str, float]] | None = None) -> dict[str, Any]:
    """Add the pace summary (and the emulator's latency) to the run's `run.json`; return the summary."""
    summary = pace_summary(run_dir)
    path = run_dir / "run.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    record["pace"] = summary
    if latency is not None:
        record["emulator_latency"] = latency
    partial = path.with_name("run.json.partial")
    partial.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(partial, path)
    return summary
