"""Simulator only: one run of the matrix, the coordinator's real code against simulated instances.

The coordinator (`job.runner.run_job`, the code a real run uses) launches from the stack's templates through
the fault proxy; the instance runtime boots each running instance by running its rendered user-data, which
pulls the image and starts the worker; the injector interrupts spot instances (random model or a replayed
trace) with a notice, then terminate and kill. Afterwards no machine may be up, and the run's ledger goes
to MLflow.

Usage::

    lab = Lab(settings, infra, direct_ec2, s3, proxy, imds, guard, trace)
    run = one_run(lab, "hybrid-01", "hybrid", on_cycle=None, deadline=None)
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from coordinator.build.worker_image import IMAGE_MODEL_DIR
from coordinator.cost.budget import BudgetGuard
from coordinator.cost.ledger import default_tracking_uri, log_to_mlflow, read_ledger
from coordinator.cost.pricing import Market
from coordinator.errors import SimulationError
from coordinator.job.aws import EC2_MAX_ATTEMPTS, CloudTarget
from coordinator.job.core import TAG_ATTEMPT, TAG_MARKET, CloudClock, JobSpec, WorkerTuning
from coordinator.job.loop import RunResult, SegmentStatus, run_job
from coordinator.sim.emulator_stack import Infrastructure
from coordinator.sim.fault_proxy import FaultProxy, FaultRule
from coordinator.sim.forced import chain, forced_interrupter
from coordinator.sim.injector import InterruptionInjector, RandomInterruptions, TraceReplay
from coordinator.sim.instance_runtime import InstanceRuntime
from coordinator.sim.machine import MachineImage
from coordinator.sim.metadata_server import MetadataServer
from coordinator.sim.pace_record import emulator_latency, record_pace
from coordinator.sim.settings import (
    BOOT_TIMEOUT,
    HEARTBEAT_EVERY,
    HEARTBEAT_TIMEOUT,
    NOTICE_POLL_EVERY,
    RECLAIM_OVERHEAD,
    SimulatedRun,
    SimulationSettings,
)
from coordinator.stack.emulator_policy import for_emulator
from coordinator.stack.target import AwsTarget
from coordinator.whatif.traces import AvailabilityTrace

OnCycle = Callable[[list[SegmentStatus]], None]


@dataclass(frozen=True, slots=True)
class Lab:
    """What every run of a matrix shares: the settings, the emulator and its clients, the stand-ins."""

    settings: SimulationSettings
    infra: Infrastructure
    direct_ec2: Any  # straight to moto: the runtime's and the injector's view of the cloud
    s3: Any
    proxy: FaultProxy  # in front of moto: the coordinator's EC2 calls go through it
    imds: MetadataServer
    guard: BudgetGuard
    trace: AvailabilityTrace | None

    @property
    def templates(self) -> dict[str, str]:
        return self.infra.stack.launch_template_ids


def ec2_through(proxy: FaultProxy, admin: AwsTarget, attempts: int = EC2_MAX_ATTEMPTS) -> Any:
    """The coordinator's EC2 client, through the fault proxy, with the retries it has on AWS."""
    target = AwsTarget.emulator(proxy.endpoint, admin.region, admin.credentials)
    return target.client("ec2", max_attempts=attempts)


def _cloud(lab: Lab, settings: SimulationSettings) -> CloudTarget:
    """The stack, its EC2 through the fault proxy, the job roles as moto checks them."""
    ec2 = ec2_through(lab.proxy, lab.infra.target, settings.ec2_max_attempts)
    cloud = CloudTarget.connect(lab.infra.target, lab.infra.stack, ec2=ec2)
    return replace(cloud, worker_policy=for_emulator)


