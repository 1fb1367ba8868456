"""`spotbatch simulate`: the experiment matrix on the embedded AWS, with real workers and real interruptions.

Emulator up and stack applied (moto + Terraform), the dataset uploaded to the stack's bucket, then for
each configuration (on-demand, spot-only, hybrid) N runs of the same job, each with its own job id and
run folder: the coordinator (`jobs.run_job`, the code a real run uses) launches from the templates through
a fault-injecting proxy; the instance runtime boots a worker process per running instance; the injector
interrupts spot instances (random model or a replayed trace) with a notice, then terminate and kill. At the
end the project's instances are re-listed (none may be alive), the stack destroyed and moto stopped.

Usage::

    results = simulate(SimulationSettings(out_dir=Path("runs/simulate-1"), model=..., dataset=...))
"""

from __future__ import annotations

import json
import logging
import random
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from botocore.config import Config

from coordinator.cost.budget import BudgetGuard
from coordinator.cost.ledger import default_tracking_uri, log_to_mlflow, read_ledger
from coordinator.errors import SimulationError
from coordinator.job.clock import CloudClock
from coordinator.job.instances import list_instances
from coordinator.job.launch_contract import TAG_SEGMENT
from coordinator.job.runner import CloudTarget, RunResult, run_job
from coordinator.job.spec import JobSpec
from coordinator.job.status import SegmentStatus
from coordinator.policies.deadline import DEFAULT_RESERVE_HOURS
from coordinator.sim.emulator import emulator_session
from coordinator.sim.emulator_stack import Infrastructure, emulator_infrastructure
from coordinator.sim.fault_proxy import FaultProxy, FaultRule
from coordinator.sim.injector import InterruptionInjector, RandomInterruptions, TraceReplay
from coordinator.sim.instance_runtime import InstanceRuntime, WorkerSettings
from coordinator.sim.metadata_server import MetadataServer
from coordinator.sim.worker_boot import BootMode
from coordinator.whatif.traces import AvailabilityTrace
from inference.dataset import write_dataset
from inference.layout import dataset_key

CONFIGURATIONS = ("on-demand", "spot-only", "hybrid", "deadline")
DATASET_KEY = dataset_key("sentences.parquet")
# Wall-clock settings of a simulated run, chosen for 10 workers sharing 2 cores (see README, "make simulate")
# Every poll is a request to moto or the metadata server, and those share the 2 cores with the workers:
# polling 2-3x faster than this cost about a third of the CPU in a trial (53 s instead of ~30 s per run).
CYCLE_SECONDS = 0.5  # the coordinator looks twice a wall second: every 15 cloud seconds at scale 30
HEARTBEAT_EVERY = 1.0  # wall: a beat every 30 cloud seconds at scale 30
NOTICE_POLL_EVERY = 0.5  # wall: a notice is seen within 15 cloud seconds of its 120
HEARTBEAT_TIMEOUT = 8.0  # wall: 8 missed beats (4 cloud minutes at scale 30)
BOOT_TIMEOUT = 60.0  # wall: a forked worker heartbeats within 1-5 s even on a loaded machine
CHANGEOVER = 3.0  # wall: a forked worker's launch to first heartbeat, planned until the job measures it
# wall: what a reclaim costs before the replacement is launched: the notice poll, the batch in hand, the
# draining heartbeat, a coordinator cycle
RECLAIM_OVERHEAD = NOTICE_POLL_EVERY + 1.0 + HEARTBEAT_EVERY + CYCLE_SECONDS
log = logging.getLogger("coordinator.sim.matrix")


