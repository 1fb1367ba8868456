"""Recovery: from an interruption to the replacement's first heartbeat, and the rows done twice.

    python -m bench.recovery [--interruptions 24] [--rows 10000]

Real worker processes on the AWS stack applied to a moto server (each instance runs its rendered boot
script), spot-only with 4 segments, time scale 1 (wall = cloud seconds).
The model is a randomly initialised 12-layer, width-384 BERT built for the benchmark (predictions are
meaningless; its speed, ~60 rows/s per core, keeps workers busy long enough for 24 interruptions in a run).
Every 2 s an interruption is forced on a busy spot worker (one not already recovering), as a notice
(2-minute warning: drain, checkpoint, exit) or a hard kill (SIGKILL + terminate, no warning). Each kind
runs three times in the same process, so the ratios compare like with like:
- ours: the coordinator acting on EC2's events from the stack's queue (the injector publishes the warning
  and the state changes through the emulator's EventBridge), looking every 0.5 s;
- ours without events (`--no-events`): heartbeats and EC2's listing only, every 0.5 s;
- polling every 15 s without events (SkyPilot's managed-jobs default, which has no event source).

Per interruption: seconds from the interruption to the replacement's launch call and to its first heartbeat
as the coordinator saw it (the coordinator notices within a cycle), and rows redone (computed by the
interrupted attempt and not checkpointed). Goals: launch within 2 s of a notice; at most one batch redone per
notice; at most one checkpoint interval per hard kill.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from coordinator.build.model import build_tiny_model
from coordinator.paths import default_dataset_path
from coordinator.sim.emulator_stack import Infrastructure, emulator_infrastructure
from coordinator.sim.matrix import run_matrix
from coordinator.sim.settings import SimulationSettings

BATCH_LINE = re.compile(r"batch \d+/\d+ rows (\d+) ")
OUR_CYCLE = 0.5
SKYPILOT_CYCLE = 15.0  # sky/jobs: JOB_STATUS_CHECK_GAP_SECONDS
OURS, NO_EVENTS, POLLING = "events, every 0.5 s", "no events, every 0.5 s", "no events, every 15 s"
CASES = {OURS: (OUR_CYCLE, True), NO_EVENTS: (OUR_CYCLE, False), POLLING: (SKYPILOT_CYCLE, False)}
BATCH_SIZE = 32
CHECKPOINT_EVERY = 10  # batches: 320 rows per checkpoint interval


def measure(run_dir: Path) -> list[dict[str, Any]]:
    """Per interruption of the run: seconds to the replacement's launch and first heartbeat, and rows
    redone: rows in the interrupted worker's batch log lines minus the rows its checkpoints kept (exact,
    unlike the heartbeat's count, which lags by up to a beat)."""
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    attempts = [json.loads(line) for line in (run_dir / "ledger.jsonl").read_text().splitlines()]
    attempts = [a for a in attempts if a["kind"] == "attempt"]
    found = []
    for line in (run_dir / "interruptions.jsonl").read_text().splitlines():
        hit = json.loads(line)
        segment, at = hit["segment_id"], hit["notice_wall"]
        later = [e for e in events if e["segment_id"] == segment and e["ts"] >= at]
        launch = next((e["ts"] for e in later if e["to_state"] == "LAUNCHING"), None)
        running = next((e["ts"] for e in later if e["to_state"] == "RUNNING"), None)
        ended = next((a for a in attempts if a["attempt_id"] == hit["attempt_id"]), None)
        if launch is None or running is None or ended is None:
            continue  # interrupted as the segment finished: nothing to recover
        log = next((run_dir / "workers").glob(f"{segment}.{hit['instance_id']}.log"))
        computed = sum(int(m.group(1)) for m in BATCH_LINE.finditer(log.read_text()))
        found.append(
            {
                "kind": hit["kind"],
                "to_launch_s": launch - at,
                "to_first_heartbeat_s": running - at,
                "rows_redone": computed - ended["rows_kept"],
                "end_reason": ended["end_reason"],
            }
        )
    return found


