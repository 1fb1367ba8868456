"""Bench only: `bench.bigjob`'s stand-in for the fleet and the controller, launching attempts as forked
processes (`bigjob_worker.py`), warning the drawn ones, relaunching the drained, reading heartbeats.

Usage::

    stats = Scheduler(args, segments, tmp).run()      # every segment done; the coordinator's CPU per cycle
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import signal
import statistics
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.bigjob_worker import run_attempt
from coordinator.job.core import Segment
from coordinator.job.loop import HeartbeatReader
from inference.config import WorkerConfig
from inference.layout import job_prefix
from inference.s3_store import S3Store

BUCKET, JOB = "bigjob", "bigjob-1"


@dataclass
class Attempt:
    process: Any
    segment: Segment
    report: Path
    warn_at: float | None


@dataclass
class RunStats:
    cycles: list[float] = field(default_factory=list)  # the coordinator's CPU per cycle
    reports: list[dict[str, Any]] = field(default_factory=list)
    warned: int = 0
    rows_per_s: list[float] = field(default_factory=list)


class Scheduler:
    """Stands in for the fleet and the controller: launches pending segments `workers` at a time, warns
    the drawn ones, reaps the ended ones, relaunches the drained; reads changed heartbeats every cycle."""

    def __init__(self, args: argparse.Namespace, segments: list[Segment], tmp: Path) -> None:
        self.args, self.tmp = args, tmp
        self.pending, self.running = list(reversed(segments)), dict[str, Attempt]()
        self.tries: Counter[str] = Counter()
        self.random = random.Random(args.seed)
        self.stats = RunStats()
        self.context = multiprocessing.get_context("forkserver")
        self.context.set_forkserver_preload(["bench.bigjob_worker", "bench.bigjob_warm"])
        self.reader = HeartbeatReader(S3Store(BUCKET, job_prefix(JOB)))

    def run(self) -> RunStats:
        while self.pending or self.running:
            started = time.process_time()
            self.reader.changed(list(self.running))
            self._reap()
            while self.pending and len(self.running) < self.args.workers:
                self._launch(self.pending.pop())
            self.stats.cycles.append(time.process_time() - started)
            time.sleep(self.args.cycle_seconds)
        return self.stats

    def _expected_seconds(self, segment: Segment) -> float:
        rate = statistics.median(self.stats.rows_per_s) if self.stats.rows_per_s else 2_000.0
        return segment.rows / rate

    def _launch(self, segment: Segment) -> None:
        self.tries[segment.segment_id] += 1
        number = self.tries[segment.segment_id]
        if number > 8:
            raise SystemExit(f"{segment.segment_id}: 8 attempts did not finish it; see {self.tmp}")
        fields = asdict(
            WorkerConfig(
                input_uri=segment.input_uri,
                start=segment.start,
                stop=segment.stop,
                segment_id=segment.segment_id,
                output_prefix=f"s3://{BUCKET}/{job_prefix(JOB)}",
                model="cheap-stand-in",
                batch_size=self.args.batch_size,
                checkpoint_every=self.args.checkpoint_every,
                instance_id=f"i-{segment.segment_id}-{number}",
                market="spot",
                attempt=f"{JOB}/{segment.segment_id}/{number}",
                heartbeat_every=1.0,
                steady_heartbeat_every=5.0,
                poll_notices=False,
            )
        )
        report = self.tmp / f"{segment.segment_id}.{number}.json"
        process = self.context.Process(target=run_attempt, args=(fields, str(report)))
        process.start()
        warn = self.random.random() < self.args.interruption_probability
        at = time.time() + self.random.random() * self._expected_seconds(segment) if warn else None
        self.running[segment.segment_id] = Attempt(process, segment, report, at)

    def _reap(self) -> None:
        for segment_id, attempt in list(self.running.items()):
            if attempt.process.exitcode is None:
                if attempt.warn_at is not None and time.time() >= attempt.warn_at:
                    os.kill(attempt.process.pid, signal.SIGTERM)  # a spot notice: the worker drains
                    attempt.warn_at, self.stats.warned = None, self.stats.warned + 1
                continue
            attempt.process.join()
            del self.running[segment_id]
            lost: dict[str, Any] = {"state": "lost"}
            report = json.loads(attempt.report.read_text()) if attempt.report.exists() else lost
            self.stats.reports.append(report)
            if report["state"] != "done":
                self.pending.append(attempt.segment)
            elif report.get("seconds"):
                self.stats.rows_per_s.append(float(report["rows_done"]) / float(report["seconds"]))
