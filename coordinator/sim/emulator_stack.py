"""Simulator only: the spotbatch stack on the embedded AWS (moto, or LocalStack where one runs).

The stack applied here is `terraform/stacks/aws`, the one `make apply-real` applies, with the emulator's
endpoint and credentials as variables. What a real user does by hand happens here, in fewer steps:

1. the simulator's own identity: an administrator user made in the emulator (its credentials, not the fake
   bootstrap pair, are used from then on, so the emulator can enforce IAM and the simulator still works);
   the worker roles trust it, since it plays EC2 handing the roles to instances;
2. the stack applied once, its launch templates already naming the simulated worker image by digest (the
   manifest is fixed, so its digest is known before the push; a user applies, pushes, applies again);
3. the image pushed to the stack's repository (`image.py`: its manifest), under that digest.

Usage::

    with emulator_infrastructure(state_dir) as infra:   # moto up, stack applied; destroyed and stopped after
        infra.stack.launch_template_ids["spot"], infra.target.client("ec2")
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coordinator.errors import InfraError
from coordinator.sim.emulator import MotoServer
from coordinator.sim.image import image_reference, publish_image
from coordinator.sim.moto_main import EC2_TERMINATED_VISIBLE_SECONDS
from coordinator.stack.deployment import Deployment, StackSettings
from coordinator.stack.outputs import StackOutputs
from coordinator.stack.target import AwsTarget, require_loopback

LOCALSTACK_DEFAULT_ENDPOINT = "http://localhost:4566"
SIMULATOR_USER = "spotbatch-simulator"
SIMULATOR_BUCKET = "spotbatch-simulated"
EVERYTHING = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}


@dataclass(slots=True)
class Infrastructure:
    target: AwsTarget  # the simulator's own identity in the emulator (an administrator)
    outputs: dict[str, Any]
    state_dir: Path
    admin_arn: str
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def endpoint(self) -> str:
        return str(self.target.endpoint)

    @property
    def stack(self) -> StackOutputs:
        return StackOutputs.from_dict(self.outputs, "the emulator stack")

    def save_outputs(self, path: Path) -> Path:
        """The outputs as `terraform output -json` would print them, for `spotbatch run --outputs`."""
        path.write_text(json.dumps({k: {"value": v} for k, v in self.outputs.items()}, indent=2) + "\n")
        return path


def localstack_endpoint() -> str:
    """LocalStack's edge endpoint as `localstack-client` knows it (`$LOCALSTACK_HOST` respected)."""
    try:
        import localstack_client.config as config  # optional: pip install localstack-client

        url = str(config.get_service_endpoint("ec2"))
    except ImportError:
        host = os.environ.get("LOCALSTACK_HOST", "localhost:4566")
        url = f"http://{host}"
    return require_loopback(url)


def simulator_identity(bootstrap: AwsTarget) -> tuple[AwsTarget, str]:
    """An administrator user in the emulator, made with the bootstrap credentials; its target and ARN."""
    iam = bootstrap.client("iam")
    arn = iam.create_user(UserName=SIMULATOR_USER)["User"]["Arn"]
    everything = json.dumps(EVERYTHING)
    iam.put_user_policy(UserName=SIMULATOR_USER, PolicyName="everything", PolicyDocument=everything)
    key = iam.create_access_key(UserName=SIMULATOR_USER)["AccessKey"]
    return bootstrap.with_credentials(key["AccessKeyId"], key["SecretAccessKey"]), str(arn)


def deploy(
    admin: AwsTarget, admin_arn: str, state_dir: Path, settings: StackSettings
) -> tuple[Deployment, dict[str, Any]]:
    """One apply with the launch templates already naming the simulated image by digest (its registry
    from ECR, its digest fixed), then the push: what `make apply-real` + `make image-push` + `make
    apply-real` end with, in one apply (a real image's digest is known only once it is built)."""
    deployment = Deployment(state_dir, admin)
    ecr = admin.client("ecr")
    registry = ecr.get_authorization_token()["authorizationData"][0]["proxyEndpoint"].split("://")[-1]
    expected = image_reference(f"{registry.rstrip('/')}/{settings.name}-worker")
    variables = {
        **settings.variables(admin),
        "force_destroy": True,  # simulated buckets and images go with the stack
        "worker_trusted_principals": [admin_arn],
        "worker_image": expected,
    }
    outputs = deployment.apply(variables)
    pushed = publish_image(ecr, str(outputs["repository_url"]))
    if pushed != expected:
        raise InfraError(f"the simulated image went to {pushed}, but the launch templates name {expected}")
    return deployment, outputs


@contextmanager
def stack_on(bootstrap: AwsTarget, state_dir: Path, settings: StackSettings) -> Iterator[Infrastructure]:
    admin, admin_arn = simulator_identity(bootstrap)
    deployment, outputs = deploy(admin, admin_arn, state_dir, settings)
    try:
        yield Infrastructure(admin, outputs, state_dir, admin_arn, deployment.tf.timings)
    finally:
        deployment.destroy()


@contextmanager
def emulator_infrastructure(
    state_dir: Path,
    *,
    target: str = "moto",
    settings: StackSettings | None = None,
    region: str = "us-east-1",
    time_scale: float = 1.0,
) -> Iterator[Infrastructure]:
    """Bring the stack up on the emulator; on exit (Ctrl-C included) destroy it and stop the emulator.
    `time_scale`: cloud seconds per wall second of the runs on it (moto forgets a terminated instance an
    hour of that clock after it ended, as EC2 does)."""
    settings = settings or StackSettings(bucket_name=SIMULATOR_BUCKET)
    state_dir.mkdir(parents=True, exist_ok=True)
    if target == "localstack":
        bootstrap = AwsTarget.emulator(localstack_endpoint(), region, ("test", "test"))
        with stack_on(bootstrap, state_dir, settings) as infra:
            yield infra
        return
    if target != "moto":
        raise InfraError(f"unknown emulator target {target!r}: use moto or localstack")
    with (
        MotoServer(
            log_path=state_dir / "moto.log",
            region=region,
            pid_file=state_dir / "moto.pid",
            terminated_visible_seconds=EC2_TERMINATED_VISIBLE_SECONDS / time_scale,
        ) as aws,
        stack_on(aws.target(), state_dir, settings) as infra,
    ):
        yield infra
