"""The coordinator end to end with real worker processes on a moto server: interruptions, faults, restarts.

Each test runs the `simulate` matrix code (or the `spotbatch run` CLI) on the AWS stack applied to moto once
for the session (every instance boots from the launch template's user-data), then checks the outputs
(every input id exactly once, equal to an uninterrupted run), the event log, the ledger and that no
instance of the job is left.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from coordinator.build.worker_image import IMAGE_MODEL_DIR
from coordinator.cost.pricing import PriceTable
from coordinator.cost.zone_prices import ZonePrices
from coordinator.job.aws.instances import InstanceInfo, alive_ids, list_instances
from coordinator.job.core.cloud_clock import CloudClock
from coordinator.sim.emulator_stack import Infrastructure
from coordinator.sim.fault_proxy import FaultRule
from coordinator.sim.instance_runtime import InstanceRuntime
from coordinator.sim.machine import MachineImage
from coordinator.sim.matrix import run_matrix
from coordinator.sim.metadata_server import MetadataServer
from coordinator.sim.settings import DATASET_KEY, SimulationSettings
from tests.conftest import FIXTURES
from tests.host_load import behind_pace, scaled

ROWS = 1_500


@pytest.fixture
def stack(deployed_stack: Infrastructure) -> Infrastructure:
    return deployed_stack


def settings(tmp_path: Path, model: Path, dataset: Path, **overrides: Any) -> SimulationSettings:
    base: dict[str, Any] = dict(
        out_dir=tmp_path / "runs" / f"t{uuid.uuid4().hex[:6]}",  # job ids unique in the session's moto
        model=model,
        dataset=dataset,
        rows=ROWS,
        segments=4,
        interruption_probability=0.0,
        batch_size=16,
        checkpoint_every=4,
        mlflow=False,
        spot_share=0.75,
        time_scale=30.0,
        paced=False,  # these tests are about the coordinator's decisions, not the instance type's speed
    )
    base.update(overrides)
    return SimulationSettings(**base)


def predictions(run_dir: Path) -> dict[int, tuple[str, float]]:
    table = pq.read_table(run_dir / "predictions.parquet").to_pylist()
    ids = Counter(row["id"] for row in table)
    assert max(ids.values()) == 1, "an id appears twice in the result"
    return {row["id"]: (row["prediction"], row["score"]) for row in table}


def events(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def job_instances(stack: Infrastructure, job_id: str) -> dict[str, InstanceInfo]:
    return list_instances(stack.target.client("ec2").describe_instances, job_id=job_id)


def alive(stack: Infrastructure, job_id: str) -> list[str]:
    return alive_ids(job_instances(stack, job_id))


def job_of(config: SimulationSettings, run_name: str) -> str:
    return f"{config.out_dir.name}-{run_name}"


def test_hybrid_with_forced_interruptions_equals_an_uninterrupted_run(
    stack: Infrastructure, tmp_path: Path, busy_model_dir: Path, sentences_parquet: Path
) -> None:
    config = settings(
        tmp_path,
        busy_model_dir,
        sentences_parquet,
        runs={"on-demand": 1, "hybrid": 1},
        forced_interruptions={"hybrid-01": [20.0, 40.0]},
    )
    on_demand, hybrid = run_matrix(config, stack)
    input_ids = pq.read_table(sentences_parquet).column("id").to_pylist()
    for run in (on_demand, hybrid):
        assert run.result.outcome.succeeded, run.result.outcome.failures
        assert sorted(predictions(run.result.run_dir)) == sorted(input_ids)
        assert alive(stack, job_of(config, run.name)) == []
    # resumed segments give the same predictions as the run that was never interrupted
    assert predictions(hybrid.result.run_dir) == predictions(on_demand.result.run_dir)
    assert hybrid.interruptions == 2
    interrupted = {e["segment_id"] for e in events(hybrid.result.run_dir) if e["to_state"] == "INTERRUPTED"}
    assert len(interrupted) == 2
    # EC2's warning came through EventBridge and the queue: a segment was handed over on it, its
    # replacement launched while the warned worker drained. The worker has the same notice from the
    # metadata service, and on a busy machine its `draining` heartbeat can be seen first: then that signal
    # hands the segment over, and the warning that follows finds nothing left to do
    warned = [e for e in events(hybrid.result.run_dir) if "(EventBridge)" in e["reason"]]
    assert warned and {e["segment_id"] for e in warned} <= interrupted
    assert all((e["from_state"], e["to_state"]) == ("RUNNING", "DRAINING") for e in warned)
    ledger = [json.loads(line) for line in (hybrid.result.run_dir / "ledger.jsonl").read_text().splitlines()]
    attempts = [a for a in ledger if a["kind"] == "attempt"]
    for segment in interrupted:  # hybrid: the interrupted spot segment continued on on-demand
        markets = [a["market"] for a in attempts if a["segment_id"] == segment]
        assert markets == ["spot", "on-demand"], (segment, markets)
    notices = [
        json.loads(line) for line in (hybrid.result.run_dir / "interruptions.jsonl").read_text().splitlines()
    ]
    assert {n["kind"] for n in notices} == {"notice"}
    summary = ledger[-1]
    assert summary["kind"] == "job" and summary["interruptions"] == 2
    # a drained attempt loses nothing: its rows are checkpointed before it stops
    assert sum(a["rows_wasted"] for a in attempts if a["end_reason"] == "interrupted") == 0


def test_a_crashed_worker_is_told_from_an_interruption_by_ec2s_state_reason(
    stack: Infrastructure, tmp_path: Path, busy_model_dir: Path, sentences_parquet: Path
) -> None:
    """A worker killed on its spot instance (the machine then powers itself off: EC2 says
    Client.InstanceInitiatedShutdown) is a crash: not an interruption, so hybrid relaunches it on spot
    rather than falling back to on-demand, and the ledger says why the attempt ended."""
    config = settings(
        tmp_path,
        busy_model_dir,
        sentences_parquet,
        runs={"hybrid": 1},
        forced_interruptions={"hybrid-01": [20.0]},
        forced_crash=True,
    )
    (hybrid,) = run_matrix(config, stack)
    assert hybrid.result.outcome.succeeded, hybrid.result.outcome.failures
    input_ids = pq.read_table(sentences_parquet).column("id").to_pylist()
    assert sorted(predictions(hybrid.result.run_dir)) == sorted(input_ids)
    assert hybrid.interruptions == 0
    ledger = [json.loads(line) for line in (hybrid.result.run_dir / "ledger.jsonl").read_text().splitlines()]
    attempts = [a for a in ledger if a["kind"] == "attempt"]
    crashed = [a for a in attempts if a["end_reason"] == "crashed"]
    assert len(crashed) == 1
    markets = [a["market"] for a in attempts if a["segment_id"] == crashed[0]["segment_id"]]
    assert markets == ["spot", "spot"]  # a crash spends no spot retry (hybrid allows none)
    assert ledger[-1]["interruptions"] == 0
    lost = [e for e in events(hybrid.result.run_dir) if e["to_state"] == "LOST"]
    assert [e["segment_id"] for e in lost] == [crashed[0]["segment_id"]]
    assert "(Client.InstanceInitiatedShutdown)" in lost[0]["reason"]
    assert alive(stack, job_of(config, hybrid.name)) == []


def test_a_rebalance_recommendation_starts_the_replacement_in_another_zone_while_the_old_one_works(
    stack: Infrastructure, tmp_path: Path, busy_model_dir: Path, sentences_parquet: Path
) -> None:
    """With `replace_on_rebalance`, EC2's rebalance recommendation (through EventBridge) starts the
    replacement at once, in another zone; the old worker works on until the replacement has beaten, then its
    instance is stopped: `switched`, no interruption, every row once. Paced (each row standing for 1,000:
    a segment is about 13 wall s, a boot at most 6.3), so the old worker cannot finish its segment before
    the replacement beats, however fast the host (unpaced, it once did, and ended `done`)."""
    config = settings(
        tmp_path,
        busy_model_dir,
        sentences_parquet,
        runs={"spot-only": 1},
        forced_interruptions={"spot-only-01": [20.0]},
        forced_rebalance=True,
        replace_on_rebalance=True,
        paced=True,
        row_weight=1_000,
    )
    (run,) = run_matrix(config, stack)
    assert run.result.outcome.succeeded, run.result.outcome.failures
    input_ids = pq.read_table(sentences_parquet).column("id").to_pylist()
    assert sorted(predictions(run.result.run_dir)) == sorted(input_ids)
    ledger = [json.loads(line) for line in (run.result.run_dir / "ledger.jsonl").read_text().splitlines()]
    attempts = [a for a in ledger if a["kind"] == "attempt"]
    told = [e for e in events(run.result.run_dir) if "rebalance recommendation" in e["reason"]]
    assert len(told) == 1
    later = [a for a in attempts if a["segment_id"] == told[0]["segment_id"]]
    assert [a["market"] for a in later] == ["spot", "spot"] and ledger[-1]["interruptions"] == 0
    if later[0]["end_reason"] != "switched":
        # the old worker finished before its replacement beat: beside a CPU hog the replacement's machine
        # started 8.9 s late; only a host that held it back, by its machine's own pace record, may do that
        held = behind_pace(run.result.run_dir, later[1]["instance_id"])
        assert later[0]["end_reason"] == "done" and held > 1.0, (later, held)
    zones = {i: info.zone for i, info in job_instances(stack, job_of(config, run.name)).items()}
    assert zones[later[0]["instance_id"]] != zones[later[1]["instance_id"]]  # the at-risk zone tried last
    assert alive(stack, job_of(config, run.name)) == []


def test_throttling_500s_and_spot_capacity_are_handled_per_policy(
    stack: Infrastructure, tmp_path: Path, tiny_model_dir: Path, sentences_parquet: Path
) -> None:
    spot_template = stack.stack.launch_template_ids["spot"]
    zones = len(stack.stack.subnet_ids)  # a capacity error is tried in the next zone: every zone says no
    faults = (
        FaultRule("RunInstances", "RequestLimitExceeded", times=2),
        FaultRule("RunInstances", "InternalError", times=2),
        FaultRule("RunInstances", "InsufficientInstanceCapacity", times=zones, template_id=spot_template),
    )
    # one segment: a cycle's launches go out together, and the faults would be shared among them
    config = settings(
        tmp_path, tiny_model_dir, sentences_parquet, runs={"hybrid": 1}, faults=faults, segments=1
    )
    (run,) = run_matrix(config, stack)
    outcome = run.result.outcome
    assert outcome.succeeded, outcome.failures
    assert outcome.api_retries == 4  # two throttled and two 500 calls, each retried by the fleet
    record = json.loads((run.result.run_dir / "run.json").read_text())
    # run.json carries every setting of the run, the simulator's included (boot and model were once lost)
    assert record["boot"] == "fork" and record["model"] == str(tiny_model_dir)
    assert (record["batch_size"], record["checkpoint_every"], record["seed"]) == (16, 4, 0)
    assert record["spec"]["policy"] == "hybrid" and record["spec"]["segments"] == 1
    assert (
        record["faults_injected"]
        == [
            "RunInstances: RequestLimitExceeded",
            "RunInstances: RequestLimitExceeded",
            "RunInstances: InternalError",
            "RunInstances: InternalError",
        ]
        + ["RunInstances: InsufficientInstanceCapacity"] * zones
    )
    log = events(run.result.run_dir)
    failed = [e for e in log if e["to_state"] == "FAILED_LAUNCH"]
    assert len(failed) == 1 and "InsufficientInstanceCapacity" in failed[0]["reason"]
    after = [
        e for e in log if e["segment_id"] == failed[0]["segment_id"] and e["from_state"] == "FAILED_LAUNCH"
    ]
    assert after[0]["to_state"] == "LAUNCHING" and "on-demand" in after[0]["reason"]
    assert len(predictions(run.result.run_dir)) == ROWS
    assert alive(stack, job_of(config, run.name)) == []


def test_throttling_longer_than_the_retry_budget_does_not_fail_a_segment(
    stack: Infrastructure, tmp_path: Path, tiny_model_dir: Path, sentences_parquet: Path
) -> None:
    """RunInstances throttled on every call botocore makes: the launch waits and is made again (its
    attempt ended "throttled", no spot retry spent); the job finishes with every row."""
    attempts = 3  # the client's budget, shortened here (botocore's backoff doubles with each retry)
    faults = (FaultRule("RunInstances", "RequestLimitExceeded", times=attempts + 1),)
    config = settings(
        tmp_path,
        tiny_model_dir,
        sentences_parquet,
        runs={"spot-only": 1},
        faults=faults,
        ec2_max_attempts=attempts,
        segments=1,  # the faults all for one launch (a cycle's launches go out together)
    )
    (run,) = run_matrix(config, stack)
    outcome = run.result.outcome
    assert outcome.succeeded, outcome.failures
    assert outcome.api_retries == attempts  # two retries of the first call, one of the next
    log = events(run.result.run_dir)
    waited = [e for e in log if e["to_state"] == "FAILED_LAUNCH"]
    assert len(waited) == 1 and f"RequestLimitExceeded after {attempts} call" in waited[0]["reason"]
    after = [
        e for e in log if e["segment_id"] == waited[0]["segment_id"] and e["from_state"] == "FAILED_LAUNCH"
    ]
    assert after[0]["to_state"] == "LAUNCHING" and "spot again (0 of" in after[0]["reason"]
    with sqlite3.connect(run.result.run_dir / "state.db") as db:
        reasons = [r[0] for r in db.execute("SELECT end_reason FROM attempts ORDER BY rowid")]
    assert reasons.count("throttled") == 1 and "failed-launch" not in reasons
    assert len(predictions(run.result.run_dir)) == ROWS
    assert alive(stack, job_of(config, run.name)) == []


def test_coordinator_killed_at_every_named_point_restarts_and_leaves_nothing_open(
    stack: Infrastructure, tmp_path: Path, busy_model_dir: Path, sentences_parquet: Path
) -> None:
    """The cloud (moto, instance runtime, metadata server) lives in this process; the coordinator is
    `python -m coordinator run`, killed with SIGKILL at each crash point in turn (`SPOTBATCH_CRASH_AT`) and
    started again with the same job id: after authorize, after DRAINING, after terminate, before the actual
    cost is recorded, after DONE (and
    then down long enough for a worker to finish and its instance to power off unseen). The last start
    finishes: every row once, no attempt launched twice, no instance left, no budget reservation open,
    every instance EC2 ran in the ledger, billed from its LaunchTime, and the attempt that ended unseen
    billed to its own end."""
    from coordinator.cost.budget import BudgetGuard
    from coordinator.job.core.crash_points import CRASH_ENV, POINTS
    from coordinator.sim.matrix import upload_dataset

    upload_dataset(stack.target.client("s3"), stack.stack.bucket, sentences_parquet, ROWS)
    outputs = stack.save_outputs(tmp_path / "outputs.json")
    run_dir, job = tmp_path / "run", f"crash-{uuid.uuid4().hex[:6]}"
    spend_log = tmp_path / "spend.jsonl"
    command = run_command(outputs, stack.endpoint, job, run_dir, spend_log)
    env = {**os.environ, "SPOTBATCH_HOME": str(tmp_path)}
    order = ["after-authorize", "after-state-draining", "after-terminate", "before-record-actual"]
    order.append("after-state-done")
    # the kill right after RunInstances has a test of its own (below): in this sequence its restart let
    # the other workers finish unobserved, and the later points found nothing left to do under load
    assert sorted([*order, "after-run-instances"]) == sorted(POINTS)
    with simulated_machines(stack, busy_model_dir, tmp_path, job) as (imds, runtime):
        for point in order:
            with open(tmp_path / f"{point}.log", "wb") as log:
                coordinator = subprocess.Popen(command, env={**env, CRASH_ENV: point}, stdout=log, stderr=log)
            if point == "after-state-draining":  # a notice to the first running segment's instance
                instance = _first_running_instance(run_dir / "state.db", coordinator)
                imds.issue_notice(instance, action_time="2026-12-03T12:02:00Z")
            assert coordinator.wait(scaled(180)) == -signal.SIGKILL, (
                point,
                (tmp_path / f"{point}.log").read_text(),
            )
        time.sleep(3)  # 90 cloud s down: the segment that was DONE has its instance power off unseen
        last = subprocess.run(command, env=env, capture_output=True, text=True, timeout=scaled(240))
        assert last.returncode == 0, last.stderr[-3000:]
        assert runtime.errors == []
    instances = job_instances(stack, job)
    per_attempt = Counter(i.attempt for i in instances.values())
    assert max(per_attempt.values()) == 1, per_attempt  # no attempt launched twice
    state = sqlite3.connect(run_dir / "state.db")
    launched = {
        row[0] for row in state.execute("SELECT instance_id FROM attempts WHERE instance_id IS NOT NULL")
    }
    assert launched == set(instances)  # every instance EC2 knows is one the state knows
    assert sorted(predictions(run_dir)) == sorted(pq.read_table(sentences_parquet).column("id").to_pylist())
    assert alive(stack, job) == []
    assert BudgetGuard(1000, spend_log).state().reservations == {}  # every reservation settled
    draining = [e for e in events(run_dir) if e["to_state"] == "DRAINING"]
    assert len(draining) == 1  # the move the killed coordinator made was not repeated
    ledger = [json.loads(line) for line in (run_dir / "ledger.jsonl").read_text().splitlines()]
    attempts = [a for a in ledger if a["kind"] == "attempt"]
    assert sum(a["end_reason"] == "interrupted" for a in attempts) == 1
    record = json.loads((run_dir / "run.json").read_text())
    origin, scale = float(record["clock_origin"]), float(record["time_scale"])
    billed_from = {a["instance_id"]: a["launched_at"] for a in attempts}
    assert set(billed_from) == set(instances)  # every instance EC2 ran is in the ledger
    for instance_id, info in instances.items():  # from its LaunchTime (whole seconds: +-1 wall s)
        launch_time = origin + (info.launch_time - origin) * scale
        assert abs(billed_from[instance_id] - launch_time) <= scale + 5, (
            instance_id,
            billed_from,
            launch_time,
        )
    # the attempt whose segment was DONE when the coordinator died: billed to its last heartbeat, not to
    # the restart 90 cloud s later (its instance powered itself off when its worker exited)
    done = next(e for e in events(run_dir) if e["to_state"] == "DONE")
    unseen = next(a for a in attempts if a["end_reason"] == "done" and a["segment_id"] == done["segment_id"])
    noticed = origin + (done["ts"] - origin) * scale  # the restart came 3 s (90 cloud s) after this
    assert unseen["ended_at"] < noticed + 30, (unseen, noticed)


def test_a_coordinator_killed_right_after_run_instances_bills_its_instances_from_their_launch_time(
    stack: Infrastructure, tmp_path: Path, busy_model_dir: Path, sentences_parquet: Path
) -> None:
    """Killed right after RunInstances returned, before the state knew the instances: the restart found
    them by their attempt tags but billed them from the restart (205 cloud s late), or launched anew where
    one was gone. Now every instance EC2 ran is in the state and the ledger, billed from its LaunchTime,
    and no attempt is launched twice."""
    from coordinator.cost.budget import BudgetGuard
    from coordinator.job.core.crash_points import CRASH_ENV
    from coordinator.sim.matrix import upload_dataset

    upload_dataset(stack.target.client("s3"), stack.stack.bucket, sentences_parquet, ROWS)
    outputs = stack.save_outputs(tmp_path / "outputs.json")
    run_dir, job = tmp_path / "run", f"ran-{uuid.uuid4().hex[:6]}"
    spend_log = tmp_path / "spend.jsonl"
    command = run_command(outputs, stack.endpoint, job, run_dir, spend_log)
    env = {**os.environ, "SPOTBATCH_HOME": str(tmp_path)}
    with simulated_machines(stack, busy_model_dir, tmp_path, job):
        crash = {**env, CRASH_ENV: "after-run-instances"}
        killed = subprocess.run(command, env=crash, capture_output=True, text=True, timeout=scaled(180))
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
        time.sleep(1)  # 30 cloud s down, and the restart's own: the instances it launched bill meanwhile
        last = subprocess.run(command, env=env, capture_output=True, text=True, timeout=scaled(240))
        assert last.returncode == 0, last.stderr[-3000:]
    instances = job_instances(stack, job)
    assert max(Counter(i.attempt for i in instances.values()).values()) == 1  # no attempt launched twice
    ledger = [json.loads(line) for line in (run_dir / "ledger.jsonl").read_text().splitlines()]
    billed_from = {a["instance_id"]: a["launched_at"] for a in ledger if a["kind"] == "attempt"}
    assert set(billed_from) == set(instances)  # every instance EC2 ran is in the ledger
    record = json.loads((run_dir / "run.json").read_text())
    origin, scale = float(record["clock_origin"]), float(record["time_scale"])
    for instance_id, info in instances.items():  # from its LaunchTime (whole seconds: +-1 wall s)
        launch_time = origin + (info.launch_time - origin) * scale
        assert abs(billed_from[instance_id] - launch_time) <= scale + 5, (
            instance_id,
            billed_from,
            launch_time,
        )
    assert sorted(predictions(run_dir)) == sorted(pq.read_table(sentences_parquet).column("id").to_pylist())
    assert alive(stack, job) == [] and BudgetGuard(1000, spend_log).state().reservations == {}


@contextlib.contextmanager
def simulated_machines(
    stack: Infrastructure, model: Path, tmp_path: Path, job: str
) -> Iterator[tuple[MetadataServer, InstanceRuntime]]:
    """What the cloud does for a coordinator run as its own process: the metadata service and the machines
    that boot the job's instances from their user-data (time scale 30)."""
    image = MachineImage(files={IMAGE_MODEL_DIR: str(model)})
    with (
        MetadataServer() as imds,
        InstanceRuntime(
            stack.target,
            image,
            imds=imds,
            log_dir=tmp_path / "workers",
            clock=CloudClock(scale=30),
            job_id=job,
        ) as runtime,
    ):
        yield imds, runtime


