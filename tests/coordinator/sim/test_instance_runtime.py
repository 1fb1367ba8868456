"""The machines behind moto's instances run the launch template's rendered user-data under bash: the max
lifetime is armed before anything else, a broken script still powers its instance off, and a machine that
outlives its lifetime is shut down with its worker. Cloud time runs 7,200x here: the stack's 6-hour
lifetime is 3 wall seconds (at 6, an unloaded host could finish the worker's 1,500 rows first)."""

from __future__ import annotations

import base64
import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coordinator.build.worker_image import IMAGE_MODEL_DIR
from coordinator.job.aws.fleet import Fleet
from coordinator.job.aws.instances import list_instances
from coordinator.job.aws.roles import JobRoles
from coordinator.job.core.cloud_clock import CloudClock
from coordinator.job.core.worker_contract import LaunchRequest, tags_for
from coordinator.sim.emulator_stack import Infrastructure
from coordinator.sim.instance_runtime import InstanceRuntime
from coordinator.sim.machine import MachineImage, SimulatedInstance
from coordinator.sim.matrix import upload_dataset
from coordinator.sim.metadata_server import MetadataServer
from coordinator.sim.settings import DATASET_KEY
from coordinator.stack.defaults import DEFAULT_MAX_LIFETIME_SECONDS
from coordinator.stack.emulator_policy import for_emulator
from tests.host_load import scaled

pytestmark = pytest.mark.slow
SCALE = 7_200.0
LIFETIME_MINUTES = DEFAULT_MAX_LIFETIME_SECONDS / 60


@pytest.fixture
def job(deployed_stack: Infrastructure) -> Iterator[tuple[str, str]]:
    """A job id and its worker role's instance profile (made and removed as a run does)."""
    job_id = f"boot-{uuid.uuid4().hex[:6]}"
    account = deployed_stack.target.client("sts").get_caller_identity()["Account"]
    roles = JobRoles(
        deployed_stack.target.client("iam"), deployed_stack.stack, account=account, shape=for_emulator
    )
    role = roles.ensure(job_id)
    try:
        yield job_id, role.instance_profile_arn
    finally:
        roles.delete(job_id)


@contextlib.contextmanager
def machines_for(
    stack: Infrastructure,
    image: MachineImage,
    log_dir: Path,
    job_id: str,
    *,
    scale: float = SCALE,
    **more: Any,
) -> Iterator[InstanceRuntime]:
    """The runtime behind moto's instances of `job_id`, with its metadata service."""
    with (
        MetadataServer() as imds,
        InstanceRuntime(
            stack.target,
            image,
            imds=imds,
            log_dir=log_dir,
            clock=CloudClock(scale=scale),
            job_id=job_id,
            poll_every=0.2,
            **more,
        ) as machines,
    ):
        yield machines


@pytest.fixture
def runtime(
    deployed_stack: Infrastructure, busy_model_dir: Path, tmp_path: Path, job: tuple[str, str]
) -> Iterator[InstanceRuntime]:
    image = MachineImage(files={IMAGE_MODEL_DIR: str(busy_model_dir)})
    with machines_for(deployed_stack, image, tmp_path / "machines", job[0]) as machines:
        yield machines


def wait_until_gone(
    ec2: Any, runtime: InstanceRuntime, instance_id: str, timeout: float
) -> SimulatedInstance:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = list_instances(ec2.describe_instances, job_id=None).get(instance_id)
        machine = runtime.instances.get(instance_id)
        if machine is not None and machine.gone and state is not None and not state.alive:
            return machine
        time.sleep(0.2)
    raise AssertionError(f"{instance_id} still up after {timeout} s")


def test_a_broken_boot_script_still_powers_the_instance_off(
    deployed_stack: Infrastructure, runtime: InstanceRuntime, job: tuple[str, str], tmp_path: Path
) -> None:
    """No segment tag: the script's tag read fails under `set -e`; the lifetime was armed before it, and
    the EXIT trap powers the machine off at once, which terminates the instance."""
    job_id, profile = job
    ec2 = deployed_stack.target.client("ec2")
    tags = {"Project": "spotbatch", "spotbatch:job": job_id}  # spotbatch:segment left out on purpose
    instance_id = ec2.run_instances(
        LaunchTemplate={"LaunchTemplateId": deployed_stack.stack.launch_template_ids["on-demand"]},
        MinCount=1,
        MaxCount=1,
        SubnetId=next(iter(deployed_stack.stack.subnet_ids.values())),
        IamInstanceProfile={"Arn": profile},
        TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
        ],
    )["Instances"][0]["InstanceId"]
    machine = wait_until_gone(ec2, runtime, instance_id, timeout=scaled(30))
    assert machine.shutdowns == [LIFETIME_MINUTES, 0.0]  # the lifetime first, then the trap's "now"
    assert machine.worker is None  # it never got as far as the worker
    template = ec2.describe_launch_template_versions(
        LaunchTemplateId=deployed_stack.stack.launch_template_ids["on-demand"]
    )["LaunchTemplateVersions"][0]["LaunchTemplateData"]["UserData"]
    ran = (tmp_path / "machines" / "machines" / instance_id / "user-data.sh").read_text()
    assert ran == base64.b64decode(template).decode()  # the script the template holds, byte for byte
    assert runtime.errors == []


