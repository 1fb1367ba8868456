"""Simulator only: the stack on the embedded AWS (moto, or LocalStack where one runs), up and torn down.

Usage::

    with emulator_infrastructure(state_dir) as infra:   # moto up, stack applied; destroyed and stopped after
        infra.outputs["launch_template_ids"]["spot"]
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coordinator.errors import InfraError
from coordinator.sim.emulator import MotoServer, require_loopback
from coordinator.stack.real_aws import STACKS_DIR
from coordinator.stack.terraform import Terraform

LOCALSTACK_DEFAULT_ENDPOINT = "http://localhost:4566"


@dataclass(slots=True)
class Infrastructure:
    endpoint: str
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
        env = {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
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
