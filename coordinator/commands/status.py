"""`spotbatch status RUN_DIR`: the segments, attempts and recent events of a run folder's state."""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

from coordinator.commands.options import Subcommands
from coordinator.errors import ConfigError


def add_parser(commands: Subcommands) -> None:
    status = commands.add_parser("status", help="segments, attempts and recent events of a run folder")
    status.add_argument("run_dir", type=Path)
    status.add_argument("--events", type=int, default=10, help="how many recent events to show")
    status.set_defaults(handler=status_command)


def status_command(args: argparse.Namespace) -> int:
    from coordinator.job.core import CoordinatorState
    from coordinator.job.loop import SUMMARY_ABOVE

    path = args.run_dir / "state.db"
    if not path.is_file():
        raise ConfigError(f"{path} does not exist (not a run folder?)")
    state = CoordinatorState(path)
    try:
        for job in state.jobs():
            print(f"job {job}")
            segments = state.segments(job)
            if len(segments) > SUMMARY_ABOVE:  # thousands of segments: counts, and the ones not done
                counts = Counter(str(row.state) for row in segments)
                print("  " + ", ".join(f"{name} {count}" for name, count in sorted(counts.items())))
                rest = sorted(
                    (r for r in segments if r.state != "DONE"), key=lambda r: (-r.attempts, r.segment_id)
                )
                segments = rest[:SUMMARY_ABOVE]
                print(
                    f"  not done: {len(rest)}; the {len(segments)} with most attempts:"
                    if rest
                    else "  all done"
                )
            for row in segments:
                print(
                    f"  {row.segment_id}  [{row.start}, {row.stop})  {row.state:<13} {row.market or '-':<9} "
                    f"attempts {row.attempts}"
                )
            for event in state.events(job)[-args.events :]:
                stamp = time.strftime("%H:%M:%S", time.gmtime(event.ts))
                print(
                    f"  {stamp} {event.segment_id or '':<9} {event.from_state or '':>11} -> "
                    f"{event.to_state or '':<13} {event.reason}"
                )
    finally:
        state.close()
    return 0