def test_a_machine_that_outlives_its_lifetime_is_shut_down_with_its_worker(
    deployed_stack: Infrastructure,
    runtime: InstanceRuntime,
    job: tuple[str, str],
    sentences_parquet: Path,
) -> None:
    """A worker busy for longer than the lifetime (6 h of cloud time: 3 wall seconds here) is stopped by
    the shutdown the script armed first: the instance ends, the worker is signalled."""
    job_id, profile = job
    stack = deployed_stack.stack
    upload_dataset(deployed_stack.target.client("s3"), stack.bucket, sentences_parquet, 1_500)
    fleet = Fleet(
        deployed_stack.target.client("ec2"),
        templates=stack.launch_template_ids,
        subnets=stack.subnet_ids,
        instance_profile_arn=profile,
    )
    request = LaunchRequest(
        job_id=job_id,
        segment_id="seg-0000",
        attempt_id=f"{job_id}/seg-0000/1",
        market="on-demand",
        start=0,
        stop=1_500,
        input_key=DATASET_KEY,
    )
    assert tags_for(request)["spotbatch:segment"] == "seg-0000"
    started = time.monotonic()
    instance_id = fleet.launch(request)
    machine = wait_until_gone(fleet.ec2, runtime, instance_id, timeout=scaled(60))
    took = time.monotonic() - started
    assert machine.shutdowns[0] == LIFETIME_MINUTES
    assert machine.killed in ("SIGTERM", "SIGKILL"), "the worker finished before the lifetime: use more rows"
    assert DEFAULT_MAX_LIFETIME_SECONDS / SCALE <= took < DEFAULT_MAX_LIFETIME_SECONDS / SCALE + 30
    assert runtime.errors == []


def test_each_machine_is_paced_at_its_own_instance_types_speed(
    deployed_stack: Infrastructure,
    job: tuple[str, str],
    busy_model_dir: Path,
    sentences_parquet: Path,
    tmp_path: Path,
) -> None:
    """Two types in one job: the machine EC2 ran as a c7i.2xlarge works at that type's pace, the other at
    c7i.xlarge's (each worker's pace report says the pace it kept)."""
    job_id, profile = job
    stack = deployed_stack.stack
    upload_dataset(deployed_stack.target.client("s3"), stack.bucket, sentences_parquet, 1_500)
    paces = {"c7i.xlarge": "40.0000", "c7i.2xlarge": "80.0000"}
    image = MachineImage(files={IMAGE_MODEL_DIR: str(busy_model_dir)}, pace_by_type=paces)
    ec2 = deployed_stack.target.client("ec2")
    launched = {}
    with machines_for(
        deployed_stack,
        image,
        tmp_path / "machines",
        job_id,
        scale=60.0,  # a 6-h lifetime is 6 wall minutes: the workers get to start
        launch_seconds=lambda tags: 0.0,  # ready at once: the pace report is written from the start
    ) as runtime:
        for number, kind in enumerate(paces):
            segment = f"seg-{number:04d}"
            request = LaunchRequest(
                job_id=job_id,
                segment_id=segment,
                attempt_id=f"{job_id}/{segment}/1",
                market="on-demand",
                start=0,
                stop=1_500,
                input_key=DATASET_KEY,
            )
            instance_id = ec2.run_instances(
                LaunchTemplate={"LaunchTemplateId": stack.launch_template_ids["on-demand"]},
                InstanceType=kind,
                MinCount=1,
                MaxCount=1,
                SubnetId=next(iter(stack.subnet_ids.values())),
                IamInstanceProfile={"Arn": profile},
                TagSpecifications=[
                    {
                        "ResourceType": "instance",
                        "Tags": [{"Key": k, "Value": v} for k, v in tags_for(request).items()],
                    }
                ],
            )["Instances"][0]["InstanceId"]
            launched[instance_id] = kind
        reports = {i: tmp_path / "machines" / "machines" / i / "pace.json" for i in launched}
        deadline = time.monotonic() + scaled(60)
        while not all(r.is_file() for r in reports.values()) and time.monotonic() < deadline:
            time.sleep(0.2)
        kept = {i: json.loads(r.read_text())["rows_per_second"] for i, r in reports.items() if r.is_file()}
        ec2.terminate_instances(InstanceIds=list(launched))
        for instance_id in launched:
            wait_until_gone(ec2, runtime, instance_id, timeout=scaled(60))
    assert kept == {i: float(paces[kind]) for i, kind in launched.items()}, runtime.errors