def one_run(
    lab: Lab, name: str, config: str, on_cycle: OnCycle | None, deadline: float | None = None
) -> SimulatedRun:
    settings = lab.settings
    run_dir = settings.out_dir / name
    job_id = f"{settings.id_prefix}-{name}"
    clock = CloudClock(scale=settings.time_scale)
    model = _interruption_model(lab, name)
    _arm_faults(lab)
    with (
        _runtime(lab, run_dir, clock, job_id) as runtime,
        _injector(lab, runtime, clock, model) as injector,
    ):
        if isinstance(model, TraceReplay):  # no spot capacity while the trace says so
            rule = FaultRule(
                "RunInstances",
                "InsufficientInstanceCapacity",
                template_id=lab.templates["spot"],
                active=lambda: not injector.spot_available(),
            )
            lab.proxy.add(rule)
        at = settings.forced_interruptions.get(name, [])
        forced = forced_interrupter(injector, runtime, clock, at, kind=settings.forced_kind)
        try:
            result = run_job(
                job_spec(
                    settings,
                    job_id,
                    config,
                    deadline,
                    region=lab.infra.target.region,
                    instance_type=lab.infra.stack.instance_type,
                ),
                cloud=_cloud(lab, settings),
                guard=lab.guard,
                clock=clock,
                run_dir=run_dir,
                on_cycle=chain(on_cycle, forced),
                extra=_run_record(lab, name, config, model),
            )
        finally:
            injector.save(run_dir / "interruptions.jsonl")
            lab.proxy.rules.clear()
    if runtime.running():
        running = sorted(runtime.running())
        raise SimulationError(f"{name}: machines still up after the run: {running}")
    pace = record_pace(
        run_dir,
        emulator_latency(lab.proxy.latencies),
        scale=settings.time_scale,
        cycle_seconds=settings.cycle_seconds,
    )
    mlflow_run_id = _log_to_mlflow(settings, result, config, bool(pace.get("distorted")))
    lab.proxy.injected.clear()
    lab.proxy.latencies.clear()
    lab.proxy.launched.clear()
    reclaims = sum(r.kind != "crash" for r in injector.records)
    return SimulatedRun(name, config, result, reclaims, pace, mlflow_run_id)


def _injector(
    lab: Lab, runtime: InstanceRuntime, clock: CloudClock, model: RandomInterruptions | TraceReplay
) -> InterruptionInjector:
    """The run's reclaims, drawn from the seed and each attempt's id without the runs folder's part."""
    seed, folder = lab.settings.seed, lab.settings.id_prefix
    return InterruptionInjector(
        lab.direct_ec2,
        runtime,
        lab.imds,
        clock,
        model,
        seed=seed,
        folder_prefix=f"{folder}-",
        aws=lab.infra.target,
    )


def _runtime(lab: Lab, run_dir: Path, clock: CloudClock, job_id: str) -> InstanceRuntime:
    """The machines of one run: paced at the instance type's speed, each held back for its drawn launch."""
    settings = lab.settings
    return InstanceRuntime(
        lab.infra.target,
        MachineImage(
            files={IMAGE_MODEL_DIR: str(settings.model.resolve())},
            extra_env=settings.machine_env(),
            pace_by_type=settings.pace_by_type(),
        ),
        imds=lab.imds,
        log_dir=run_dir / "workers",
        clock=clock,
        boot=settings.boot,
        job_id=job_id,
        launch_seconds=_launch_draw(settings) if settings.paced else None,
        launched_at=lab.proxy.launched.get,  # the launch call's answer: a boot counts from there
    )


def _launch_draw(settings: SimulationSettings) -> Callable[[dict[str, str]], float]:
    """Each instance's launch-to-first-row time, drawn from the boot model with the run's seed and the
    attempt's id without the runs folder's part: the same machine boots as long whatever the host does,
    in whichever folder the seed runs."""

    folder = f"{settings.id_prefix}-"  # left out, as the injector leaves it out of the reclaims

    def draw(tags: dict[str, str]) -> float:
        market: Market = "spot" if tags.get(TAG_MARKET) == "spot" else "on-demand"
        attempt = tags.get(TAG_ATTEMPT, "").removeprefix(folder)
        return settings.boot_model.draw(market, random.Random(f"{settings.seed}/{attempt}/launch"))

    return draw


