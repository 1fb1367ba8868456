"""The live loop's real parts (state file, segment table, attempt book, launcher, monitor, budget guard) on a
local store, with EC2 a fake that answers launches and records terminations, and a wall clock the test
moves: for tests of what the loop's parts decide and record, without processes."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from coordinator.cost.budget import BudgetGuard
from coordinator.cost.job_quotes import JobQuotes
from coordinator.cost.pricing import PriceTable
from coordinator.job.aws.capacity_pools import CapacityPools, Placement
from coordinator.job.aws.instances import InstanceInfo
from coordinator.job.core.cloud_clock import CloudClock
from coordinator.job.core.spec import JobSpec
from coordinator.job.core.state_file import CoordinatorState
from coordinator.job.core.tables import AttemptRow
from coordinator.job.core.worker_contract import LaunchRequest
from coordinator.job.loop.attempt_book import AttemptBook
from coordinator.job.loop.launcher import Launcher
from coordinator.job.loop.monitor import Monitor
from coordinator.job.loop.policy_pass import PolicyPass
from coordinator.job.loop.segment_table import SegmentTable
from coordinator.policies.registry import driver_for, make_policy
from inference.storage import LocalStore

SUBNETS = {"us-east-1a": "subnet-a", "us-east-1b": "subnet-b"}
TYPE = "c7i.xlarge"


class FakeFleet:
    """EC2 as the loop uses it: capacity pools, launches answered in order, terminations recorded."""

    def __init__(self) -> None:
        self.pools = CapacityPools(SUBNETS, instance_types=[TYPE])
        self.launched: list[LaunchRequest] = []
        self.terminated: list[list[str]] = []  # asked, not waited for
        self.confirmed: list[list[str]] = []
        self.stopped: dict[str, str] = {}  # instance id -> its StateReason: it terminated on its own
        self.api_retries = 0

    def launch_placed(self, request: LaunchRequest, *, repeat: bool = False) -> Placement:
        self.launched.append(request)
        return Placement(f"i-{len(self.launched)}", TYPE, "us-east-1a")

    def terminate(self, instance_ids: list[str]) -> None:
        self.terminated.append(instance_ids)

    def job_instances(self, job_id: str) -> dict[str, InstanceInfo]:
        """Every instance launched, running unless it stopped (what the monitor's look at the fleet sees)."""
        ids = [f"i-{n}" for n in range(1, len(self.launched) + 1)]
        return {
            i: InstanceInfo(i, "terminated", {}, self.stopped[i])
            if i in self.stopped
            else InstanceInfo(i, "running", {})
            for i in ids
        }

    def instances(self, instance_ids: list[str]) -> dict[str, InstanceInfo]:
        return {i: info for i, info in self.job_instances("j").items() if i in instance_ids}

    def alive(self, job_id: str) -> list[str]:
        return []

    def terminate_and_confirm(self, instance_ids: list[str]) -> None:
        self.confirmed.append(instance_ids)


class Wall:
    """A clock the test moves: the job's cloud clock reads it as the wall, the monitor as its monotonic."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass(kw_only=True)
class LiveLoop:
    spec: JobSpec
    state: CoordinatorState
    store: LocalStore
    guard: BudgetGuard
    fleet: FakeFleet
    wall: Wall
    clock: CloudClock
    quotes: JobQuotes
    monitor: Monitor
    book: AttemptBook
    table: SegmentTable
    launcher: Launcher

    def policy_pass(self, policy: str | None = None) -> PolicyPass:
        driver = driver_for(make_policy(policy or self.spec.policy, **self.spec.policy_options))
        return PolicyPass(
            driver,
            table=self.table,
            launcher=self.launcher,
            monitor=self.monitor,
            spec=self.spec,
            clock=self.clock,
        )

    def launch(self, policy: str | None = None) -> None:
        """One launch pass, its calls made together as the controller makes them."""
        with self.launcher.together():
            self.policy_pass(policy).run()

    def attempt(self, segment: str = "seg-0000") -> AttemptRow:
        """The segment's active attempt (it must have one)."""
        attempt = self.table.active(segment)
        assert attempt is not None, segment
        return attempt


def live_loop(
    tmp_path: Path,
    *,
    segments: int = 1,
    policy: str = "spot-only",
    ceiling: float = 1.0,
    fleet: FakeFleet | None = None,
    **spec: object,
) -> LiveLoop:
    state = CoordinatorState(tmp_path / "state.db")
    state.create_job(
        "j", config={}, segments=[(f"seg-{i:04d}", 10 * i, 10 * i + 10) for i in range(segments)]
    )
    job = JobSpec(job_id="j", input_key="x", rows=10 * segments, segments=segments, policy=policy, **spec)  # type: ignore[arg-type]
    fleet, store, wall = fleet or FakeFleet(), LocalStore(tmp_path / "store"), Wall()
    clock = CloudClock(scale=1.0, origin=0.0, wall_time=wall)
    table = PriceTable.load()
    quotes = JobQuotes(
        {(m, TYPE): table.quote("aws", "us-east-1", TYPE, m) for m in ("spot", "on-demand")}, TYPE
    )
    guard = BudgetGuard(ceiling, tmp_path / "spend_log.jsonl")
    monitor = Monitor(
        store,
        fleet,  # type: ignore[arg-type]
        "j",
        clock=clock,
        heartbeat_timeout=60,
        boot_timeout=600,
        monotonic=wall,  # the monitor's own clock: ages are read on it alone
        segment_range=lambda segment: state.segment("j", segment).rows,
    )
    book = AttemptBook(
        job_id="j",
        state=state,
        fleet=fleet,  # type: ignore[arg-type]
        store=store,
        guard=guard,
        quotes=quotes,
        clock=clock,
        monitor=monitor,
    )
    segment_table = SegmentTable(spec=job, state=state, clock=clock, store=store, book=book, monitor=monitor)
    launcher = Launcher(
        spec=job,
        state=state,
        fleet=fleet,  # type: ignore[arg-type]
        store=store,
        guard=guard,
        quotes=quotes,
        clock=clock,
        table=segment_table,
        book=book,
    )
    return LiveLoop(
        spec=job,
        state=state,
        store=store,
        guard=guard,
        fleet=fleet,
        wall=wall,
        clock=clock,
        quotes=quotes,
        monitor=monitor,
        book=book,
        table=segment_table,
        launcher=launcher,
    )
