"""The boot script EC2 holds for the applied stack, run under bash as cloud-init would, with recorded
stand-ins for the programs the AMI has (docker, dnf, systemctl, shutdown), the metadata service on loopback
and CloudWatch Logs in moto: what a boot that goes wrong leaves behind, and how long it waits for Docker."""

from __future__ import annotations

import base64
import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coordinator.sim.emulator_stack import Infrastructure
from coordinator.sim.metadata_server import MetadataServer
from tests.host_load import scaled

pytestmark = pytest.mark.slow
TRUST = json.dumps(
    {
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ]
    }
)
STANDIN = """#!/bin/bash
echo "$(basename "$0") $*" >> "{calls}"
{body}
"""
DOCKER_LATE = """case "$1" in
  info) n=$(cat "{state}" 2>/dev/null || echo 0); echo $((n + 1)) > "{state}"; [ "$n" -ge 3 ] ;;
  pull) echo "Status: Downloaded newer image for $2" ;;
  run) echo "worker ran" ;;
esac"""
DOCKER_DENIED = """case "$1" in
  info) exit 0 ;;
  pull) echo "Error response from daemon: pull access denied for $2, repository does not exist" >&2; exit 1 ;;
esac"""


@pytest.fixture
def machine(deployed_stack: Infrastructure, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """An instance of the job boot-1 as the metadata service tells it, with a role's credentials."""
    admin = deployed_stack.target
    iam, sts = admin.client("iam"), admin.client("sts")
    role = iam.create_role(RoleName=f"boot-{tmp_path.name[-12:]}", AssumeRolePolicyDocument=TRUST)["Role"]
    instance = f"i-0{uuid.uuid4().hex[:16]}"
    tags = {"spotbatch:job": "boot-1", "spotbatch:segment": "seg-0000", "spotbatch:market": "spot"}
    with MetadataServer() as imds:
        imds.register(
            instance,
            tags,
            role_name=role["RoleName"],
            role_credentials=lambda: sts.assume_role(RoleArn=role["Arn"], RoleSessionName="boot")[
                "Credentials"
            ],
        )
        yield {"id": instance, "imds": imds.endpoint_for(instance), "endpoint": deployed_stack.endpoint}


def boot(
    deployed_stack: Infrastructure, machine: dict[str, Any], tmp_path: Path, docker: str
) -> tuple[int, list[str]]:
    """Run the spot template's user-data with `docker` behaving as given; its exit code and every stand-in
    call in order."""
    ec2 = deployed_stack.target.client("ec2")
    template = deployed_stack.stack.launch_template_ids["spot"]
    data = ec2.describe_launch_template_versions(LaunchTemplateId=template, Versions=["$Latest"])
    script = base64.b64decode(data["LaunchTemplateVersions"][0]["LaunchTemplateData"]["UserData"]).decode()
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    bodies = {
        "docker": docker.format(state=tmp_path / "docker-info"),
        "dnf": "",
        "systemctl": "",
        "shutdown": "",
    }
    for program, body in bodies.items():
        (bin_dir / program).write_text(STANDIN.format(calls=calls, body=body))
        (bin_dir / program).chmod(0o755)
    (tmp_path / "user-data.sh").write_text(script)
    env = {
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "AWS_EC2_METADATA_SERVICE_ENDPOINT": machine["imds"],
        "AWS_ENDPOINT_URL": machine["endpoint"],
    }
    done = subprocess.run(
        ["bash", str(tmp_path / "user-data.sh")], env=env, capture_output=True, text=True, timeout=scaled(180)
    )
    return done.returncode, calls.read_text().splitlines()


def boot_stream(deployed_stack: Infrastructure, instance: str) -> list[str]:
    logs = deployed_stack.target.client("logs")
    events = logs.get_log_events(
        logGroupName=deployed_stack.stack.log_group, logStreamName=f"boot-1/seg-0000/{instance}/boot"
    )["events"]
    return [str(e["message"]) for e in events]


def test_the_boot_waits_for_a_late_docker_daemon(
    deployed_stack: Infrastructure, machine: dict[str, Any], tmp_path: Path
) -> None:
    code, calls = boot(deployed_stack, machine, tmp_path, DOCKER_LATE)
    assert code == 0, calls
    assert calls[0].startswith("shutdown -h +") and calls[-1].startswith("shutdown -h now")
    assert "systemctl start --no-block docker" in calls
    infos = [i for i, call in enumerate(calls) if call == "docker info"]
    assert len(infos) == 5 and infos[-1] < calls.index(next(c for c in calls if c.startswith("docker pull")))
    assert any(c.startswith("docker run --rm --network host --log-driver awslogs") for c in calls)
    assert any(
        f"spotbatch: {machine['id']} boots boot-1/seg-0000" in line
        for line in boot_stream(deployed_stack, machine["id"])
    )


def test_a_boot_that_fails_before_the_worker_leaves_its_reason_in_cloudwatch(
    deployed_stack: Infrastructure, machine: dict[str, Any], tmp_path: Path
) -> None:
    code, calls = boot(deployed_stack, machine, tmp_path, DOCKER_DENIED)
    assert code == 1 and calls[-1].startswith("shutdown -h now")  # the machine stops: it never idles
    assert not any(c.startswith("docker run") for c in calls)
    lines = boot_stream(deployed_stack, machine["id"])
    assert any("pull access denied" in line for line in lines), lines
    assert sum(c.startswith("docker pull") for c in calls) == 3  # a refused pull is tried again twice
    assert (tmp_path / "spotbatch-boot.log").read_text().count("pull access denied") == 3
    assert any("spotbatch: the pull failed 3 times" in line for line in lines), lines
