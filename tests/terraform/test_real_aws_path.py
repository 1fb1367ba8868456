"""The commands of "Run it on your AWS account", walked on a moto server standing in for the account, with the
real worker image: `spotbatch infra apply-real` (plan, confirmation, the saved plan applied), `spotbatch image
push` (the image built here with podman; the emulator's ECR takes its manifest), `apply-real` again,
`spotbatch run` as a user that holds only docs/aws/coordinator-policy.json with IAM enforced (every instance
boots the rendered user-data under bash, and its `docker` runs the real image with podman; one spot worker is
interrupted mid-segment), a second image pushed and applied that the next job's workers run, and `spotbatch
infra destroy-real` (refuses while instances or data are left, then nothing is).

The stack is a second one on the session's moto (`deployed_stack`), named `realcheck`; the coordinator is
`python -m coordinator`, as `make apply-real`, `make image-push`, `make run-real` and `make destroy-real`
run it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from coordinator.build.container_engine import Engine
from coordinator.job.aws.instances import list_instances
from coordinator.sim.emulator import set_iam_enforcement
from coordinator.sim.emulator_stack import Infrastructure
from coordinator.stack.emulator_policy import for_emulator
from coordinator.stack.iam_documents import Statement, render
from coordinator.stack.outputs import StackOutputs, read_outputs
from coordinator.stack.permissions import arns_for, coordinator_policy
from coordinator.stack.target import AwsTarget
from tests.host_load import scaled
from tests.image_fixtures import WorkerImage

pytestmark = pytest.mark.slow
NOTICE_SECONDS = 20.0  # the reclaim after a notice; the worker drains and its machine powers off long before
PRICE_OVERRIDE = "price-of-the-day=the table's undated price, checked by hand for this test"


def spotbatch(*args: str, home: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SPOTBATCH_EMULATOR_"))}
    base.pop("CONFIRM", None)
    return subprocess.run(
        [sys.executable, "-m", "coordinator", *args],
        capture_output=True,
        text=True,
        env={**base, "SPOTBATCH_HOME": str(home), **(env or {})},
        stdin=subprocess.DEVNULL,
        timeout=scaled(600),
        check=False,
    )


def coordinator_user(admin: AwsTarget, name: str, statements: list[Statement]) -> dict[str, str]:
    """A user holding only `statements` (as a managed policy, as docs/aws suggests); its keys as the
    environment `--endpoint` reads them."""
    iam = admin.client("iam")
    iam.create_user(UserName=name)
    document = json.dumps(render(for_emulator(statements)))
    arn = iam.create_policy(PolicyName=f"{name}-policy", PolicyDocument=document)["Policy"]["Arn"]
    iam.attach_user_policy(UserName=name, PolicyArn=arn)
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return {
        "SPOTBATCH_EMULATOR_ACCESS_KEY_ID": key["AccessKeyId"],
        "SPOTBATCH_EMULATOR_SECRET_ACCESS_KEY": key["SecretAccessKey"],
    }


@contextmanager
def iam_enforced(endpoint: str) -> Iterator[None]:
    set_iam_enforcement(endpoint, True)
    try:
        yield
    finally:
        set_iam_enforcement(endpoint, False)


@contextmanager
def cloud(admin: AwsTarget, engine: Engine, log_dir: Path) -> Iterator[tuple[Any, Any]]:
    """What a real account has and this machine lacks: machines that boot the user-data (their docker is
    podman, running the real image), the metadata service, and AWS's part in an interruption."""
    from coordinator.job.core.cloud_clock import CloudClock
    from coordinator.sim.container_machine import ContainerMode
    from coordinator.sim.injector import InterruptionInjector
    from coordinator.sim.instance_runtime import InstanceRuntime
    from coordinator.sim.machine import MachineImage
    from coordinator.sim.metadata_server import MetadataServer

    clock = CloudClock()
    with (
        MetadataServer() as imds,
        InstanceRuntime(
            admin,
            MachineImage(files={}),
            imds=imds,
            log_dir=log_dir,
            clock=clock,
            containers=ContainerMode.start(engine),
        ) as runtime,
        InterruptionInjector(
            admin.client("ec2"), runtime, imds, clock, None, notice_seconds=NOTICE_SECONDS, aws=admin
        ) as injector,
    ):
        yield runtime, injector