@dataclass(frozen=True, slots=True, kw_only=True)
class SimulationSettings:
    out_dir: Path
    model: Path
    dataset: Path
    runs: dict[str, int] = field(
        default_factory=lambda: {"on-demand": 3, "spot-only": 8, "hybrid": 8, "deadline": 8}
    )
    rows: int = 10_000
    segments: int = 10
    time_scale: float = 30.0  # a 2-minute notice is 4 wall seconds: a loaded worker drains in time
    interruption_probability: float = 0.3
    interruption_interval: float = 300.0  # cloud seconds
    trace: Path | None = None  # replay this availability trace instead of the random model
    trace_one_means: str = "available"
    seed: int = 0
    boot: BootMode = "fork"
    batch_size: int = 64
    checkpoint_every: int = 10  # batches: 640 rows, a few cloud minutes of work on a shared core
    spot_share: float = 0.9
    spot_only_max_retries: int = 10
    hybrid_max_spot_retries: int = 0
    budget_usd: float = 2_000.0  # simulated dollars: the matrix's own ceiling, in its own spend log
    spend_log: Path | None = (
        None  # default <out_dir>/spend_log.jsonl: simulated dollars stay out of the real log
    )
    planned_rows_per_s: float = 50.0  # wall rows/s of one worker among ten on 2 cores, for first estimates
    mlflow: bool = True
    faults: tuple[FaultRule, ...] = ()  # extra proxy rules (tests): throttling, 500s, capacity
    forced_interruptions: dict[str, list[float]] = field(default_factory=dict)
    # run name -> cloud seconds after the start at which to interrupt one running spot instance (tests)
    forced_hard: bool = False  # forced interruptions are hard kills (SIGKILL + terminate), not notices
    cycle_seconds: float = CYCLE_SECONDS  # the coordinator's look interval (wall)
    # the deadline configuration's deadline: this many times the mean on-demand job time of the same matrix
    # (measured first, so it follows the machine's speed), or a fixed number of cloud seconds
    deadline_factor: float = 1.5
    deadline_seconds: float | None = None
    deadline_reserve_hours: float = DEFAULT_RESERVE_HOURS

    def policy_options(self, config: str) -> dict[str, float]:
        if config == "spot-only":
            return {"max_spot_retries": self.spot_only_max_retries}
        if config == "hybrid":
            return {"spot_share": self.spot_share, "max_spot_retries": self.hybrid_max_spot_retries}
        if config == "deadline":
            return {"reserve_hours": self.deadline_reserve_hours}
        return {}

    def describe_interruptions(self) -> str:
        if self.trace:
            return f"trace replay {self.trace.name} (1 = {self.trace_one_means}), random offset per run"
        return RandomInterruptions(self.interruption_probability, self.interruption_interval).describe()


@dataclass(frozen=True, slots=True)
class SimulatedRun:
    name: str
    configuration: str
    result: RunResult
    interruptions: int


def ec2_client(env: dict[str, str], endpoint: str) -> Any:
    """The coordinator's EC2 client: botocore's own retries off, so the fleet's retries are the only ones."""
    return emulator_session(env).client(
        "ec2", endpoint_url=endpoint, config=Config(retries={"total_max_attempts": 1, "mode": "standard"})
    )