def test_sigterm_stops_a_run_cleanly_with_the_cut_jobs_records_and_exit_130(
    stack: Infrastructure, tmp_path: Path, busy_model_dir: Path, sentences_parquet: Path
) -> None:
    """SIGTERM (a CI runner, a container stop, `kill`) ended the coordinator at once: exit 143, no message,
    no run.json or ledger for the cut job. Now it stops as Ctrl-C does: instances terminated and confirmed,
    the cut job's records written, one line, exit 130; the same command resumes and finishes."""
    from coordinator.sim.matrix import upload_dataset

    upload_dataset(stack.target.client("s3"), stack.stack.bucket, sentences_parquet, ROWS)
    outputs = stack.save_outputs(tmp_path / "outputs.json")
    run_dir, job = tmp_path / "run", f"term-{uuid.uuid4().hex[:6]}"
    command = run_command(outputs, stack.endpoint, job, run_dir, tmp_path / "spend.jsonl")
    env = {**os.environ, "SPOTBATCH_HOME": str(tmp_path)}
    with simulated_machines(stack, busy_model_dir, tmp_path, job):
        coordinator = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _first_running_instance(run_dir / "state.db", coordinator)
        coordinator.send_signal(signal.SIGTERM)
        _, stderr = coordinator.communicate(timeout=scaled(120))
        assert coordinator.returncode == 130, stderr.decode()[-3000:]
        assert stderr.decode().strip().splitlines()[-1] == "interrupted"
        assert alive(stack, job) == []
        record = json.loads((run_dir / "run.json").read_text())
        assert (
            record["stopped"].startswith("interrupted") and record["segments_done"] < record["segments_total"]
        )
        ledger = [json.loads(line) for line in (run_dir / "ledger.jsonl").read_text().splitlines()]
        assert any(a["kind"] == "attempt" for a in ledger)  # what the cut job spent, priced
        resumed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=scaled(240))
        assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert sorted(predictions(run_dir)) == sorted(pq.read_table(sentences_parquet).column("id").to_pylist())


