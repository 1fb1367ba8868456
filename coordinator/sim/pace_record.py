"""Simulator only: how far a run's workers fell behind their pace, recorded in its `run.json`.

Each paced worker writes `pace.json` in its machine's folder (`pace.py`): the seconds its rows
should have taken and the seconds it was still behind them when it stopped (a worker the host left behind
catches up when it can). A run whose workers ended more than `DISTORTION_SHARE` of their planned time
behind is *distorted*: its billed times measure this host, not the instance type, and the
summary and the report say so beside its figures.

The coordinator and the emulator run on this host too: a cycle that starts late, or a call that waits
for the CPU, is billed at the time scale (15x) though no worker fell behind. So the finished attempts'
bills are also weighed against what the model bills them (`unmodelled_seconds`): the drawn launch
(`launch.json`, written by the runtime), the rows at the pace with the worker's lag and stalls, and one
coordinator cycle to see the end. A run with more than `UNMODELLED_SHARE` of those bills beyond that is
distorted as well (a loaded CI host billed four on-demand attempts about 30 s each more than a quiet one:
the run cost more than the model's 99.9% bound).

Usage::

    record_pace(run_dir, emulator_latency(proxy.latencies), scale=15.0, cycle_seconds=0.5)
    # adds "pace" (and "emulator_latency") to run_dir/run.json; returns the pace
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path
from typing import Any

from coordinator.cost.ledger import read_ledger
from coordinator.sim.machine import LAUNCH_REPORT, PACE_REPORT
from coordinator.sim.settings import DISTORTION_SHARE, UNMODELLED_SHARE


def pace_summary(run_dir: Path, scale: float = 1.0, cycle_seconds: float = 0.0) -> dict[str, Any]:
    reports = _pace_reports(run_dir)
    lag = planned = worst = late = most_behind = 0.0
    for entry in reports.values():
        lag += float(entry["lag_seconds"])
        late = max(late, float(entry.get("late_start_seconds", 0.0)))
        most_behind = max(most_behind, float(entry.get("worst_lag_seconds", entry["lag_seconds"])))
        planned += float(entry["planned_seconds"])
        if entry["planned_seconds"]:
            worst = max(worst, float(entry["lag_seconds"]) / float(entry["planned_seconds"]))
    share = lag / planned if planned else 0.0
    beyond, billed = unmodelled_seconds(run_dir, reports, scale, cycle_seconds)
    unmodelled = beyond / billed if billed else 0.0
    return {
        "workers": len(reports),
        "lag_share": round(share, 4),
        "worst_worker_lag_share": round(worst, 4),
        "latest_start_wall_seconds": round(late, 3),  # a worker not ready by its modelled launch's end
        "most_behind_wall_seconds": round(most_behind, 3),  # on the way, made up before it stopped or not
        "unmodelled_share": round(unmodelled, 4),  # of the finished attempts' bills
        "distorted": share > DISTORTION_SHARE or unmodelled > UNMODELLED_SHARE,
        "threshold": DISTORTION_SHARE,
        "unmodelled_threshold": UNMODELLED_SHARE,
    }


def _pace_reports(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Each machine's pace report, by instance id."""
    reports = {}
    for report in sorted((run_dir / "workers" / "machines").glob(f"*/{PACE_REPORT}")):
        try:
            reports[report.parent.name] = json.loads(report.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a worker killed while writing: its last whole report was replaced, never torn
    return reports


def unmodelled_seconds(
    run_dir: Path, reports: dict[str, dict[str, Any]], scale: float, cycle_seconds: float
) -> tuple[float, float]:
    """Cloud seconds billed for the run's finished attempts beyond what the model bills them (launch,
    rows at the pace, lag, stalls, one cycle: `scale` and `cycle_seconds` turn wall into cloud), and the
    seconds billed for them. Attempts of machines without both reports (unpaced) are left out."""
    ledger = run_dir / "ledger.jsonl"
    attempts = read_ledger(ledger)[0] if ledger.exists() else []
    beyond = billed = 0.0
    for attempt in (a for a in attempts if a.end_reason == "done"):
        pace, home = reports.get(attempt.instance_id), run_dir / "workers" / "machines" / attempt.instance_id
        if pace is None:
            continue
        try:
            launch = float(json.loads((home / LAUNCH_REPORT).read_text(encoding="utf-8"))["launch_seconds"])
            worked = float(pace["planned_seconds"]) + float(pace["lag_seconds"]) + float(pace["held_seconds"])
        except (OSError, ValueError, KeyError):
            continue
        beyond += max(0.0, attempt.billed_seconds - launch - (worked + cycle_seconds) * scale)
        billed += attempt.billed_seconds
    return beyond, billed


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


def record_pace(
    run_dir: Path,
    latency: dict[str, dict[str, float]] | None = None,
    *,
    scale: float = 1.0,
    cycle_seconds: float = 0.0,
) -> dict[str, Any]:
    """Add the pace summary (and the emulator's latency) to the run's `run.json`; return the summary."""
    summary = pace_summary(run_dir, scale, cycle_seconds)
    path = run_dir / "run.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    record["pace"] = summary
    if latency is not None:
        record["emulator_latency"] = latency
    partial = path.with_name("run.json.partial")
    partial.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(partial, path)
    return summary
