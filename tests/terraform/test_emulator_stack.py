"""End to end: moto server up, emulator stack applied, outputs read, a launch from each template, destroy,
nothing left."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest

from coordinator.errors import EmulatorError, TerraformError
from coordinator.sim.emulator import MotoServer, require_loopback
from coordinator.stack.terraform import Terraform
from tests.terraform.conftest import TERRAFORM_DIR

pytestmark = pytest.mark.slow


def test_apply_launch_destroy_leaves_nothing(
    tmp_path: Path, terraform_ready: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with MotoServer() as aws:
        for name, value in aws.client_env().items():
            monkeypatch.setenv(name, value)
        tf = Terraform.discover(
            TERRAFORM_DIR / "stacks" / "emulator", state_dir=tmp_path, extra_env=aws.client_env()
        )
        tf.init()
        tf.apply({"endpoint": aws.endpoint})
        outputs = tf.output()
        assert set(outputs) == {"launch_template_ids", "bucket", "subnet_id", "region"}
        assert set(outputs["launch_template_ids"]) == {"spot", "on-demand"}

        ec2 = boto3.client("ec2")
        s3 = boto3.client("s3")
        encryption = s3.get_bucket_encryption(Bucket=outputs["bucket"])["ServerSideEncryptionConfiguration"]
        assert encryption["Rules"][0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
        assert s3.get_public_access_block(Bucket=outputs["bucket"])["PublicAccessBlockConfiguration"][
            "BlockPublicPolicy"
        ]
        launched = []
        for market, template_id in outputs["launch_template_ids"].items():
            data = ec2.describe_launch_template_versions(LaunchTemplateId=template_id)[
                "LaunchTemplateVersions"
            ][0]["LaunchTemplateData"]
            assert data["MetadataOptions"]["HttpTokens"] == "required"
            assert data["BlockDeviceMappings"][0]["Ebs"]["Encrypted"] is True
            if market == "spot":
                assert data["InstanceMarketOptions"]["SpotOptions"]["MaxPrice"] == "3.06"
            instance = ec2.run_instances(
                LaunchTemplate={"LaunchTemplateId": template_id},
                MinCount=1,
                MaxCount=1,
                SubnetId=outputs["subnet_id"],
                TagSpecifications=[
                    {"ResourceType": "instance", "Tags": [{"Key": "spotbatch:job", "Value": "e2e"}]}
                ],
            )["Instances"][0]
            tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
            assert tags["spotbatch:market"] == market and tags["spotbatch:job"] == "e2e"
            assert tags["Project"] == "spotbatch" and tags["spotbatch:max-lifetime-seconds"] == "21600"
            launched.append(instance["InstanceId"])
        ec2.terminate_instances(InstanceIds=launched)

        tf.destroy({"endpoint": aws.endpoint})
        alive = [
            i["InstanceId"]
            for r in ec2.describe_instances(Filters=[{"Name": "tag:spotbatch:job", "Values": ["e2e"]}])[
                "Reservations"
            ]
            for i in r["Instances"]
            if i["State"]["Name"] not in ("terminated", "shutting-down")
        ]
        assert alive == []
        assert ec2.describe_launch_templates()["LaunchTemplates"] == []
        assert outputs["bucket"] not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert aws.process is not None and aws.process.poll() is not None  # the emulator is stopped


def test_emulator_refuses_remote_endpoints(tmp_path: Path, terraform_ready: None) -> None:
    with pytest.raises(EmulatorError, match=r"refusing emulator endpoint 'http://10\.0\.0\.5:5000'"):
        require_loopback("http://10.0.0.5:5000")
    tf = Terraform.discover(TERRAFORM_DIR / "stacks" / "emulator", state_dir=tmp_path)
    tf.init()
    with pytest.raises(TerraformError, match="must be a loopback URL"):
        tf.plan({"endpoint": "https://ec2.us-east-1.amazonaws.com"})


def test_localstack_target_where_one_runs(
    tmp_path: Path, terraform_ready: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LocalStack needs Docker, which this machine lacks: the test runs only where one answers."""
    import requests

    from coordinator.sim.emulator_stack import emulator_infrastructure, localstack_endpoint

    endpoint = localstack_endpoint()
    try:
        requests.get(f"{endpoint}/_localstack/health", timeout=2).raise_for_status()
    except requests.RequestException:
        pytest.skip(f"no LocalStack answering at {endpoint} (it runs in Docker; start it to run this test)")
    with emulator_infrastructure(tmp_path, target="localstack") as infra:
        for name, value in infra.env.items():
            monkeypatch.setenv(name, value)
        assert set(infra.outputs["launch_template_ids"]) == {"spot", "on-demand"}
        assert boto3.client("s3").head_bucket(Bucket=infra.outputs["bucket"])