def test_a_second_coordinator_on_the_same_job_refuses_before_launching_anything(
    stack: Infrastructure, tmp_path: Path, busy_model_dir: Path, sentences_parquet: Path
) -> None:
    """Two coordinators on one job (a resume on a laptop while the server's still runs) both launched every
    segment. The job's lease in S3 (conditional writes) lets one run it; the other stops in one line naming
    the holder, and launches nothing."""
    from coordinator.sim.matrix import upload_dataset

    upload_dataset(stack.target.client("s3"), stack.stack.bucket, sentences_parquet, ROWS)
    outputs = stack.save_outputs(tmp_path / "outputs.json")
    job = f"lease-{uuid.uuid4().hex[:6]}"
    first = run_command(outputs, stack.endpoint, job, tmp_path / "first", tmp_path / "spend.jsonl")
    second = run_command(outputs, stack.endpoint, job, tmp_path / "second", tmp_path / "spend.jsonl")
    env = {**os.environ, "SPOTBATCH_HOME": str(tmp_path)}
    with simulated_machines(stack, busy_model_dir, tmp_path, job):
        coordinator = subprocess.Popen(first, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _first_running_instance(tmp_path / "first" / "state.db", coordinator)
        # the first held still until the second watches its lease (on a loaded host the first finished and
        # let go of the job before the second had started, and the second ran it); then it goes on and renews
        # its lease (or finishes and releases it) while the second watches, and the second refuses
        coordinator.send_signal(signal.SIGSTOP)
        said: list[str] = []
        try:
            watcher = subprocess.Popen(
                second, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            assert watcher.stderr is not None
            for line in watcher.stderr:  # until it says it watches the first's lease (or it ends)
                said.append(line)
                if "taken over if not renewed" in line:
                    break
        finally:
            coordinator.send_signal(signal.SIGCONT)
        out, err = watcher.communicate(timeout=scaled(240))
        refused = subprocess.CompletedProcess(second, watcher.returncode, out, "".join(said) + err)
        _, stderr = coordinator.communicate(timeout=scaled(240))
        assert coordinator.returncode == 0, stderr.decode()[-3000:]
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert (
        refused.stderr.strip()
        .splitlines()[-1]
        .startswith(f"error: the job is run by another coordinator: process {coordinator.pid} on ")
    )
    assert not (tmp_path / "second" / "state.db").exists() or sqlite3.connect(
        tmp_path / "second" / "state.db"
    ).execute("SELECT COUNT(*) FROM attempts").fetchone() == (0,)
    per_attempt = Counter(i.attempt for i in job_instances(stack, job).values())
    assert max(per_attempt.values()) == 1 and len(per_attempt) == 4, per_attempt  # one launch per segment
    assert sorted(predictions(tmp_path / "first")) == sorted(
        pq.read_table(sentences_parquet).column("id").to_pylist()
    )


FILE_SIZE_LIMIT = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), resource.RLIM_INFINITY))
sys.argv = ["spotbatch", *sys.argv[2:]]
from coordinator.cli import main
sys.exit(main())
"""


def test_a_full_disk_mid_run_is_one_line_no_instance_left_and_a_resume_finishes(
    stack: Infrastructure, tmp_path: Path, tiny_model_dir: Path, sentences_parquet: Path
) -> None:
    """The coordinator's files may not grow past 48 KiB (RLIMIT_FSIZE: writes fail as on a full disk): it
    stops with one line that names the file and the resume, terminates the job's instances, and the same
    command without the limit finishes every row once. Its files are the user's alone (0600, 0700)."""
    from coordinator.cost.budget import BudgetGuard
    from coordinator.sim.matrix import upload_dataset

    upload_dataset(stack.target.client("s3"), stack.stack.bucket, sentences_parquet, ROWS)
    outputs = stack.save_outputs(tmp_path / "outputs.json")
    run_dir, job = tmp_path / "run", f"full-{uuid.uuid4().hex[:6]}"
    spend_log = tmp_path / "budget" / "spend.jsonl"
    command = run_command(outputs, stack.endpoint, job, run_dir, spend_log)
    env = {**os.environ, "SPOTBATCH_HOME": str(tmp_path)}
    with simulated_machines(stack, tiny_model_dir, tmp_path, job):
        full = subprocess.run(
            [sys.executable, "-c", FILE_SIZE_LIMIT, str(48 * 1024), *command[3:]],
            env=env,
            capture_output=True,
            text=True,
            timeout=scaled(240),
        )
        assert full.returncode == 2, full.stderr[-3000:]
        assert "Traceback" not in full.stderr
        last = full.stderr.strip().splitlines()[-1]
        assert last.startswith("error: ") and f"the same command with --job-id {job}" in last, last
        assert str(run_dir) in last
        assert alive(stack, job) == []
        resumed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=scaled(240))
        assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert sorted(predictions(run_dir)) == sorted(pq.read_table(sentences_parquet).column("id").to_pylist())
    assert alive(stack, job) == []
    assert BudgetGuard(1000, spend_log).state().reservations == {}
    for path in (run_dir / "state.db", run_dir / "ledger.jsonl", run_dir / "predictions.parquet", spend_log):
        assert path.stat().st_mode & 0o077 == 0, f"{path} is readable by others: {oct(path.stat().st_mode)}"
    assert (run_dir.stat().st_mode & 0o077, spend_log.parent.stat().st_mode & 0o077) == (0, 0)


