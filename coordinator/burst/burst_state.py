"""What a burst is asked to do (`BurstPlan`) and what it has done so far (`BurstState`, `instance.json`).

`instance.json` is written before anything can need it: before the launch call, and again with the box's
id and boot time, so that a teardown (`teardown.py`, `spotbatch burst down`) always knows what to end.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TextIO

from coordinator.cost.pricing import ESTIMATE_MARGIN
from coordinator.errors import ConfigError

BURST_PREFIX = "spotbatch-burst-"  # every box this workflow launches is named so; strays are found by it
BOOT_TIMEOUT_SECONDS = 900.0  # Lambda boxes take "several minutes"; fifteen without SSH means it is broken
POLL_SECONDS = 5.0  # between status reads: Lambda allows about one request per second
ARTIFACT_CAP_BYTES = 50 * 1024 * 1024  # outputs, metrics, logs: anything bigger stays on the box (and dies)


@dataclass(frozen=True, slots=True, kw_only=True)
class BurstPlan:
    name: str  # spotbatch-burst-<UTC time>: the box's name and the run folder's
    provider: str
    instance_type: str
    region: str
    gpus: int
    rate_per_gpu_hour: float
    price_date: date
    planned_hours: float
    payload: Path
    ssh_key_name: str  # as registered with the provider
    ssh_private_key: Path
    run_dir: Path
    ssh_user: str = "ubuntu"
    ssh_port: int = 22
    remote_python: str = "python3"
    local_python: str = sys.executable
    remote_root: str = "spotbatch-burst"  # under the remote home; the run's folder is <root>/<name>
    smoke_command: str = "{python} burst_job.py --smoke"
    job_command: str = "{python} burst_job.py"
    artifacts: tuple[str, ...] = (
        "outputs/job/predictions.csv",
        "metrics-smoke.json",
        "metrics-job.json",
        "logs",
    )
    artifact_cap_bytes: int = ARTIFACT_CAP_BYTES
    boot_timeout: float = BOOT_TIMEOUT_SECONDS
    poll_seconds: float = POLL_SECONDS
    overrides: dict[str, str] = field(default_factory=dict)

    @property
    def estimate_usd(self) -> float:
        return self.rate_per_gpu_hour * self.gpus * self.planned_hours * (1 + ESTIMATE_MARGIN)

    @property
    def label(self) -> str:
        return f"burst {self.name} {self.provider} {self.instance_type}"

    @property
    def remote_dir(self) -> str:
        return f"{self.remote_root}/{self.name}"

    def describe(self) -> str:
        return (
            f"burst {self.name}: {self.provider} {self.instance_type} ({self.gpus} GPU) in {self.region} at "
            f"${self.rate_per_gpu_hour:.2f}/GPU-h (price of {self.price_date}), planned "
            f"{self.planned_hours:g} h -> "
            f"estimate ${self.estimate_usd:.2f} (+{ESTIMATE_MARGIN:.0%} margin); payload {self.payload}; "
            f"smoke `{self.smoke_command}`, job `{self.job_command}`; pull back {', '.join(self.artifacts)} "
            f"(cap {self.artifact_cap_bytes / 2**20:.0f} MiB); then terminate, confirm gone, log the cost"
        )


@dataclass(slots=True)
class BurstState:
    """`instance.json`: what teardown needs, written before it can be needed."""

    name: str
    provider: str
    instance_type: str
    region: str
    gpus: int
    rate_per_gpu_hour: float
    label: str
    instance_id: str | None = None
    boot_utc: str | None = None
    teardown_utc: str | None = None
    cost_usd: float | None = None
    status: str = "launching"  # launching, launched, gone, cost-logged

    def save(self, run_dir: Path) -> None:
        path = run_dir / "instance.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def load(cls, run_dir: Path) -> BurstState:
        path = run_dir / "instance.json"
        try:
            return cls(**json.loads(path.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError, TypeError) as error:
            raise ConfigError(f"{path}: no readable burst state ({error})") from None


class StepLog:
    def __init__(self, path: Path, out: TextIO | None = None) -> None:
        self.started = time.monotonic()
        self.path = path
        self.out = out

    def __call__(self, message: str) -> None:
        line = f"[{time.monotonic() - self.started:7.1f}s] {message}"
        print(line, file=self.out or sys.stdout, flush=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} {line}\n")


def now_iso() -> str:
    return f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}"
