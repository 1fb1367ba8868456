"""The worker's CPU, memory and rows/s as CloudWatch metrics, where AWS users look for them.

With `SPOTBATCH_METRICS_NAMESPACE` set (user-data sets it from the stack), a thread samples the worker's
own process every `every` seconds and at the end, and puts four metrics under the namespace, with the
dimension `Attempt=<attempt id>` (the coordinator reads them back per attempt into the ledger):

    CPUUtilization     Percent      process CPU time over wall time, over the CPUs the worker may use
    MemoryUsed         Megabytes    resident set size
    MemoryUtilization  Percent      resident set size over the machine's memory
    RowsPerSecond      Count/Second rows predicted per second since the last sample

A failed put is logged once and never stops the work. Without the variable nothing is published (a run on
a laptop, the tests of the worker alone).

Usage::

    publisher = MetricsPublisher.from_env(attempt="job-1/seg-0000/1", rows=lambda: heartbeat.rows_done,
                                          every=20.0)
    publisher.start(); ...; publisher.close()     # close() publishes a last sample
"""

from __future__ import annotations

import logging
import os
import resource
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inference.model import usable_cpus

NAMESPACE_ENV = "SPOTBATCH_METRICS_NAMESPACE"
DIMENSION = "Attempt"
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Sample:
    cpu_percent: float
    memory_mb: float
    memory_percent: float
    rows_per_s: float


def resident_mb() -> float:
    """The resident set size now (/proc), else the peak the kernel reports (other systems)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def total_memory_mb() -> float:
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class Sampler:
    """Differences since the last sample: CPU seconds and rows over wall seconds."""

    def __init__(self, rows: Callable[[], int], clock: Callable[[], float] = time.monotonic) -> None:
        self.rows, self.clock = rows, clock
        self.cpus, self.memory_total = usable_cpus(), total_memory_mb()
        self._last = (clock(), time.process_time(), rows())

    def sample(self) -> Sample:
        now, cpu, rows = self.clock(), time.process_time(), self.rows()
        wall = max(now - self._last[0], 1e-6)
        cpu_percent = 100.0 * (cpu - self._last[1]) / wall / self.cpus
        rate = (rows - self._last[2]) / wall
        self._last = (now, cpu, rows)
        memory = resident_mb()
        share = 100.0 * memory / self.memory_total if self.memory_total else 0.0
        return Sample(min(cpu_percent, 100.0), memory, share, max(rate, 0.0))


class MetricsPublisher(threading.Thread):
    def __init__(self, client: Any, namespace: str, attempt: str, sampler: Sampler, every: float) -> None:
        super().__init__(name="metrics", daemon=True)
        self.client, self.namespace, self.attempt = client, namespace, attempt
        self.sampler, self.every = sampler, every
        self._closed = threading.Event()
        self._warned = False
        self.published = 0

    @classmethod
    def from_env(cls, *, attempt: str, rows: Callable[[], int], every: float) -> MetricsPublisher | None:
        namespace = os.environ.get(NAMESPACE_ENV, "").strip()
        if not namespace or not attempt:
            return None
        import boto3

        return cls(boto3.client("cloudwatch"), namespace, attempt, Sampler(rows), every)

    def publish(self) -> None:
        sample = self.sampler.sample()
        dimensions = [{"Name": DIMENSION, "Value": self.attempt}]
        data = [
            ("CPUUtilization", sample.cpu_percent, "Percent"),
            ("MemoryUsed", sample.memory_mb, "Megabytes"),
            ("MemoryUtilization", sample.memory_percent, "Percent"),
            ("RowsPerSecond", sample.rows_per_s, "Count/Second"),
        ]
        try:
            self.client.put_metric_data(
                Namespace=self.namespace,
                MetricData=[
                    {"MetricName": name, "Dimensions": dimensions, "Value": round(value, 3), "Unit": unit}
                    for name, value, unit in data
                ],
            )
            self.published += 1
        except Exception as error:  # metrics are worth a warning, never the work
            if not self._warned:
                log.warning("metrics not published (%s); the work goes on", error)
                self._warned = True

    def run(self) -> None:
        while not self._closed.wait(self.every):
            self.publish()

    def close(self) -> None:
        self._closed.set()
        if self.is_alive():
            self.join()
        self.publish()
