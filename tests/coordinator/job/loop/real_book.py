"""The real attempt book on a state file, a local store and a budget guard of the test's own, with EC2 a
fake that answers launches and records terminations: for tests of what the book's callers decide."""

from __future__ import annotations

from pathlib import Path

from coordinator.cost.budget import BudgetGuard
from coordinator.cost.pricing import PriceTable
from coordinator.job.aws.capacity_pools import CapacityPools, Placement
from coordinator.job.aws.instances import InstanceInfo
from coordinator.job.core.cloud_clock import CloudClock
from coordinator.job.core.spec import JobSpec
from coordinator.job.core.state_file import CoordinatorState
from coordinator.job.core.worker_contract import LaunchRequest
from coordinator.job.loop.attempt_book import AttemptBook
from coordinator.job.loop.monitor import Monitor
from inference.storage import LocalStore

SUBNETS = {"us-east-1a": "subnet-a", "us-east-1b": "subnet-b"}


class Fleet:
    """EC2 as the book uses it: capacity pools, launches answered in order, terminations recorded."""

    def __init__(self) -> None:
        self.pools = CapacityPools(SUBNETS, instance_types=["c7i.xlarge"])
        self.launched: list[LaunchRequest] = []
        self.terminated: list[list[str]] = []  # asked, not waited for
        self.confirmed: list[list[str]] = []

    def launch_placed(self, request: LaunchRequest, *, repeat: bool = False) -> Placement:
        self.launched.append(request)
        return Placement(f"i-{len(self.launched)}", "c7i.xlarge", "us-east-1a")

    def terminate(self, instance_ids: list[str]) -> None:
        self.terminated.append(instance_ids)

    def job_instances(self, job_id: str) -> dict[str, InstanceInfo]:
        """Every instance launched, running (what the monitor's look at the fleet sees)."""
        return {f"i-{n}": InstanceInfo(f"i-{n}", "running", {}) for n in range(1, len(self.launched) + 1)}

    def instances(self, instance_ids: list[str]) -> dict[str, InstanceInfo]:
        return {i: info for i, info in self.job_instances("j").items() if i in instance_ids}

    def terminate_and_confirm(self, instance_ids: list[str]) -> None:
        self.confirmed.append(instance_ids)


def real_book(tmp_path: Path, *, segments: int = 1, policy: str = "spot-only", **spec: object) -> AttemptBook:
    state = CoordinatorState(tmp_path / "state.db")
    state.create_job(
        "j", config={}, segments=[(f"seg-{i:04d}", 10 * i, 10 * i + 10) for i in range(segments)]
    )
    job = JobSpec(job_id="j", input_key="x", rows=10 * segments, segments=segments, policy=policy, **spec)  # type: ignore[arg-type]
    fleet, store = Fleet(), LocalStore(tmp_path / "store")
    table = PriceTable.load()
    return AttemptBook(
        spec=job,
        state=state,
        fleet=fleet,  # type: ignore[arg-type]
        store=store,
        guard=BudgetGuard(1.0, tmp_path / "spend_log.jsonl"),
        quotes={m: table.quote("aws", "us-east-1", "c7i.xlarge", m) for m in ("spot", "on-demand")},
        clock=CloudClock(scale=1.0, origin=0.0),
        monitor=Monitor(store, fleet, "j", heartbeat_timeout=60, boot_timeout=600),  # type: ignore[arg-type]
    )


def fake_fleet(book: AttemptBook) -> Fleet:
    assert isinstance(book.fleet, Fleet)
    return book.fleet
