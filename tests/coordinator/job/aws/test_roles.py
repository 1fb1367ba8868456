"""A job's role outlives its instances' shutdown: EC2 holds an instance in shutting-down while its OS stops,
and Docker ships the worker's last log lines then, with the job's role (CI lost a worker's final "done:"
line when the role went while its machine still shut down)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from coordinator.job.aws import roles as job_roles
from coordinator.job.aws.roles import JobRoles, role_name
from coordinator.job.core.worker_contract import PROJECT, PROJECT_TAG, TAG_JOB
from coordinator.sim.ec2_events import telling_machine
from coordinator.sim.emulator import MotoServer
from coordinator.stack.outputs import StackOutputs

STACK = StackOutputs(
    region="us-east-1",
    bucket="b",
    launch_template_ids={"spot": "lt-1"},
    subnet_ids={},
    name="s",
    worker_role_path="/spotbatch/s/",
    worker_boundary_arn="arn:aws:iam::123456789012:policy/spotbatch/s/boundary",
    repository_arn="arn:aws:ecr:us-east-1:123456789012:repository/s-worker",
    log_group="/spotbatch/s/workers",
    log_group_arn="arn:aws:logs:us-east-1:123456789012:log-group:/spotbatch/s/workers",
    metrics_namespace="spotbatch",
)


@pytest.fixture(scope="module")
def aws() -> Iterator[MotoServer]:
    with MotoServer() as server:
        yield server


def _shutting_down_instance(aws: MotoServer, job_id: str) -> tuple[Any, str]:
    """An instance of the job that a simulated machine runs, terminated: it shows shutting-down."""
    ec2 = aws.target().client("ec2")
    image = ec2.describe_images()["Images"][0]["ImageId"]
    tags = [{"Key": PROJECT_TAG, "Value": PROJECT}, {"Key": TAG_JOB, "Value": job_id}]
    instance = ec2.run_instances(
        ImageId=image,
        MinCount=1,
        MaxCount=1,
        TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
    )["Instances"][0]["InstanceId"]
    telling_machine(aws.target().client("ec2"), "up").describe_instances(InstanceIds=[instance])
    ec2.terminate_instances(InstanceIds=[instance])
    return ec2, instance


def _role_exists(iam: Any, job_id: str) -> bool:
    try:
        iam.get_role(RoleName=role_name(STACK.name, job_id))
    except iam.exceptions.NoSuchEntityException:
        return False
    return True


@pytest.mark.slow
def test_the_role_goes_only_once_every_instance_of_the_job_shows_terminated(aws: MotoServer) -> None:
    iam = aws.target().client("iam")
    roles = JobRoles(iam, STACK, account="123456789012")
    roles.ensure("job-1")
    ec2, instance = _shutting_down_instance(aws, "job-1")
    deleting = threading.Thread(
        target=roles.delete_after_shutdown, args=("job-1", ec2.describe_instances), kwargs={"every": 0.05}
    )
    deleting.start()
    deleting.join(1.0)
    assert deleting.is_alive() and _role_exists(iam, "job-1")  # its machine still shuts down
    telling_machine(aws.target().client("ec2"), "off").describe_instances(InstanceIds=[instance])
    deleting.join(10.0)
    assert not deleting.is_alive() and not _role_exists(iam, "job-1")


@pytest.mark.slow
def test_a_shutdown_that_never_ends_delays_the_role_only_so_long_and_says_so(
    aws: MotoServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(job_roles, "SHUTDOWN_WAIT_SECONDS", 0.5)
    iam = aws.target().client("iam")
    roles = JobRoles(iam, STACK, account="123456789012")
    roles.ensure("job-2")
    ec2, instance = _shutting_down_instance(aws, "job-2")
    started = time.monotonic()
    roles.delete_after_shutdown("job-2", ec2.describe_instances, every=0.05)
    assert time.monotonic() - started >= 0.5
    assert not _role_exists(iam, "job-2")
    assert f"job job-2: {instance} still shutting down; its role goes now" in caplog.text


@pytest.mark.slow
def test_the_role_stays_while_an_instance_of_the_job_still_runs(
    aws: MotoServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A coordinator that stops leaving instances running (for a resume to adopt, or because another took
    the job over through the lease) must not take their credentials away with the role."""
    iam = aws.target().client("iam")
    roles = JobRoles(iam, STACK, account="123456789012")
    roles.ensure("job-3")
    ec2 = aws.target().client("ec2")
    image = ec2.describe_images()["Images"][0]["ImageId"]
    tags = [{"Key": PROJECT_TAG, "Value": PROJECT}, {"Key": TAG_JOB, "Value": "job-3"}]
    running = ec2.run_instances(
        ImageId=image, MinCount=1, MaxCount=1, TagSpecifications=[{"ResourceType": "instance", "Tags": tags}]
    )["Instances"][0]["InstanceId"]
    started = time.monotonic()
    roles.delete_after_shutdown("job-3", ec2.describe_instances, every=0.05)
    assert time.monotonic() - started < 5 and _role_exists(iam, "job-3")  # no wait, no delete
    assert f"job job-3: {running} still running: its role stays for them" in caplog.text