def spot_worker_at_work(admin: AwsTarget, bucket: str, job: str) -> str | None:
    """A spot attempt of the job whose worker has checkpointed rows, at most half of them, and is still
    running: its instance."""
    s3 = admin.client("s3")
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=f"jobs/{job}/heartbeats/").get("Contents", [])
    for item in listed:
        beat = json.loads(s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read())
        done, total = beat.get("rows_done", 0), beat.get("rows_total", 0)
        # not one past half its rows: beside a CPU hog a worker noticed near its end finished its segment
        # before it read the notice, and no attempt ended interrupted
        if beat.get("market") == "spot" and beat.get("state") == "running" and 0 < done <= total // 2:
            return str(beat["instance_id"])
    return None


def run_interrupting_one_spot_worker(
    command: list[str], env: dict[str, str], admin: AwsTarget, bucket: str, job: str, injector: Any
) -> subprocess.CompletedProcess[str]:
    """`spotbatch run` in the background; the first spot worker seen at work gets the 2-minute notice."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SPOTBATCH_EMULATOR_"))}
    with subprocess.Popen(
        [sys.executable, "-m", "coordinator", *command],
        env={**base, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    ) as process:
        deadline = time.monotonic() + scaled(300)
        while process.poll() is None and not injector.records and time.monotonic() < deadline:
            instance = spot_worker_at_work(admin, bucket, job)
            if instance is not None:
                injector.interrupt(instance)
            time.sleep(0.2)
        stdout, stderr = process.communicate(timeout=scaled(600))
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def derived_image(engine: Engine, base: str, tmp_path: Path) -> str:
    """A second image (the first plus a label: another image id), as a rebuild after a change would be."""
    (tmp_path / "Containerfile.second").write_text(f"FROM {base}\nLABEL spotbatch.test=second-push\n")
    tag = "localhost/spotbatch-worker-test:second"
    engine.call(
        "build",
        *engine.build_options,
        "-q",
        "-f",
        str(tmp_path / "Containerfile.second"),
        "-t",
        tag,
        str(tmp_path),
    )
    return tag


def pulled_images(log_dir: Path, instance_ids: list[str]) -> set[str]:
    """The image ids the machines' docker pulled (the shim's record, per machine)."""
    found: set[str] = set()
    for instance_id in instance_ids:
        record = log_dir / "machines" / instance_id / ".docker" / "spotbatch-images.json"
        if record.is_file():
            found |= set(json.loads(record.read_text()).values())
    return found


@pytest.mark.timeout(900)  # the README walked: apply, two image builds and pushes, a job, destroy
def test_apply_push_run_destroy_as_a_real_user_would(
    deployed_stack: Infrastructure,
    tmp_path: Path,
    worker_image: WorkerImage,
    podman_engine: Engine,
    sentences_parquet: Path,
) -> None:
    admin, endpoint = deployed_stack.target, deployed_stack.endpoint
    admin_env = {
        "SPOTBATCH_EMULATOR_ACCESS_KEY_ID": admin.credentials[0],
        "SPOTBATCH_EMULATOR_SECRET_ACCESS_KEY": admin.credentials[1],
        "SPOTBATCH_CONTAINER_ENGINE": "podman",
    }
    state = tmp_path / "state"
    apply = [
        "infra",
        "apply-real",
        "--endpoint",
        endpoint,
        "--state-dir",
        str(state),
        "--override",
        PRICE_OVERRIDE,
    ]
    first = [*apply, "--bucket-name", "realcheck-bucket", "--name", "realcheck"]
    push = ["image", "push", "--endpoint", endpoint, "--state-dir", str(state), "--tag"]

    # 1. make apply-real: the plan, then nothing without a yes
    refused = spotbatch(*first, home=tmp_path, env=admin_env)
    assert refused.returncode == 5, refused.stderr
    assert "no inbound rule" in refused.stdout and "without CONFIRM=yes" in refused.stderr
    assert "realcheck-bucket" not in [b["Name"] for b in admin.client("s3").list_buckets()["Buckets"]]
    applied = spotbatch(*first, home=tmp_path, env={**admin_env, "CONFIRM": "yes"})
    assert applied.returncode == 0, applied.stderr
    assert "no worker image yet" in applied.stdout

    # 2. make image-push (the real image, built from a clean checkout), make apply-real again
    pushed = spotbatch(*push, worker_image.tag, home=tmp_path, env=admin_env)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    first_image = json.loads((state / "image.json").read_text())
    assert first_image["reference"].startswith(
        str(read_outputs(state / "outputs.json")["repository_url"]) + "@sha256:"
    )
    again = spotbatch(*apply, home=tmp_path, env={**admin_env, "CONFIRM": "yes"})  # the saved bucket and name
    assert again.returncode == 0, again.stderr
    assert "make run-real INPUT=" in again.stdout
    stack = StackOutputs.read(state / "outputs.json")
    assert set(stack.launch_template_ids) == {"spot", "on-demand"}
    zones = admin.client("ec2").describe_availability_zones()["AvailabilityZones"]
    assert set(stack.subnet_ids) == {z["ZoneName"] for z in zones}  # a subnet in every zone

    # 3. make run-real, as a user holding only the coordinator's policy, IAM enforced, one spot worker
    #    interrupted mid-segment: its segment continues on on-demand from its checkpoint
    account = admin.client("sts").get_caller_identity()["Account"]
    policy = coordinator_policy(arns_for(stack, account))
    user = coordinator_user(admin, "realcheck-coordinator", policy)
    launches = [s for s in policy if any(action == "ec2:RunInstances" for action, _ in s.actions)]
    assert [s.sid for s in launches] == ["LaunchFromTheStackTemplates", "LaunchWithTheStackParts"]
    crippled = coordinator_user(admin, "realcheck-no-launch", [s for s in policy if s not in launches])
    job = f"real-{uuid.uuid4().hex[:6]}"
    run = [
        "run",
        "--endpoint",
        endpoint,
        "--outputs",
        str(state / "outputs.json"),
        "--input",
        str(sentences_parquet),
        "--override",
        PRICE_OVERRIDE,
        "--spend-log",
        str(tmp_path / "spend.jsonl"),
        "--ceiling",
        "100",
        "--heartbeat-seconds",
        "0.5",
        "--steady-heartbeat-seconds",
        "0.5",
        "--notice-poll-seconds",
        "0.5",
        "--cycle-seconds",
        "0.5",
        "--batch-size",
        "8",
        "--checkpoint-every",
        "1",  # a checkpoint every 8 rows: an interrupted segment resumes mid-way
    ]
    machines = tmp_path / "machines"
    with cloud(admin, podman_engine, machines) as (runtime, injector), iam_enforced(endpoint):
        done = run_interrupting_one_spot_worker(
            [
                *run,
                "--segments",
                "2",
                "--policy",
                "hybrid",
                "--spot-share",
                "1",
                "--job-id",
                job,
                "--run-dir",
                str(tmp_path / job),
            ],
            {**user, "SPOTBATCH_HOME": str(tmp_path)},
            admin,
            stack.bucket,
            job,
            injector,
        )
        denied = spotbatch(
            *run,
            "--segments",
            "2",
            "--job-id",
            f"{job}-x",
            "--run-dir",
            str(tmp_path / "x"),
            home=tmp_path,
            env=crippled,
        )
    assert runtime.errors == []
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert done.stdout.startswith(f"input {sentences_parquet}: 1500 rows, s3://realcheck-bucket/data/")
    assert f"job {job}: 2/2 segments done, 1500 rows verified exactly once, 1500 rows fetched" in done.stdout
    assert [r.kind for r in injector.records] == ["notice"], injector.records
    ids = pq.read_table(tmp_path / job / "predictions.parquet").column("id").to_pylist()
    assert sorted(ids) == sorted(pq.read_table(sentences_parquet).column("id").to_pylist())  # each once
    ledger = [json.loads(line) for line in (tmp_path / job / "ledger.jsonl").read_text().splitlines()]
    attempts = [a for a in ledger if a["kind"] == "attempt"]
    interrupted = [a for a in attempts if a["end_reason"] == "interrupted"]
    assert len(interrupted) == 1 and interrupted[0]["market"] == "spot"
    resumed = [
        a for a in attempts if a["segment_id"] == interrupted[0]["segment_id"] and a is not interrupted[0]
    ]
    assert [a["market"] for a in resumed] == ["on-demand"] and resumed[0]["end_reason"] == "done"
    assert all(a["cpu_percent"] is not None for a in attempts if a["end_reason"] == "done")  # CloudWatch
    assert denied.returncode == 2 and "ec2:RunInstances" in denied.stderr, denied.stderr[-2000:]
    assert "coordinator-policy.json" in denied.stderr  # where to grant it

    logs = admin.client("logs")
    streams = logs.describe_log_streams(logGroupName=stack.log_group, logStreamNamePrefix=f"{job}/")[
        "logStreams"
    ]
    workers = [s["logStreamName"] for s in streams if not s["logStreamName"].endswith("/boot")]
    assert len(workers) == 3  # two spot attempts and the on-demand one, each its own stream
    boots = [s["logStreamName"] for s in streams if s["logStreamName"].endswith("/boot")]
    assert sorted(boots) == sorted(
        f"{w}/boot" for w in workers
    )  # each boot script's own output, signed by curl
    lines = [
        e["message"]
        for name in workers
        for e in logs.get_log_events(logGroupName=stack.log_group, logStreamName=name)["events"]
    ]
    assert any("on the onnx" in line for line in lines)  # the real image's worker: ONNX Runtime
    assert sum("done:" in line for line in lines) == 2 and any(
        "interruption notice" in line for line in lines
    )
    metrics = admin.client("cloudwatch").list_metrics(Namespace=stack.metrics_namespace)["Metrics"]
    assert {"CPUUtilization", "MemoryUsed", "RowsPerSecond"} <= {m["MetricName"] for m in metrics}
    roles = admin.client("iam").list_roles(PathPrefix=stack.worker_role_path)["Roles"]
    assert roles == []  # each job's worker role goes with the job
    first_machines = sorted(p.name for p in (machines / "machines").iterdir())
    assert pulled_images(machines, first_machines) == {worker_image_id(podman_engine, worker_image.tag)}

    # 4. a second image: pushed, applied, and the next job's workers run it (the templates' new version)
    second = derived_image(podman_engine, worker_image.tag, tmp_path)
    assert spotbatch(*push, second, home=tmp_path, env=admin_env).returncode == 0
    assert json.loads((state / "image.json").read_text())["reference"] != first_image["reference"]
    assert spotbatch(*apply, home=tmp_path, env={**admin_env, "CONFIRM": "yes"}).returncode == 0
    with cloud(admin, podman_engine, machines) as (runtime, _), iam_enforced(endpoint):
        next_job = spotbatch(
            *run,
            "--segments",
            "1",
            "--job-id",
            f"{job}-2",
            "--run-dir",
            str(tmp_path / "second"),
            home=tmp_path,
            env=user,
        )
    assert next_job.returncode == 0, next_job.stdout[-2000:] + next_job.stderr[-2000:]
    new_machines = sorted(set(p.name for p in (machines / "machines").iterdir()) - set(first_machines))
    assert len(new_machines) == 1
    assert pulled_images(machines, new_machines) == {worker_image_id(podman_engine, second)}

    # 5. make destroy-real: not while an instance of the stack lives, not over data without a yes to that
    ec2 = admin.client("ec2")
    stray = ec2.run_instances(
        LaunchTemplate={"LaunchTemplateId": stack.launch_template_ids["on-demand"]}, MinCount=1, MaxCount=1
    )["Instances"][0]["InstanceId"]
    destroy = ["infra", "destroy-real", "--state-dir", str(state), "--confirm"]
    busy = spotbatch(*destroy, home=tmp_path)  # nothing but the state folder: no endpoint, no keys
    assert busy.returncode != 0 and f"instances of stack realcheck are alive: {stray}" in busy.stderr
    ec2.terminate_instances(InstanceIds=[stray])
    kept = spotbatch(*destroy, home=tmp_path)
    assert kept.returncode != 0 and "--delete-data" in kept.stderr and "realcheck-bucket" in kept.stderr
    gone = spotbatch(*destroy, "--delete-data", home=tmp_path)
    assert gone.returncode == 0, gone.stderr
    assert "re-listed: no instance tagged Project=spotbatch is alive" in gone.stdout
    assert "realcheck-bucket" not in [b["Name"] for b in admin.client("s3").list_buckets()["Buckets"]]
    repositories = admin.client("ecr").describe_repositories()["repositories"]
    assert not [r for r in repositories if r["repositoryName"] == "realcheck-worker"]
    alive = list_instances(ec2.describe_instances, alive_only=True)
    assert not [i for i in alive.values() if i.tags.get("spotbatch:stack") == "realcheck"]


def worker_image_id(engine: Engine, tag: str) -> str:
    return "sha256:" + engine.call("image", "inspect", "--format", "{{.Id}}", tag).strip().removeprefix(
        "sha256:"
    )
