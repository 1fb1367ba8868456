"""The three commands of "Run it on your AWS account", on a moto server standing in for the account:
`spotbatch infra apply-real` (plan, confirmation, the saved plan applied), `spotbatch run` as a user that
holds only docs/aws/coordinator-policy.json with IAM enforced (every instance boots the rendered user-data
under bash), and `spotbatch infra destroy-real` (refuses while instances or data are left, then nothing is).

The stack is a second one on the session's moto (`deployed_stack`), named `realcheck`; the coordinator is
`python -m coordinator`, as `make apply-real`, `make run-real` and `make destroy-real` run it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from coordinator.job.instances import list_instances
from coordinator.sim.emulator import set_iam_enforcement
from coordinator.sim.emulator_stack import Infrastructure
from coordinator.sim.image import publish_image
from coordinator.stack.iam_documents import Statement, for_emulator, render
from coordinator.stack.outputs import StackOutputs, read_outputs
from coordinator.stack.permissions import arns_for, coordinator_policy
from coordinator.stack.target import AwsTarget

pytestmark = pytest.mark.slow
ROWS = 400
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
        timeout=600,
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
def cloud(admin: AwsTarget, model: Path, log_dir: Path) -> Iterator[Any]:
    """What a real account has and this machine lacks: machines that boot the user-data, and IMDS."""
    from coordinator.job.clock import CloudClock
    from coordinator.sim.image import IMAGE_MODEL_DIR
    from coordinator.sim.instance_runtime import InstanceRuntime
    from coordinator.sim.machine import MachineImage
    from coordinator.sim.metadata_server import MetadataServer

    image = MachineImage(files={IMAGE_MODEL_DIR: str(model)})
    with (
        MetadataServer() as imds,
        InstanceRuntime(admin, image, imds=imds, log_dir=log_dir, clock=CloudClock()) as runtime,
    ):
        yield runtime


def test_apply_run_destroy_as_a_real_user_would(
    deployed_stack: Infrastructure, tmp_path: Path, tiny_model_dir: Path, sentences_parquet: Path
) -> None:
    admin, endpoint = deployed_stack.target, deployed_stack.endpoint
    admin_env = {
        "SPOTBATCH_EMULATOR_ACCESS_KEY_ID": admin.credentials[0],
        "SPOTBATCH_EMULATOR_SECRET_ACCESS_KEY": admin.credentials[1],
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

    # 1. make apply-real: the plan, then nothing without a yes
    refused = spotbatch(*first, home=tmp_path, env=admin_env)
    assert refused.returncode == 5, refused.stderr
    assert "no inbound rule" in refused.stdout and "without CONFIRM=yes" in refused.stderr
    assert "realcheck-bucket" not in [b["Name"] for b in admin.client("s3").list_buckets()["Buckets"]]
    applied = spotbatch(*first, home=tmp_path, env={**admin_env, "CONFIRM": "yes"})
    assert applied.returncode == 0, applied.stderr
    assert "no worker image yet" in applied.stdout

    # 2. make image-push (the simulated image: this machine has no Docker), make apply-real again
    repository = str(read_outputs(state / "outputs.json")["repository_url"])
    reference = publish_image(admin.client("ecr"), repository)
    (state / "image.json").write_text(json.dumps({"reference": reference}))
    again = spotbatch(*apply, home=tmp_path, env={**admin_env, "CONFIRM": "yes"})  # the saved bucket and name
    assert again.returncode == 0, again.stderr
    assert "make run-real INPUT=" in again.stdout
    stack = StackOutputs.read(state / "outputs.json")
    assert set(stack.launch_template_ids) == {"spot", "on-demand"}
    zones = admin.client("ec2").describe_availability_zones()["AvailabilityZones"]
    assert set(stack.subnet_ids) == {z["ZoneName"] for z in zones}  # a subnet in every zone

    # 3. make run-real, as a user holding only the coordinator's policy, IAM enforced
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
        "--segments",
        "2",
        "--override",
        PRICE_OVERRIDE,
        "--spend-log",
        str(tmp_path / "spend.jsonl"),
        "--ceiling",
        "100",
        "--heartbeat-seconds",
        "1",
        "--cycle-seconds",
        "0.5",
    ]
    with cloud(admin, tiny_model_dir, tmp_path / "machines") as runtime, iam_enforced(endpoint):
        done = spotbatch(*run, "--job-id", job, "--run-dir", str(tmp_path / job), home=tmp_path, env=user)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        denied = spotbatch(
            *run, "--job-id", f"{job}-x", "--run-dir", str(tmp_path / "x"), home=tmp_path, env=crippled
        )
    assert runtime.errors == []
    assert done.stdout.startswith(f"input {sentences_parquet}: 1500 rows, s3://realcheck-bucket/data/")
    assert f"job {job}: 2/2 segments done, 1500 rows merged" in done.stdout
    assert f"predictions {tmp_path / job / 'predictions.parquet'}" in done.stdout
    ids = pq.read_table(tmp_path / job / "predictions.parquet").column("id").to_pylist()
    assert sorted(ids) == sorted(pq.read_table(sentences_parquet).column("id").to_pylist())  # each once
    assert denied.returncode == 2 and "ec2:RunInstances" in denied.stderr, denied.stderr[-2000:]
    assert "coordinator-policy.json" in denied.stderr  # where to grant it

    streams = admin.client("logs").describe_log_streams(logGroupName=stack.log_group)["logStreams"]
    assert {s["logStreamName"].split("/")[0] for s in streams} >= {job}  # the workers' logs, per attempt
    metrics = admin.client("cloudwatch").list_metrics(Namespace=stack.metrics_namespace)["Metrics"]
    assert {"CPUUtilization", "MemoryUsed", "RowsPerSecond"} <= {m["MetricName"] for m in metrics}
    ledger = [json.loads(line) for line in (tmp_path / job / "ledger.jsonl").read_text().splitlines()]
    assert all(
        a["cpu_percent"] is not None for a in ledger if a["kind"] == "attempt"
    )  # read back from CloudWatch
    roles = admin.client("iam").list_roles(PathPrefix=stack.worker_role_path)["Roles"]
    assert roles == []  # each job's worker role goes with the job

    # 4. make destroy-real: not while an instance of the stack lives, not over data without a yes to that
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