def run_command(outputs: Path, endpoint: str, job: str, run_dir: Path, spend_log: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "coordinator",
        "run",
        "--outputs",
        str(outputs),
        "--endpoint",
        endpoint,
        "--job-id",
        job,
        "--run-dir",
        str(run_dir),
        "--input-key",
        DATASET_KEY,
        "--rows",
        str(ROWS),
        "--segments",
        "4",
        "--policy",
        "spot-only",
        "--time-scale",
        "30",
        "--cycle-seconds",
        "0.3",
        "--heartbeat-timeout",
        "8",
        "--boot-timeout",
        "60",
        "--batch-size",
        "16",
        "--checkpoint-every",
        "4",
        "--heartbeat-seconds",
        "1",
        "--notice-poll-seconds",
        "0.5",
        "--override",
        "price-of-the-day=the table's undated price is fine in a test",
        "--spend-log",
        str(spend_log),
        "--ceiling",
        "1000",
    ]


def _first_running_instance(path: Path, coordinator: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + scaled(90)
    while time.monotonic() < deadline and coordinator.poll() is None:
        try:
            with sqlite3.connect(path, timeout=scaled(1)) as db:
                found = db.execute(
                    "SELECT a.instance_id FROM attempts a JOIN segments s USING (job_id, segment_id) "
                    "WHERE s.state = 'RUNNING' AND a.ended_at IS NULL AND a.instance_id IS NOT NULL"
                ).fetchone()
        except sqlite3.OperationalError:
            found = None
        if found:
            return str(found[0])
        time.sleep(0.2)
    raise AssertionError("no segment reached RUNNING")


def test_budget_refusal_fails_the_segments_and_launches_nothing(
    stack: Infrastructure, tmp_path: Path, tiny_model_dir: Path, sentences_parquet: Path
) -> None:
    config = settings(tmp_path, tiny_model_dir, sentences_parquet, runs={"on-demand": 1}, budget_usd=0.0001)
    (run,) = run_matrix(config, stack)
    outcome = run.result.outcome
    assert not outcome.succeeded and outcome.segments_done == 0
    assert set(outcome.failures) == {"seg-0000", "seg-0001", "seg-0002", "seg-0003"}
    assert all("budget guard refused" in why for why in outcome.failures.values())
    assert job_instances(stack, job_of(config, "on-demand-01")) == {}  # nothing was launched
    assert run.result.merge is None and not (run.result.run_dir / "predictions.csv").exists()
    spend_log = config.out_dir / "spend_log.jsonl"
    assert not spend_log.exists() or spend_log.read_text() == ""  # a refused estimate reserves nothing


def test_run_cli_names_a_bad_outputs_file(tmp_path: Path) -> None:
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"bucket": {"value": "b"}, "region": {"value": "us-east-1"}}))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "coordinator",
            "run",
            "--outputs",
            str(outputs),
            "--job-id",
            "j",
            "--input-key",
            "data/k",
            "--rows",
            "10",
            "--endpoint",
            "http://127.0.0.1:1",
        ],
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert result.returncode == 2
    assert f"{outputs}: no 'launch_template_ids' output" in result.stderr
    assert "Traceback" not in result.stderr


