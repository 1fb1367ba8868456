"""Simulator only: the emulator stack's outputs made with boto3 in a second, for tests and benchmarks.

`make simulate` applies the real Terraform stack (about a minute against moto, most of it the provider
waiting on the bucket's lifecycle rules). Tests of the coordinator and the benchmarks only need what that
stack outputs: a bucket, a spot and an on-demand launch template, a subnet. Terraform's own path is tested
in tests/terraform and by the `spotbatch simulate --quick` test.
"""

from __future__ import annotations

from typing import Any

import boto3

from coordinator.job.instances import InstanceInfo, list_instances
from coordinator.sim.emulator import FAKE_CREDENTIALS, emulator_session
from coordinator.sim.emulator_stack import Infrastructure

BUCKET = "spotbatch-test"


def make_stack(endpoint: str) -> Infrastructure:
    env = {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        **FAKE_CREDENTIALS,
    }
    session = emulator_session(env)
    ec2: Any = session.client("ec2", endpoint_url=endpoint)
    s3: Any = session.client("s3", endpoint_url=endpoint)
    s3.create_bucket(Bucket=BUCKET)
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    templates = {}
    for market in ("spot", "on-demand"):
        data: dict[str, Any] = {"ImageId": image, "InstanceType": "p3.2xlarge"}
        if market == "spot":
            data["InstanceMarketOptions"] = {
                "MarketType": "spot",
                "SpotOptions": {"SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"},
            }
        templates[market] = ec2.create_launch_template(
            LaunchTemplateName=f"spotbatch-{market}", LaunchTemplateData=data
        )["LaunchTemplate"]["LaunchTemplateId"]
    subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
    outputs = {"bucket": BUCKET, "launch_template_ids": templates, "subnet_id": subnet, "region": "us-east-1"}
    return Infrastructure(endpoint, outputs, env)


def job_instances(endpoint: str, job_id: str) -> dict[str, InstanceInfo]:
    """Every instance moto lists for the job, in any state."""
    ec2: Any = boto3.client("ec2", endpoint_url=endpoint, region_name="us-east-1")
    return list_instances(ec2.describe_instances, job_id=job_id)
