"""Simulator only: the worker as a simulated instance runs it, at its instance type's pace.

The machine's environment says the pace (`SPOTBATCH_PACE`, rows per wall second), when the modelled launch
ends (`SPOTBATCH_READY_AT`) and where to report the lag (`SPOTBATCH_PACE_REPORT`); this module installs the
worker's host hook (`inference/host_hook.py`) from them and runs the unchanged `inference.worker.main`.
Exec mode runs `python -m coordinator.sim.paced_worker ARGS`; fork mode calls `run(ARGS)` in the child.

Usage::

    python -m coordinator.sim.paced_worker --input ... --segment-id s0003 ...
"""

from __future__ import annotations

import logging
import os
import random
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import inference.worker
from coordinator.sim.pace import Pace
from inference.host_hook import install
from inference.process_exit import exit_after

log = logging.getLogger("inference.worker")
PACE_ENV = "SPOTBATCH_PACE"  # the instance type's speed, in this host's rows per wall second
READY_AT_ENV = "SPOTBATCH_READY_AT"  # the end of the instance's modelled launch (epoch seconds)
PACE_REPORT_ENV = "SPOTBATCH_PACE_REPORT"  # where the worker reports its lag (`pace_record.py` reads it)
# `bench.ceiling`: "<share> <wall seconds> <rows> <seed>": that share of attempts (drawn from the seed, the
# segment and the attempt's number) stall for that long once they have done that many rows, beating all
# the while, as a worker stuck on a bad host or a hung read would
STALL_ENV = "SPOTBATCH_STALL"
ATTEMPT_ENV = "SPOTBATCH_ATTEMPT"  # the worker's own option, set by the user-data


class PaceHook:
    """The host hook of a simulated instance: the worker starts when the modelled launch ends and, with a
    pace, keeps the instance type's speed, writing its lag to the report after every batch."""

    def __init__(
        self, pace: Pace | None, *, ready_at: float | None, report: str, stall: Stall | None = None
    ) -> None:
        self.pace, self.report, self.stall = pace, report, stall
        self._ready_at = ready_at

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> PaceHook:
        rows_per_second = float(environ.get(PACE_ENV) or 0)
        ready_at = float(environ.get(READY_AT_ENV) or 0) or None
        pace = Pace(rows_per_second, ready_at=ready_at) if rows_per_second else None
        stall = Stall.drawn(environ.get(STALL_ENV, ""), environ.get(ATTEMPT_ENV, ""))
        return cls(pace, ready_at=ready_at, report=environ.get(PACE_REPORT_ENV, ""), stall=stall)

    @property
    def ready_at(self) -> float | None:
        return self._ready_at

    def until_ready(self, wait: Callable[[float], object]) -> None:
        # the segment is claimed when the modelled boot ends, as on EC2, where the worker starts only then
        # (a claim during the boot would stop a warned worker that is still draining)
        if self.pace is not None:
            self.pace.until_ready(wait)
            self.pace.save(self.report)

    def after_batch(self, rows: int) -> None:
        if self.pace is not None:  # the batch in hand ends at the pace, stop or not
            self.pace.after(rows)
            if self.stall is not None and rows >= self.stall.after_rows:
                log.info("stalled for %.1f s after %d rows (%s)", self.stall.seconds, rows, STALL_ENV)
                self.pace.hold(self.stall.seconds)
                self.stall = None
            self.pace.save(self.report)

    def finished(self) -> None:
        if self.pace is not None:
            log.info(
                "pace %.1f rows/s: %.1f%% behind (%.2f s)",
                self.pace.rows_per_second,
                100 * self.pace.lag_share,
                self.pace.lag_seconds,
            )


@dataclass(frozen=True, slots=True)
class Stall:
    seconds: float  # wall
    after_rows: int

    @classmethod
    def drawn(cls, setting: str, attempt: str) -> Stall | None:
        """This attempt's stall, if `setting` ("<share> <seconds> <rows> <seed>") draws one for it."""
        if not setting:
            return None
        share, seconds, rows, seed = setting.split()
        segment_and_number = attempt.split("/", 1)[-1]  # not the job: two runs of a seed stall alike
        if random.Random(f"{seed}/{segment_and_number}/stall").random() >= float(share):
            return None
        return cls(float(seconds), int(rows))


def run(argv: Sequence[str]) -> int:
    install(PaceHook.from_env(os.environ))
    return inference.worker.main(list(argv))


if __name__ == "__main__":
    exit_after(lambda: run(sys.argv[1:]))