def upload_dataset(s3: Any, bucket: str, dataset: Path, rows: int) -> int:
    """Upload the first `rows` rows of the dataset (in its 500-row groups) to the bucket; return the count."""
    table = pq.read_table(dataset)
    if rows > table.num_rows:
        raise SimulationError(f"{dataset}: asked for {rows} rows, the dataset has {table.num_rows}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sentences.parquet"
        write_dataset(table.slice(0, rows), path)
        s3.upload_file(str(path), bucket, DATASET_KEY)
    return rows


def matrix(settings: SimulationSettings) -> list[tuple[str, str]]:
    """(run name, configuration) in the order they run: round by round (on-demand-01, spot-only-01,
    hybrid-01, deadline-01, on-demand-02, ...), so that moto's slowdown as terminated instances pile up (it
    keeps them all, and its launches and look-ups slow down with their number) falls on every configuration
    alike; on-demand comes first in a round, so a deadline run has on-demand times to derive its deadline."""
    unknown = sorted(set(settings.runs) - set(CONFIGURATIONS))
    if unknown:
        raise SimulationError(f"unknown configuration(s) {unknown}; valid: {', '.join(CONFIGURATIONS)}")
    rounds = max((settings.runs.get(c, 0) for c in CONFIGURATIONS), default=0)
    return [
        (f"{c}-{i:02d}", c)
        for i in range(1, rounds + 1)
        for c in CONFIGURATIONS
        if i <= settings.runs.get(c, 0)
    ]


def simulate(
    settings: SimulationSettings,
    *,
    on_run: Callable[[str, int, int], None] | None = None,
    on_cycle: Callable[[list[SegmentStatus]], None] | None = None,
) -> list[SimulatedRun]:
    """Emulator up and stack applied, the matrix, then the stack destroyed and the emulator stopped."""
    settings.out_dir.mkdir(parents=True, exist_ok=True)
    _write_record(settings, None)
    started = time.monotonic()
    with emulator_infrastructure(settings.out_dir / "terraform") as infra:
        results = run_matrix(settings, infra, on_run=on_run, on_cycle=on_cycle)
    _write_record(
        settings,
        {
            "runs": len(results),
            "wall_seconds": round(time.monotonic() - started, 1),
            "instances_left": 0,
            "terraform_seconds": infra.timings,
        },
    )
    return results


def run_matrix(
    settings: SimulationSettings,
    infra: Infrastructure,
    *,
    on_run: Callable[[str, int, int], None] | None = None,
    on_cycle: Callable[[list[SegmentStatus]], None] | None = None,
) -> list[SimulatedRun]:
    """The runs of the matrix on a deployed stack (outputs: bucket, launch_template_ids, subnet_id)."""
    trace = (
        AvailabilityTrace.load(settings.trace, one_means=settings.trace_one_means) if settings.trace else None
    )
    settings.out_dir.mkdir(parents=True, exist_ok=True)
    guard = BudgetGuard(settings.budget_usd, settings.spend_log or settings.out_dir / "spend_log.jsonl")
    plan = matrix(settings)
    results: list[SimulatedRun] = []
    aws = emulator_session(infra.env)
    direct_ec2 = aws.client("ec2", endpoint_url=infra.endpoint)
    s3 = aws.client("s3", endpoint_url=infra.endpoint, config=Config(s3={"addressing_style": "path"}))
    upload_dataset(s3, str(infra.outputs["bucket"]), settings.dataset, settings.rows)
    with MetadataServer() as imds, FaultProxy(str(infra.endpoint)) as proxy:
        for number, (name, config) in enumerate(plan, start=1):
            if on_run is not None:
                on_run(name, number, len(plan))
            deadline = deadline_for(settings, results) if config == "deadline" else None
            results.append(
                _one_run(
                    settings,
                    infra,
                    direct_ec2,
                    s3,
                    proxy,
                    imds,
                    guard,
                    trace,
                    name,
                    config,
                    on_cycle,
                    deadline,
                )
            )
    left = sorted(list_instances(direct_ec2.describe_instances, alive_only=True))
    if left:
        raise SimulationError(f"instances of the project alive after the matrix: {', '.join(left)}")
    log.info("re-listed the project's instances after %d runs: none alive", len(results))
    return results


def deadline_for(settings: SimulationSettings, earlier: list[SimulatedRun]) -> float:
    """Cloud seconds: the fixed deadline, or `deadline_factor` x the mean on-demand job time so far."""
    if settings.deadline_seconds is not None:
        return settings.deadline_seconds
    times = [
        r.result.outcome.ended_cloud - r.result.outcome.started_cloud
        for r in earlier
        if r.configuration == "on-demand"
    ]
    if not times:
        raise SimulationError(
            "the deadline configuration needs on-demand runs before it (its deadline is a multiple of their "
            "job time) or a fixed deadline (--deadline-minutes)"
        )
    return settings.deadline_factor * sum(times) / len(times)


def _write_record(settings: SimulationSettings, result: dict[str, Any] | None) -> None:
    record = {**_settings_record(settings), **({"result": result} if result else {})}
    (settings.out_dir / "simulation.json").write_text(
        json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )


def _settings_record(settings: SimulationSettings) -> dict[str, Any]:
    record = {k: v for k, v in asdict(settings).items() if k not in ("faults", "forced_interruptions")}
    record = dict(json.loads(json.dumps(record, default=str)))
    record["interruption_model"] = settings.describe_interruptions()
    return record


def _one_run(
    settings: SimulationSettings,
    infra: Infrastructure,
    direct_ec2: Any,
    s3: Any,
    proxy: FaultProxy,
    imds: MetadataServer,
    guard: BudgetGuard,
    trace: AvailabilityTrace | None,
    name: str,
    config: str,
    on_cycle: Callable[[list[SegmentStatus]], None] | None,
    deadline: float | None = None,
) -> SimulatedRun:
    run_dir = settings.out_dir / name
    job_id = f"{settings.out_dir.name}-{name}"
    templates = {k: str(v) for k, v in infra.outputs["launch_template_ids"].items()}
    clock = CloudClock(scale=settings.time_scale)
    rng = random.Random(f"{settings.seed}/{name}")
    model: RandomInterruptions | TraceReplay = (
        TraceReplay.at_random_offset(trace, rng)
        if trace
        else RandomInterruptions(settings.interruption_probability, settings.interruption_interval)
    )
    spec = JobSpec(
        job_id=job_id,
        input_key=DATASET_KEY,
        rows=settings.rows,
        segments=settings.segments,
        policy=config,
        policy_options=settings.policy_options(config),
        planned_rows_per_s=settings.planned_rows_per_s / settings.time_scale,
        cycle_seconds=settings.cycle_seconds,
        heartbeat_timeout=HEARTBEAT_TIMEOUT,
        boot_timeout=BOOT_TIMEOUT,
        deadline_seconds=deadline,
        changeover_seconds=CHANGEOVER * settings.time_scale,
        reclaim_overhead_seconds=RECLAIM_OVERHEAD * settings.time_scale,
    )
    worker_settings = WorkerSettings(
        bucket=str(infra.outputs["bucket"]),
        model=str(settings.model.resolve()),
        aws_env=dict(infra.env),
        batch_size=settings.batch_size,
        checkpoint_every=settings.checkpoint_every,
        heartbeat_every=HEARTBEAT_EVERY,
        notice_poll_every=NOTICE_POLL_EVERY,
    )
    proxy.rules.clear()
    for rule in settings.faults:
        rule.hits = 0
        proxy.add(rule)
    with (
        InstanceRuntime(
            direct_ec2,
            worker_settings,
            imds=imds,
            log_dir=run_dir / "workers",
            boot=settings.boot,
            job_id=job_id,
        ) as runtime,
        InterruptionInjector(direct_ec2, runtime, imds, clock, model, seed=settings.seed) as injector,
    ):
        if isinstance(model, TraceReplay):
            proxy.add(
                FaultRule(
                    "RunInstances",
                    "InsufficientInstanceCapacity",
                    template_id=templates["spot"],
                    active=lambda: not injector.spot_available(),
                )
            )
        forced = _forced_interrupter(
            injector, runtime, clock, settings.forced_interruptions.get(name, []), hard=settings.forced_hard
        )
        cloud = CloudTarget(
            ec2=ec2_client(infra.env, proxy.endpoint),
            s3=s3,
            bucket=worker_settings.bucket,
            templates=templates,
            subnet_id=infra.outputs.get("subnet_id"),
        )
        try:
            result = run_job(
                spec,
                cloud=cloud,
                guard=guard,
                clock=clock,
                run_dir=run_dir,
                on_cycle=_chain(on_cycle, forced),
                extra={
                    "configuration": config,
                    "run": name,
                    "interruption_model": model.describe(),
                    "seed": settings.seed,
                    "faults_injected": proxy.injected,  # the live list: read when run.json is written
                    "boot": settings.boot,
                    "model": str(settings.model),
                },
            )
        finally:
            injector.save(run_dir / "interruptions.jsonl")
            proxy.rules.clear()
    if runtime.running():
        raise SimulationError(
            f"{name}: worker processes still running after the run: {sorted(runtime.running())}"
        )
    if settings.mlflow and result.ledger_path is not None:
        attempts, summary = read_ledger(result.ledger_path)
        if summary is not None:
            log_to_mlflow(
                summary,
                attempts,
                tracking_uri=default_tracking_uri(settings.out_dir.parent),
                experiment="spotbatch-simulate",
                params={
                    "configuration": config,
                    "run_folder": str(run_dir),
                    "time_scale": str(settings.time_scale),
                },
                ledger_path=result.ledger_path,
            )
    proxy.injected.clear()
    return SimulatedRun(name, config, result, len(injector.records))


def _forced_interrupter(
    injector: InterruptionInjector,
    runtime: InstanceRuntime,
    clock: CloudClock,
    at: list[float],
    *,
    hard: bool,
) -> Callable[[list[SegmentStatus]], None]:
    """For tests: at each listed cloud second after the start, interrupt one running spot instance."""
    pending = sorted(at)
    start = clock.now()

    def check(statuses: list[SegmentStatus]) -> None:
        while pending and clock.now() - start >= pending[0]:
            working = {
                s.segment_id
                for s in statuses
                if s.state == "RUNNING" and s.market == "spot" and s.rows_done > 0
            }
            spot = sorted(
                i
                for i, inst in runtime.running().items()
                if inst.tags.get(TAG_SEGMENT) in working and i not in injector.handled
            )
            if not spot:
                return  # no spot worker busy yet: try again next cycle
            pending.pop(0)
            injector.interrupt(spot[0], hard=hard)

    return check


def _chain(
    *callbacks: Callable[[list[SegmentStatus]], None] | None,
) -> Callable[[list[SegmentStatus]], None]:
    def call(statuses: list[SegmentStatus]) -> None:
        for callback in callbacks:
            if callback is not None:
                callback(statuses)

    return call