def test_trace_replay_interrupts_spot_and_refuses_spot_launches_while_unavailable(
    stack: Infrastructure, tmp_path: Path, busy_model_dir: Path, sentences_parquet: Path
) -> None:
    trace = FIXTURES / "traces" / "flaky-zone.json"
    config = settings(
        tmp_path, busy_model_dir, sentences_parquet, runs={"hybrid": 1}, trace=trace, spot_share=1.0
    )
    (run,) = run_matrix(config, stack)
    outcome = run.result.outcome
    assert outcome.succeeded, outcome.failures
    record = json.loads((run.result.run_dir / "run.json").read_text())
    assert record["interruption_model"].startswith("trace flaky-zone from tick")
    log = events(run.result.run_dir)
    # every segment started on spot; the zone lost its spot capacity within two cloud minutes, so each one
    # was either interrupted (notice) or refused at launch (capacity), and finished on on-demand
    for segment in ("seg-0000", "seg-0001", "seg-0002", "seg-0003"):
        mine = [e for e in log if e["segment_id"] == segment]
        assert any(e["to_state"] in ("INTERRUPTED", "FAILED_LAUNCH") for e in mine), mine
        assert "on-demand" in [e for e in mine if e["to_state"] == "LAUNCHING"][-1]["reason"]
    capacity = [f for f in record["faults_injected"] if f.endswith("InsufficientInstanceCapacity")]
    assert len(capacity) + run.interruptions >= 4
    assert sorted(predictions(run.result.run_dir)) == sorted(
        pq.read_table(sentences_parquet).column("id").to_pylist()
    )
    assert alive(stack, job_of(config, "hybrid-01")) == []


