"""`spotbatch simulate`: the experiment matrix on the embedded AWS, with real workers and real interruptions.

Emulator up and stack applied (moto + Terraform), the dataset uploaded to the stack's bucket, then for
each configuration (on-demand, spot-only, hybrid) N runs of the same job, each with its own job id and
run folder: the coordinator (`jobs.run_job`, the code a real run uses) launches from the templates through
a fault-injecting proxy; the instance runtime boots each running instance from its user-data; the injector
interrupts spot instances (random model or a replayed trace) with a notice, then terminate and kill. At the
end the project's instances are re-listed (none may be alive), the stack destroyed and moto stopped.

Usage::

    results = simulate(SimulationSettings(out_dir=Path("runs/simulate-1"), model=..., dataset=...))
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from coordinator.build.local_parquet import parquet_files, rows_and_bytes
from coordinator.cost.budget import TEST_MODE_ENV, BudgetGuard, test_mode_requested
from coordinator.cost.ledger import default_tracking_uri
from coordinator.errors import SimulationError
from coordinator.job.aws import list_instances
from coordinator.job.core import JobSpec
from coordinator.job.loop import SegmentStatus
from coordinator.sim.emulator_stack import SIMULATOR_BUCKET, Infrastructure, emulator_infrastructure
from coordinator.sim.fault_proxy import FaultProxy
from coordinator.sim.metadata_server import MetadataServer
from coordinator.sim.one_run import Lab, job_spec, one_run
from coordinator.sim.prediction import (
    OVERHEAD_NAMES,
    SpecFor,
    live_setup,
    measured_overheads,
    model_deadline,
    predict_matrix,
)
from coordinator.sim.settings import CONFIGURATIONS, DATASET_KEY, SimulatedRun, SimulationSettings
from coordinator.sim.worker_boot import WorkerLauncher
from coordinator.stack.deployment import StackSettings
from coordinator.whatif.first_principles import hazard
from coordinator.whatif.matrix_model import Prediction
from coordinator.whatif.traces import AvailabilityTrace
from inference.dataset import write_dataset
from inference.layout import DATA_PREFIX

log = logging.getLogger("coordinator.sim.matrix")


def upload_dataset(s3: Any, bucket: str, dataset: Path, rows: int) -> int:
    """Upload the first `rows` rows of the dataset to the bucket; return the count. A folder's .parquet
    files go up as they are, under `data/<folder>/` (`rows` must be all of theirs)."""
    if dataset.is_dir():
        files, (total, _) = parquet_files(dataset), rows_and_bytes(dataset)
        if total != rows:
            raise SimulationError(
                f"{dataset}: its {len(files)} .parquet file(s) hold {total} rows, not {rows}"
            )
        for path in files:
            s3.upload_file(str(path), bucket, f"{DATA_PREFIX}{dataset.name}/{path.name}")
        return rows
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
    on_done: Callable[[SimulatedRun], None] | None = None,
) -> list[SimulatedRun]:
    """Emulator up and stack applied, the matrix, then the stack destroyed and the emulator stopped."""
    settings.out_dir.mkdir(parents=True, exist_ok=True)
    _write_record(settings, None)
    started = time.monotonic()
    stack = StackSettings(bucket_name=SIMULATOR_BUCKET, instance_type=settings.instance_type)
    state = settings.out_dir / "terraform"
    with emulator_infrastructure(
        state, settings=stack, region=settings.region, time_scale=settings.time_scale
    ) as infra:
        results = run_matrix(settings, infra, on_run=on_run, on_cycle=on_cycle, on_done=on_done)
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
    on_done: Callable[[SimulatedRun], None] | None = None,
) -> list[SimulatedRun]:
    """The runs of the matrix on a deployed stack."""
    trace = (
        AvailabilityTrace.load(settings.trace, one_means=settings.trace_one_means) if settings.trace else None
    )
    settings.out_dir.mkdir(parents=True, exist_ok=True)
    in_memory = test_mode_requested()
    if in_memory:
        print(f"budget guard: {TEST_MODE_ENV}=1: the spend log is kept in memory only", file=sys.stderr)
    guard = BudgetGuard(
        settings.budget_usd, settings.spend_log or settings.out_dir / "spend_log.jsonl", in_memory=in_memory
    )
    plan = matrix(settings)
    results: list[SimulatedRun] = []
    expected = expectations(settings, infra)
    with open_lab(settings, infra, guard, trace) as lab:
        for number, (name, config) in enumerate(plan, start=1):
            if on_run is not None:
                on_run(name, number, len(plan))
            deadline = expected.deadline_seconds if config == "deadline" else None
            results.append(one_run(lab, name, config, on_cycle, deadline))
            if on_done is not None:
                on_done(results[-1])
    if expected.predictions:
        predict_with_startup(settings, infra, expected, results)
    if settings.mlflow:
        log_matrix_savings(settings, results)
    left = sorted(list_instances(lab.direct_ec2.describe_instances, alive_only=True))
    if left:
        raise SimulationError(f"instances of the project alive after the matrix: {', '.join(left)}")
    log.info("re-listed the project's instances after %d runs: none alive", len(results))
    return results


@contextlib.contextmanager
def open_lab(
    settings: SimulationSettings,
    infra: Infrastructure,
    guard: BudgetGuard,
    trace: AvailabilityTrace | None = None,
) -> Iterator[Lab]:
    """What every run of a matrix shares: the dataset in the stack's bucket, the fork server (up before the
    first run's clock starts), the metadata server and the fault proxy in front of the emulator."""
    upload_dataset(infra.target.client("s3"), infra.stack.bucket, settings.dataset, settings.rows)
    WorkerLauncher(settings.boot)
    with MetadataServer() as imds, FaultProxy(str(infra.endpoint)) as proxy:
        ec2, s3 = infra.target.client("ec2"), infra.target.client("s3")
        yield Lab(settings, infra, ec2, s3, proxy, imds, guard, trace)


