"""The CPU and memory each attempt used, read back from the CloudWatch metrics its worker published.

At the end of each attempt the coordinator asks CloudWatch for the attempt's metrics (`inference/metrics.py`:
namespace of the stack, dimension `Attempt`) over the attempt's wall-clock window, and appends what it got
to `<run_dir>/usage.jsonl` (a restarted coordinator keeps what it had). CloudWatch can take a minute to show
a data point, so before the ledger is written the attempts that had none are asked again. A failed read is
a warning: usage is worth knowing, never worth failing a job.

Usage::

    recorder = UsageRecorder(cloudwatch, "spotbatch", run_dir / "usage.jsonl", clock=clock)
    recorder.attempt_ended(attempt)                    # the attempt book calls it with each ended attempt
    records = recorder.fill(records)                   # AttemptRecords with cpu_percent and memory_mb
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from coordinator.cost.ledger import AttemptRecord
from coordinator.job.core import AttemptRow, CloudClock

log = logging.getLogger("coordinator.job.aws.attempt_usage")
WINDOW_MARGIN_SECONDS = 120.0  # around the attempt: clocks differ, and a sample is stamped at its put
PERIOD_SECONDS = 60  # CloudWatch's standard resolution


@dataclass(frozen=True, slots=True)
class AttemptUsage:
    cpu_percent: float  # average over the samples
    cpu_percent_max: float
    memory_mb: float  # the largest resident set seen
    memory_percent: float
    samples: int


def read_usage(
    cloudwatch: Any, namespace: str, attempt_id: str, start: float, end: float
) -> AttemptUsage | None:
    """The attempt's metrics between two wall-clock times; None if it published none."""

    def statistics(metric: str) -> list[dict[str, Any]]:
        answer = cloudwatch.get_metric_statistics(
            Namespace=namespace,
            MetricName=metric,
            Dimensions=[{"Name": "Attempt", "Value": attempt_id}],
            StartTime=datetime.fromtimestamp(start - WINDOW_MARGIN_SECONDS, UTC),
            EndTime=datetime.fromtimestamp(end + WINDOW_MARGIN_SECONDS, UTC),
            Period=PERIOD_SECONDS,
            Statistics=["Average", "Maximum", "SampleCount"],
        )
        return list(answer.get("Datapoints", []))

    cpu = statistics("CPUUtilization")
    if not cpu:
        return None
    memory = statistics("MemoryUsed")
    share = statistics("MemoryUtilization")
    samples = sum(int(p["SampleCount"]) for p in cpu)
    return AttemptUsage(
        cpu_percent=sum(p["Average"] * p["SampleCount"] for p in cpu) / samples,
        cpu_percent_max=max(p["Maximum"] for p in cpu),
        memory_mb=max((p["Maximum"] for p in memory), default=0.0),
        memory_percent=max((p["Maximum"] for p in share), default=0.0),
        samples=samples,
    )


class UsageRecorder:
    def __init__(self, cloudwatch: Any, namespace: str, path: Path, *, clock: CloudClock) -> None:
        """`clock`: the job's, to read an attempt's launch (a cloud time) as a wall-clock time."""
        self.cloudwatch, self.namespace, self.path, self.clock = cloudwatch, namespace, path, clock

    def _read(self, attempt_id: str, start: float, end: float) -> AttemptUsage | None:
        try:
            return read_usage(self.cloudwatch, self.namespace, attempt_id, start, end)
        except Exception as error:  # no permission, CloudWatch unreachable: a warning, not a failure
            log.warning("usage of %s not read: %s", attempt_id, error)
            return None

    def attempt_ended(self, attempt: AttemptRow, end_reason: str = "") -> None:
        end = time.time()
        start = self.clock.wall_at(attempt.launched_at) if attempt.launched_at is not None else end
        usage = self._read(attempt.attempt_id, start, end)
        entry = {
            "attempt_id": attempt.attempt_id,
            "start": start,
            "end": end,
            "usage": asdict(usage) if usage else None,
        }
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")

    def entries(self) -> dict[str, dict[str, Any]]:
        if not self.path.is_file():
            return {}
        found: dict[str, dict[str, Any]] = {}
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
                found[str(entry["attempt_id"])] = entry
            except (json.JSONDecodeError, KeyError, TypeError):
                continue  # a line torn by a kill: that attempt is asked again below
        return found

    def fill(self, records: list[AttemptRecord]) -> list[AttemptRecord]:
        entries = self.entries()
        filled = []
        for record in records:
            entry = entries.get(record.attempt_id)
            usage = AttemptUsage(**entry["usage"]) if entry and entry.get("usage") else None
            if usage is None and entry is not None:  # CloudWatch may show it now
                usage = self._read(record.attempt_id, entry["start"], entry["end"])
            if usage is not None:
                record = replace(
                    record, cpu_percent=round(usage.cpu_percent, 1), memory_mb=round(usage.memory_mb, 1)
                )
            filled.append(record)
        return filled