def _run_record(lab: Lab, name: str, config: str, model: RandomInterruptions | TraceReplay) -> dict[str, Any]:
    """What `run.json` carries beside the job's spec and outcome: this run's simulation settings."""
    settings = lab.settings
    return {
        "configuration": config,
        "run": name,
        "interruption_model": model.describe(),
        "seed": settings.seed,
        "faults_injected": lab.proxy.injected,  # the live list: read when run.json is written
        "boot": settings.boot,
        "model": str(settings.model),
        "batch_size": settings.batch_size,
        "checkpoint_every": settings.checkpoint_every,
        "cycle_seconds": settings.cycle_seconds,
    }


def _interruption_model(lab: Lab, name: str) -> RandomInterruptions | TraceReplay:
    settings = lab.settings
    if lab.trace is not None:
        return TraceReplay.at_random_offset(lab.trace, random.Random(f"{settings.seed}/{name}"))
    return RandomInterruptions(settings.interruption_probability, settings.interruption_interval)


def job_spec(
    settings: SimulationSettings,
    job_id: str,
    config: str,
    deadline: float | None,
    *,
    region: str,
    instance_type: str,
) -> JobSpec:
    return JobSpec(
        job_id=job_id,
        input_key=settings.input_key,
        rows=settings.rows,
        segments=settings.segments,
        segment_rows=settings.segment_rows,
        policy=config,
        policy_options=settings.policy_options(config),
        planned_rows_per_s=1.0 / settings.workload().cloud_seconds_per_row,
        cycle_seconds=settings.cycle_seconds,
        heartbeat_timeout=HEARTBEAT_TIMEOUT,
        boot_timeout=BOOT_TIMEOUT,
        deadline_seconds=deadline,
        changeover_seconds=settings.boot_model.worst("on-demand"),  # until the job has seen boots
        reclaim_overhead_seconds=RECLAIM_OVERHEAD * settings.time_scale,
        replace_on_rebalance=settings.replace_on_rebalance,
        use_events=settings.use_events,
        region=region,
        instance_type=instance_type,
        instance_types=settings.instance_types,
        tuning=WorkerTuning(
            batch_size=settings.batch_size,
            checkpoint_every=settings.checkpoint_every,
            heartbeat_seconds=HEARTBEAT_EVERY,  # wall: the worker runs on this machine's clock
            steady_heartbeat_seconds=HEARTBEAT_EVERY,  # 15 cloud s: no slower while running
            notice_poll_seconds=NOTICE_POLL_EVERY,
        ),
    )


def _arm_faults(lab: Lab) -> None:
    """The settings' fault rules, fresh for this run (tests: throttling, 500s, capacity)."""
    lab.proxy.rules.clear()
    for rule in lab.settings.faults:
        rule.hits = 0
        lab.proxy.add(rule)


def _log_to_mlflow(settings: SimulationSettings, result: RunResult, config: str, distorted: bool) -> str:
    """The run's ledger as an MLflow run, tagged `distorted` when this host distorted it (`pace_record.py`;
    the report leaves such runs out of its headline; so should a query of the experiment)."""
    if not settings.mlflow or result.ledger_path is None:
        return ""
    attempts, summary = read_ledger(result.ledger_path)
    if summary is None:
        return ""
    tracking_uri = default_tracking_uri(settings.tracking_dir)
    run_id = log_to_mlflow(
        summary,
        attempts,
        tracking_uri=tracking_uri,
        experiment="spotbatch-simulate",
        params={
            "configuration": config,
            "run_folder": str(result.run_dir),
            "time_scale": str(settings.time_scale),
        },
        ledger_path=result.ledger_path,
    )
    from mlflow.tracking import MlflowClient

    MlflowClient(tracking_uri=tracking_uri).set_tag(run_id, "distorted", str(distorted).lower())
    return run_id