@dataclass(frozen=True, slots=True)
class Expectations:
    """What the matrix model says before the first run: the deadline every deadline run gets, and each
    configuration's predicted mean cost and job time (None for a replayed trace: the model is random)."""

    deadline_seconds: float
    predictions: dict[str, Prediction]


def _spec_for(settings: SimulationSettings, infra: Infrastructure) -> SpecFor:
    def spec_for(config: str, deadline: float | None) -> JobSpec:
        region, instance_type = infra.target.region, infra.stack.instance_type
        return job_spec(settings, "model", config, deadline, region=region, instance_type=instance_type)

    return spec_for


def expectations(settings: SimulationSettings, infra: Infrastructure) -> Expectations:
    spec_for = _spec_for(settings, infra)
    deadline = model_deadline(settings, spec_for)
    random_model = settings.trace is None
    predictions = predict_matrix(settings, spec_for, deadline) if random_model else {}
    record = {
        "model_inputs": _model_inputs(settings, spec_for("spot-only", None)) if random_model else {},
        "deadline_seconds": deadline,
        "workload": settings.workload().describe(settings.rows),
        "boot_model": settings.boot_model.describe(),
        "predictions": {c: asdict(p) for c, p in predictions.items()},
    }
    path = settings.out_dir / "expected.json"
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    log.info("deadline %.0f cloud s; predictions in %s", deadline, path)
    return Expectations(deadline, predictions)


def predict_with_startup(
    settings: SimulationSettings, infra: Infrastructure, expected: Expectations, runs: list[SimulatedRun]
) -> None:
    """The model again, told the one thing it cannot know beforehand: how long the coordinator itself took
    on this host to start the job, between launches, from a warning to the replacement's launch and to end
    it (`coordinator_overheads_measured`)."""
    overheads = measured_overheads(runs)
    predictions = predict_matrix(
        settings, _spec_for(settings, infra), expected.deadline_seconds, overheads=overheads
    )
    path = settings.out_dir / "expected.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    record["coordinator_overheads_measured"] = dict(zip(OVERHEAD_NAMES, overheads, strict=True))
    record["predictions_with_overheads"] = {c: asdict(p) for c, p in predictions.items()}
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def log_matrix_savings(settings: SimulationSettings, results: list[SimulatedRun]) -> None:
    """Each run's savings against the on-demand runs' mean cost, the report's definition, added to its MLflow
    run once the matrix has its on-demand runs (the ledger's own figure compares with the run's own work at
    the on-demand price: `savings_vs_own_work_on_demand_pct`)."""
    on_demand_runs = [r for r in results if r.configuration == "on-demand"]
    kept = [r for r in on_demand_runs if not r.pace.get("distorted")] or on_demand_runs  # as the report
    on_demand = [r.cost_usd for r in kept]
    if not on_demand:
        return
    from mlflow.tracking import MlflowClient

    baseline = sum(on_demand) / len(on_demand)
    client = MlflowClient(tracking_uri=default_tracking_uri(settings.tracking_dir))
    for run in results:
        if run.mlflow_run_id:
            savings = (baseline - run.cost_usd) / baseline * 100
            client.log_metric(run.mlflow_run_id, "savings_vs_on_demand_runs_pct", savings)


def _model_inputs(settings: SimulationSettings, spec: JobSpec) -> dict[str, float]:
    """What the report's closed-form savings need (`coordinator/whatif/first_principles.py`)."""
    setup = live_setup(settings, spec)
    return {
        "segment_work_seconds": max(setup.segment_rows) * setup.cloud_seconds_per_row,
        "boot_mean_seconds": settings.boot_model.mean("spot"),
        "spot_usd_per_hour": setup.spot_usd_per_hour,
        "on_demand_usd_per_hour": setup.on_demand_usd_per_hour,
        "hazard_per_second": hazard(settings.interruption_probability, settings.interruption_interval),
        "spot_share": settings.spot_share,
    }


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
