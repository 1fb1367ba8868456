"""The cloud side as one object per target: the emulator stack on moto (or LocalStack), or real AWS.

Usage::

    with emulator_infrastructure(state_dir) as infra:      # moto up, stack applied; destroyed and stopped after
        infra.outputs["launch_template_ids"]["spot"]

    real = RealAws(state_dir, variables)                    # make apply-real / destroy-real
    real.plan(); real.apply_saved_plan(); real.destroy_and_confirm(ec2)
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coordinator.errors import InfraError
from coordinator.paths import TERRAFORM_DIR
from coordinator.sim.emulator import MotoServer, require_loopback
from coordinator.stack.terraform import Terraform

STACKS_DIR = TERRAFORM_DIR / "stacks"
LOCALSTACK_DEFAULT_ENDPOINT = "http://localhost:4566"
PROJECT_TAG = {"Name": "tag:Project", "Values": ["spotbatch"]}
ALIVE_STATES = ["pending", "running", "stopping", "stopped"]  # shutting-down is on its way out


@dataclass(slots=True)
class Infrastructure:
    endpoint: str | None  # None: real AWS
    outputs: dict[str, Any]
    env: dict[str, str]  # what terraform, boto3 and workers need (endpoint, credentials, region)
    timings: dict[str, float] = field(default_factory=dict)


def localstack_endpoint() -> str:
    """LocalStack's edge endpoint as `localstack-client` knows it (`$LOCALSTACK_HOST` respected)."""
    try:
        import localstack_client.config as config  # optional: pip install localstack-client

        url = str(config.get_service_endpoint("ec2"))
    except ImportError:
        host = os.environ.get("LOCALSTACK_HOST", "localhost:4566")
        url = f"http://{host}"
    require_loopback(url)
    return url


def _apply_emulator_stack(
    endpoint: str, env: Mapping[str, str], state_dir: Path
) -> tuple[Terraform, dict[str, Any]]:
    require_loopback(endpoint)
    tf = Terraform.discover(STACKS_DIR / "emulator", state_dir=state_dir, extra_env=env)
    tf.init()
    tf.apply({"endpoint": endpoint})
    return tf, tf.output()


@contextmanager
def emulator_infrastructure(state_dir: Path, *, target: str = "moto") -> Iterator[Infrastructure]:
    """Bring the emulator stack up; on exit (Ctrl-C included) destroy it and stop the emulator."""
    if target == "localstack":
        endpoint = localstack_endpoint()
        env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
               "AWS_DEFAULT_REGION": "us-east-1"}  # fmt: skip
        tf, outputs = _apply_emulator_stack(endpoint, env, state_dir)
        try:
            yield Infrastructure(endpoint, outputs, env, tf.timings)
        finally:
            tf.destroy({"endpoint": endpoint})
        return
    if target != "moto":
        raise InfraError(f"unknown emulator target {target!r}: use moto or localstack")
    with MotoServer(log_path=state_dir / "moto.log") as aws:
        env = aws.client_env()
        tf, outputs = _apply_emulator_stack(aws.endpoint, env, state_dir)
        try:
            yield Infrastructure(aws.endpoint, outputs, env, tf.timings)
        finally:
            tf.destroy({"endpoint": aws.endpoint})


class RealAws:
    """`make apply-real` / `make destroy-real`: plan to a file, apply exactly that plan, destroy, confirm."""

    def __init__(self, state_dir: Path, variables: Mapping[str, Any]) -> None:
        self.tf = Terraform.discover(STACKS_DIR / "aws", state_dir=state_dir)
        self.variables = dict(variables)
        self.plan_file = state_dir / "tfplan"

    def plan(self) -> str:
        self.tf.init()
        return self.tf.plan(self.variables, out=self.plan_file).stdout

    def apply_saved_plan(self) -> dict[str, Any]:
        if not self.plan_file.is_file():
            raise InfraError(f"{self.plan_file}: no saved plan; run the plan step first")
        self.tf.apply(plan_file=self.plan_file)
        self.plan_file.unlink()
        return self.tf.output()

    def destroy_and_confirm(self, ec2: Any) -> list[str]:
        """Destroy the stack, then re-list instances tagged Project=spotbatch; returns any still alive."""
        self.tf.init()
        self.tf.destroy(self.variables)
        return alive_project_instances(ec2)


def alive_project_instances(ec2: Any) -> list[str]:
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[PROJECT_TAG, {"Name": "instance-state-name", "Values": ALIVE_STATES}]
    )
    return [i["InstanceId"] for page in pages for r in page["Reservations"] for i in r["Instances"]]
