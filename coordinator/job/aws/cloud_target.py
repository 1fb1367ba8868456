"""A deployed stack and the clients of its account: what one job runs against, on AWS or an emulator.

Usage::

    cloud = CloudTarget.connect(AwsTarget.real(), StackOutputs.read(Path("runs/infra/aws/outputs.json")))
    cloud.ec2.describe_instances(...)          # in the stack's region, with botocore's adaptive retries
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coordinator.errors import StackOutputsError
from coordinator.job.aws.fleet import EC2_MAX_ATTEMPTS
from coordinator.stack.iam_documents import PolicyShape, as_written
from coordinator.stack.outputs import StackOutputs
from coordinator.stack.target import AwsTarget


@dataclass(frozen=True, slots=True, kw_only=True)
class CloudTarget:
    """A deployed stack (from `terraform output`), the clients of its account, and the account's id;
    `worker_policy`: the job roles' statements as the target checks them (AWS: as written)."""

    stack: StackOutputs
    target: AwsTarget
    ec2: Any
    s3: Any
    iam: Any
    cloudwatch: Any
    logs: Any
    account: str
    worker_policy: PolicyShape = as_written

    @property
    def bucket(self) -> str:
        return self.stack.bucket

    @classmethod
    def connect(cls, target: AwsTarget, stack: StackOutputs, *, ec2: Any | None = None) -> CloudTarget:
        """Clients in the stack's region, each with botocore's adaptive retries (EC2's: `EC2_MAX_ATTEMPTS`;
        the fleet vetoes retries of capacity errors and counts the rest)."""
        if stack.region != target.region:
            raise StackOutputsError(f"the stack is in {stack.region}, but the target is {target.describe}")
        account = str(target.client("sts").get_caller_identity()["Account"])
        return cls(
            stack=stack,
            target=target,
            ec2=ec2 or target.client("ec2", max_attempts=EC2_MAX_ATTEMPTS),
            s3=target.client("s3"),
            iam=target.client("iam"),
            cloudwatch=target.client("cloudwatch"),
            logs=target.client("logs"),
            account=account,
        )
