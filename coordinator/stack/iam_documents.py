"""IAM policy documents built from statements that carry a reason for every action.

`Statement` is one Allow with its actions, each paired with why it is there; `StackArns` names what a
deployed stack's policies point at. `render` makes the JSON document AWS takes, `explain` the Markdown
table a reader checks it against; a `PolicyShape` gives the statements as a target checks them (AWS: as
written; moto's is the simulator's, `coordinator/stack/emulator_policy.py`). The project's policies are in
`permissions.py`.

Usage::

    document = render(statements)     # {"Version": "2012-10-17", "Statement": [...]}
    print(explain(statements))        # | statement | action | resource | why |
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

VERSION = "2012-10-17"


@dataclass(frozen=True, slots=True)
class Statement:
    sid: str
    actions: tuple[tuple[str, str], ...]  # (action, why)
    resources: tuple[str, ...]
    condition: dict[str, dict[str, Any]] = field(default_factory=dict)

    def document(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "Sid": self.sid,
            "Effect": "Allow",
            "Action": sorted(action for action, _ in self.actions),
            "Resource": list(self.resources) if len(self.resources) > 1 else self.resources[0],
        }
        if self.condition:
            body["Condition"] = self.condition
        return body


@dataclass(frozen=True, slots=True, kw_only=True)
class StackArns:
    """What the policies name, from the stack's outputs and the account (placeholders for the docs)."""

    partition: str = "aws"
    account: str
    region: str
    stack: str  # the stack's name
    bucket: str
    role_path: str  # /spotbatch/<stack>/
    boundary_arn: str
    launch_template_ids: tuple[str, ...]
    repository_arn: str
    log_group_arn: str
    metrics_namespace: str
    kms_key_arn: str | None = None
    events_queue_arn: str = ""  # "": a stack applied before EC2's events were queued
    job_prefix: str = "jobs/"
    data_prefix: str = "data/"

    def arn(self, service: str, resource: str, *, region: bool = True, account: bool = True) -> str:
        where = f"{self.region if region else ''}:{self.account if account else ''}"
        return f"arn:{self.partition}:{service}:{where}:{resource}"

    @property
    def bucket_arn(self) -> str:
        return f"arn:{self.partition}:s3:::{self.bucket}"

    def roles(self) -> str:
        return self.arn("iam", f"role{self.role_path}*", region=False)

    def instance_profiles(self) -> str:
        return self.arn("iam", f"instance-profile{self.role_path}*", region=False)


def worker_trust_policy(extra_principals: tuple[str, ...] = ()) -> dict[str, Any]:
    principal: dict[str, Any] = {"Service": "ec2.amazonaws.com"}
    if extra_principals:
        principal["AWS"] = list(extra_principals)
    return {
        "Version": VERSION,
        "Statement": [{"Effect": "Allow", "Principal": principal, "Action": "sts:AssumeRole"}],
    }


PolicyShape = Callable[[list[Statement]], list[Statement]]  # the statements as a target can check them


def as_written(statements: list[Statement]) -> list[Statement]:
    """AWS's shape: AWS checks every resource ARN and condition as written."""
    return statements


def render(statements: list[Statement]) -> dict[str, Any]:
    return {"Version": VERSION, "Statement": [s.document() for s in statements]}


def actions_of(statements: list[Statement]) -> list[str]:
    return sorted({action for s in statements for action, _ in s.actions})


def explain(statements: list[Statement]) -> str:
    """A Markdown table: every action, on what, and why."""
    lines = ["| statement | action | resource | why |", "| --- | --- | --- | --- |"]
    for s in statements:
        resource = ", ".join(f"`{r}`" for r in s.resources)
        if s.condition:
            resource += " when " + "; ".join(
                f"`{key}` {test} `{value}`"
                for test, pairs in s.condition.items()
                for key, value in pairs.items()
            )
        lines += [f"| {s.sid} | `{action}` | {resource} | {why} |" for action, why in s.actions]
    return "\n".join(lines) + "\n"
