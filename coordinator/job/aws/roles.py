"""One IAM role per job for its workers, so that a worker can write under its own job's prefix and no other.

An EC2 instance role cannot be narrowed per launch (session policies do not reach instance profiles), so the
coordinator makes a role for each job when the job starts and deletes it when the job ends: under the
stack's role path, with the stack's permissions boundary (the most any worker may do, set by whoever applied
the stack), an inline policy that names the job's prefix (`stack/permissions.py`), and an instance profile
of the same name that the launches carry. A restarted coordinator finds the role again; roles a killed run
left behind are found by their path and removed by `destroy-real`.

Usage::

    roles = JobRoles(iam, stack, account="123456789012")
    role = roles.ensure("job-1")          # idempotent
    fleet = Fleet(ec2, templates=..., subnets=..., instance_profile_arn=role.instance_profile_arn)
    roles.delete_after_shutdown("job-1", ec2.describe_instances, every=5.0)   # or roles.delete("job-1")
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from coordinator.job.aws.error_codes import raise_for_setup
from coordinator.job.aws.instances import alive_ids, list_instances, wait_terminated
from coordinator.job.core import SHUTDOWN_WAIT_SECONDS
from coordinator.stack.iam_documents import PolicyShape, as_written, render, worker_trust_policy
from coordinator.stack.outputs import StackOutputs
from coordinator.stack.permissions import arns_for
from coordinator.stack.worker_permissions import worker_job_policy

log = logging.getLogger("coordinator.job.aws.roles")

POLICY_NAME = "job"
MAX_ROLE_NAME = 64
MAX_SESSION_SECONDS = 12 * 3600  # the longest the instance's credentials last before EC2 refreshes them


@dataclass(frozen=True, slots=True)
class JobRole:
    name: str
    arn: str
    instance_profile_arn: str


def role_name(stack: str, job_id: str) -> str:
    """`<stack>-<job>-<hash>`: readable, within IAM's 64 characters, and unique per job id."""
    slug = re.sub(r"[^A-Za-z0-9+=,.@_-]", "-", job_id)
    digest = hashlib.sha256(job_id.encode()).hexdigest()[:8]
    return f"{stack}-{slug}"[: MAX_ROLE_NAME - len(digest) - 1] + f"-{digest}"


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


class JobRoles:
    """`shape`: the statements as the target checks them (an emulator's is the simulator's to give)."""

    def __init__(
        self, iam: Any, stack: StackOutputs, *, account: str, shape: PolicyShape = as_written
    ) -> None:
        self.iam = iam
        self.stack = stack
        self.arns = arns_for(stack, account)
        self.shape = shape

    def policy_document(self, job_id: str) -> dict[str, Any]:
        return render(self.shape(worker_job_policy(self.arns, job_id)))

    def ensure(self, job_id: str) -> JobRole:
        """Create (or find again) the job's role, its inline policy and its instance profile."""
        name = role_name(self.stack.name, job_id)
        tags = [
            {"Key": "Project", "Value": "spotbatch"},
            {"Key": "spotbatch:stack", "Value": self.stack.name},
            {"Key": "spotbatch:job", "Value": job_id[:256]},
        ]
        try:
            role = self._call(
                "create_role",
                RoleName=name,
                Path=self.stack.worker_role_path,
                AssumeRolePolicyDocument=json.dumps(
                    worker_trust_policy(self.stack.worker_trusted_principals)
                ),
                PermissionsBoundary=self.stack.worker_boundary_arn,
                Description=f"spotbatch workers of job {job_id}"[:1000],
                MaxSessionDuration=MAX_SESSION_SECONDS,
                Tags=tags,
            )["Role"]
        except ClientError as error:
            if _code(error) != "EntityAlreadyExists":
                raise
            role = self._call("get_role", RoleName=name)["Role"]
        self._call(
            "put_role_policy",
            RoleName=name,
            PolicyName=POLICY_NAME,
            PolicyDocument=json.dumps(self.policy_document(job_id)),
        )
        profile = self._profile(name)
        return JobRole(name, str(role["Arn"]), str(profile["Arn"]))

    def _profile(self, name: str) -> dict[str, Any]:
        try:
            profile = self._call(
                "create_instance_profile", InstanceProfileName=name, Path=self.stack.worker_role_path
            )["InstanceProfile"]
        except ClientError as error:
            if _code(error) != "EntityAlreadyExists":
                raise
            profile = self._call("get_instance_profile", InstanceProfileName=name)["InstanceProfile"]
        if not any(r["RoleName"] == name for r in profile.get("Roles", [])):
            self._call("add_role_to_instance_profile", InstanceProfileName=name, RoleName=name)
        return dict(profile)

    def delete(self, job_id: str) -> None:
        delete_role(self.iam, role_name(self.stack.name, job_id))

    def delete_after_shutdown(self, job_id: str, describe: Callable[..., Any], *, every: float) -> None:
        """The job's role, once its instances show terminated: EC2 holds one in shutting-down while its OS
        stops, and Docker ships the worker's last log lines then, with this role (deleted earlier, they are
        lost). After `SHUTDOWN_WAIT_SECONDS` it goes anyway, with a warning naming what still shuts down.
        Kept while an instance of the job still runs (left for a resume, or for the coordinator that took
        the job over): its worker would lose its credentials."""
        running = alive_ids(list_instances(describe, job_id=job_id))
        if running:  # left for a resume to adopt, or another coordinator's now (the lease): they need it
            log.warning("job %s: %s still running: its role stays for them", job_id, ", ".join(running))
            return
        left = wait_terminated(describe, job_id, timeout=SHUTDOWN_WAIT_SECONDS, every=every)
        if left:
            log.warning("job %s: %s still shutting down; its role goes now", job_id, ", ".join(left))
        self.delete(job_id)

    def _call(self, operation: str, **kwargs: Any) -> Any:
        try:
            return getattr(self.iam, operation)(**kwargs)
        except ClientError as error:
            raise_for_setup(error, "iam", "the job's worker role")
            raise


def delete_role(iam: Any, name: str) -> None:
    """The role, its policy and its instance profile. Every step tolerates what is already gone: a run
    killed half-way through a delete is fine."""
    for operation, kwargs in (
        ("remove_role_from_instance_profile", {"InstanceProfileName": name, "RoleName": name}),
        ("delete_instance_profile", {"InstanceProfileName": name}),
        ("delete_role_policy", {"RoleName": name, "PolicyName": POLICY_NAME}),
        ("delete_role", {"RoleName": name}),
    ):
        try:
            getattr(iam, operation)(**kwargs)
        except ClientError as error:
            if _code(error) != "NoSuchEntity":
                raise_for_setup(error, "iam", f"deleting the job role {name}")
                raise
    log.info("deleted job role %s and its instance profile", name)


def delete_roles_under(iam: Any, path: str) -> list[str]:
    """Every role under a stack's role path (what runs that were killed left behind), deleted."""
    pages = iam.get_paginator("list_roles").paginate(PathPrefix=path)
    names = sorted(role["RoleName"] for page in pages for role in page["Roles"])
    for name in names:
        delete_role(iam, name)
    return names