def test_deadline_policy_goes_on_demand_in_an_outage_and_back_to_spot_after_it(
    stack: Infrastructure, tmp_path: Path, busy_model_dir: Path, sentences_parquet: Path
) -> None:
    """Spot is gone for 3 of every 8 cloud minutes; two segments of minutes each (time scale 30) see at
    least one outage. With a 1-hour deadline the slack is below the policy's reserve (1.5 h with all
    the work ahead; the trace opens with an outage), so an outage sends a segment to on-demand rather than
    waiting; when spot is back (a minute after the refused launch) the slack still pays two changeovers, so
    the on-demand instance is stopped (it drains to its checkpoint) and the segment continues on spot."""
    trace = FIXTURES / "traces" / "outage-every-8-min.json"
    config = settings(
        tmp_path,
        busy_model_dir,
        sentences_parquet,
        runs={"deadline": 1},
        trace=trace,
        deadline_seconds=3600.0,
        segments=2,
        time_scale=30.0,  # at 60 a loaded CI host (2 cores, a second test beside) stretched it 2.8x: 3,966 s
    )
    (run,) = run_matrix(config, stack)
    outcome = run.result.outcome
    assert outcome.succeeded, outcome.failures
    record = json.loads((run.result.run_dir / "run.json").read_text())
    assert record["deadline_seconds"] == 3600.0 and record["deadline_met"] is True
    switched = [a for a in outcome.attempts if a.end_reason == "switched"]
    assert switched and all(a.market == "on-demand" for a in switched), [
        (a.market, a.end_reason) for a in outcome.attempts
    ]

    def continued_on_spot(switch: Any) -> bool:
        later = [
            a
            for a in outcome.attempts
            if a.segment_id == switch.segment_id and a.launched_at > switch.launched_at
        ]
        return bool(later) and later[0].market == "spot"

    # the next instance after a switch is spot (a spot launch refused in a new outage may send it to
    # on-demand)
    assert any(continued_on_spot(a) for a in switched), [
        (a.segment_id, a.market, a.end_reason) for a in outcome.attempts
    ]
    reasons = [e["reason"] for e in events(run.result.run_dir)]
    assert any(r.startswith("switched to spot: checkpoint written") for r in reasons)
    assert any(r.startswith("deadline: spot (slack") for r in reasons)
    assert sorted(predictions(run.result.run_dir)) == sorted(
        pq.read_table(sentences_parquet).column("id").to_pylist()
    )
    assert alive(stack, job_of(config, "deadline-01")) == []


