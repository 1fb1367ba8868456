"""The one way to list the project's instances: by tag, every page, with one meaning of "alive".

    alive  pending, running, stopping, stopped   (billing, or able to bill again)
    gone   shutting-down, terminated

Usage::

    found = list_instances(ec2.describe_instances, job_id="job-1")     # {instance id: InstanceInfo}
    strays = list_instances(ec2.describe_instances, alive_only=True)   # every live instance of the project
    left = wait_terminated(ec2.describe_instances, "job-1", timeout=300, every=5)   # [] once all ended
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from coordinator.job.core import PROJECT, PROJECT_TAG, TAG_ATTEMPT, TAG_JOB, TAG_MARKET, TAG_SEGMENT

ALIVE_STATES = frozenset({"pending", "running", "stopping", "stopped"})
GONE_STATES = frozenset({"shutting-down", "terminated"})


@dataclass(frozen=True, slots=True)
class InstanceInfo:
    instance_id: str
    state: str
    tags: dict[str, str]
    state_reason: str = ""  # EC2's StateReason code, as Server.SpotInstanceTermination ("" none given)
    zone: str = ""  # its availability zone (Placement)
    instance_type: str = ""
    launch_time: float = 0.0  # EC2's LaunchTime, epoch seconds (0: not given)

    @property
    def alive(self) -> bool:
        return self.state not in GONE_STATES

    @property
    def job(self) -> str:
        return self.tags.get(TAG_JOB, "")

    @property
    def segment(self) -> str:
        return self.tags.get(TAG_SEGMENT, "")

    @property
    def attempt(self) -> str:
        return self.tags.get(TAG_ATTEMPT, "")

    @property
    def market(self) -> str:
        return self.tags.get(TAG_MARKET, "")


def list_instances(
    describe: Callable[..., Any],
    *,
    job_id: str | None = None,
    alive_only: bool = False,
    instance_ids: list[str] | None = None,
    attempt_id: str | None = None,
) -> dict[str, InstanceInfo]:
    """Every instance tagged Project=spotbatch (and `spotbatch:job=job_id`, `spotbatch:attempt=attempt_id`),
    page by page.

    `describe` is `ec2.describe_instances` or a wrapper with retries around it (the fleet's)."""
    filters = [{"Name": f"tag:{PROJECT_TAG}", "Values": [PROJECT]}]
    if job_id is not None:
        filters.append({"Name": f"tag:{TAG_JOB}", "Values": [job_id]})
    if attempt_id is not None:
        filters.append({"Name": f"tag:{TAG_ATTEMPT}", "Values": [attempt_id]})
    if alive_only:
        filters.append({"Name": "instance-state-name", "Values": sorted(ALIVE_STATES)})
    if instance_ids is not None:
        filters.append({"Name": "instance-id", "Values": instance_ids})
    found: dict[str, InstanceInfo] = {}
    token: str | None = None
    while True:
        page = describe(Filters=filters, **({"NextToken": token} if token else {}))
        for reservation in page["Reservations"]:
            for instance in reservation["Instances"]:
                tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
                reason = str(instance.get("StateReason", {}).get("Code", ""))
                zone = str(instance.get("Placement", {}).get("AvailabilityZone", ""))
                launched = instance.get("LaunchTime")
                found[instance["InstanceId"]] = InstanceInfo(
                    instance["InstanceId"],
                    instance["State"]["Name"],
                    tags,
                    reason,
                    zone,
                    str(instance.get("InstanceType", "")),
                    launched.timestamp() if isinstance(launched, datetime) else 0.0,
                )
        token = page.get("NextToken")
        if not token:
            return found


def alive_ids(instances: dict[str, InstanceInfo]) -> list[str]:
    return sorted(i for i, info in instances.items() if info.alive)


def wait_terminated(
    describe: Callable[..., Any],
    job_id: str,
    *,
    timeout: float,
    every: float,
    sleep: Callable[[float], None] = time.sleep,
) -> list[str]:
    """Wait until every instance of the job shows terminated. EC2 holds an instance in shutting-down while
    its OS stops, and the worker's last log lines go out then, with the job's role: the role must outlive
    it. Returns the instances still shutting down after `timeout` seconds (wall)."""
    deadline = time.monotonic() + timeout
    while True:
        left = sorted(
            i for i, info in list_instances(describe, job_id=job_id).items() if info.state != "terminated"
        )
        if not left or time.monotonic() >= deadline:
            return left
        sleep(every)