def scenario(
    stack: Infrastructure,
    out: Path,
    model: Path,
    dataset: Path,
    *,
    hard: bool,
    cycle: float,
    use_events: bool,
    count: int,
    rows: int,
) -> list[dict[str, Any]]:
    spacing = 2.0  # wall seconds between forced interruptions (each on a segment that is not recovering)
    settings = SimulationSettings(
        out_dir=out,
        model=model,
        dataset=dataset,
        runs={"spot-only": 1},
        rows=rows,
        segments=4,
        time_scale=1.0,
        paced=False,  # what is measured is the coordinator's reaction, at the host's own speed
        interruption_probability=0.0,
        batch_size=BATCH_SIZE,
        checkpoint_every=CHECKPOINT_EVERY,
        spot_only_max_retries=count + 5,
        mlflow=False,
        cycle_seconds=cycle,
        use_events=use_events,
        forced_hard=hard,
        forced_interruptions={"spot-only-01": [2.0 + spacing * i for i in range(count)]},
    )
    (run,) = run_matrix(settings, stack)
    if not run.result.outcome.succeeded:
        raise SystemExit(f"{out}: the run did not finish: {run.result.outcome.failures}")
    return measure(run.result.run_dir)


def summarize(label: str, rows: list[dict[str, Any]]) -> dict[str, float]:
    launch = [r["to_launch_s"] for r in rows]
    beat = [r["to_first_heartbeat_s"] for r in rows]
    redone = [r["rows_redone"] for r in rows]
    summary = {
        "n": len(rows),
        "launch_median_s": statistics.median(launch),
        "launch_max_s": max(launch),
        "heartbeat_median_s": statistics.median(beat),
        "heartbeat_max_s": max(beat),
        "redone_mean": statistics.mean(redone),
        "redone_max": max(redone),
    }
    print(
        f"{label:<32} n={summary['n']:>3}  to launch: median {summary['launch_median_s']:5.2f} s, max "
        f"{summary['launch_max_s']:5.2f} s  to first heartbeat: median {summary['heartbeat_median_s']:5.2f} "
        "s, max "
        f"{summary['heartbeat_max_s']:5.2f} s  rows redone: mean {summary['redone_mean']:6.1f}, max "
        f"{summary['redone_max']}",
        flush=True,
    )
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, default=default_dataset_path())
    parser.add_argument(
        "--interruptions", type=int, default=24, help="per kind and polling interval (asked for)"
    )
    parser.add_argument("--rows", type=int, default=10_000)
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp, emulator_infrastructure(Path(tmp) / "stack") as stack:
        model = Path(tmp) / "bench-bert"
        build_tiny_model(model, layers=12, width=384)
        for hard in (False, True):
            for case, (cycle, use_events) in CASES.items():
                kind = "hard kill" if hard else "notice"
                label = f"{kind}, {case}"
                out = Path(tmp) / f"{'kill' if hard else 'notice'}-{cycle:g}-{use_events}"
                started = time.monotonic()
                rows = scenario(
                    stack,
                    out,
                    model,
                    args.dataset,
                    hard=hard,
                    cycle=cycle,
                    use_events=use_events,
                    count=args.interruptions,
                    rows=args.rows,
                )
                results[label] = summarize(label, rows)
                print(f"  ({time.monotonic() - started:.0f} s wall)", flush=True)
    print()
    for kind in ("notice", "hard kill"):
        ours = results[f"{kind}, {OURS}"]["launch_median_s"]
        for other in (NO_EVENTS, POLLING):
            theirs = results[f"{kind}, {other}"]["launch_median_s"]
            print(
                f"{kind}: time to the replacement's launch (median), {other} / ours = "
                f"{theirs / max(ours, 1e-9):.1f}x"
            )
    notice = results[f"notice, {OURS}"]
    kill = results[f"hard kill, {OURS}"]
    print(
        f"goal: launch within 2 s of a notice: max {notice['launch_max_s']:.2f} s -> "
        f"{'met' if notice['launch_max_s'] <= 2.0 else 'NOT met'}"
    )
    print(
        f"goal: <= {BATCH_SIZE} rows (one batch) redone per notice: max {notice['redone_max']} -> "
        f"{'met' if notice['redone_max'] <= BATCH_SIZE else 'NOT met'}"
    )
    interval = BATCH_SIZE * CHECKPOINT_EVERY
    print(
        f"goal: <= {interval} rows (one checkpoint interval) redone per hard kill: max {kill['redone_max']} "
        f"-> {'met' if kill['redone_max'] <= interval else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