def test_a_spot_launch_tries_the_cheapest_type_first_and_moves_to_the_next_pool_without_capacity(
    stack: Infrastructure, tmp_path: Path, tiny_model_dir: Path, sentences_parquet: Path
) -> None:
    """Two types: c6i.xlarge's spot is cheaper than c7i.xlarge's in the table; it has no capacity in any
    zone, so the launch lands on c7i.xlarge, and the attempt is priced at c7i.xlarge's spot rate. The pools
    are tried by each zone's own price (the emulator's zone IDs): every c6i.xlarge zone cheaper than the
    cheapest c7i.xlarge zone refuses first."""
    subnets = list(stack.stack.subnet_ids)
    prices = ZonePrices.for_zones(
        PriceTable.load(), stack.target.client("ec2"), region="us-east-1", zones=subnets
    )
    table = PriceTable.load()

    def price(kind: str, zone: str) -> float:
        own = prices.of("spot", kind, zone)
        return own if own is not None else table.quote("aws", "us-east-1", kind, "spot").rate_usd_per_hour

    cheapest_c7i = min(price("c7i.xlarge", z) for z in subnets)
    zones = sum(price("c6i.xlarge", z) < cheapest_c7i for z in subnets)
    assert zones >= 1  # the case needs at least one refusal
    faults = (FaultRule("RunInstances", "InsufficientInstanceCapacity", instance_type="c6i.xlarge"),)
    config = settings(
        tmp_path,
        tiny_model_dir,
        sentences_parquet,
        runs={"spot-only": 1},
        segments=1,
        faults=faults,
        instance_types=("c7i.xlarge", "c6i.xlarge"),
    )
    (run,) = run_matrix(config, stack)
    assert run.result.outcome.succeeded, run.result.outcome.failures
    record = json.loads((run.result.run_dir / "run.json").read_text())
    assert record["faults_injected"] == ["RunInstances: InsufficientInstanceCapacity"] * zones
    ledger = [json.loads(line) for line in (run.result.run_dir / "ledger.jsonl").read_text().splitlines()]
    [attempt] = [a for a in ledger if a["kind"] == "attempt"]
    assert (attempt["instance_type"], attempt["market"]) == ("c7i.xlarge", "spot")
    assert (
        attempt["rate_usd_per_hour"]
        == PriceTable.load().quote("aws", "us-east-1", "c7i.xlarge", "spot").rate_usd_per_hour
    )
    described = job_instances(stack, job_of(config, run.name))
    assert {info.instance_type for info in described.values()} == {"c7i.xlarge"}
    assert len(predictions(run.result.run_dir)) == ROWS
    assert alive(stack, job_of(config, run.name)) == []
