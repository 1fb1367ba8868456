"""The AWS stack (terraform/stacks/aws) against moto: what its plan holds for a real account, the templates it
renders, the GPU variant, and endpoints kept on loopback. Apply and destroy through the commands a user
runs: test_real_aws_path.py."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest

from coordinator.errors import EmulatorError, TerraformError
from coordinator.sim.emulator_stack import Infrastructure
from coordinator.stack.defaults import (
    DEFAULT_INSTANCE_TYPE,
    DEFAULT_MAX_LIFETIME_SECONDS,
    DEFAULT_STACK_NAME,
    GPU_FAMILIES,
)
from coordinator.stack.deployment import STACK_DIR, Deployment, PlannedChanges, StackSettings
from coordinator.stack.target import require_loopback
from coordinator.stack.terraform import Terraform
from tests.host_load import scaled

pytestmark = pytest.mark.slow
AMI_PARAMETER = "/aws/service/ecs/optimized-ami/amazon-linux-2023/{}recommended/image_id"


def one(planned: PlannedChanges, resource_type: str) -> dict[str, Any]:
    found = planned.planned_resources(resource_type)
    assert len(found) == 1, f"{resource_type}: {len(found)} planned"
    return dict(found[0]["values"])


def test_stack_defaults_are_the_pythons() -> None:
    text = (STACK_DIR / "variables.tf").read_text() + (STACK_DIR / "main.tf").read_text()

    def default(variable: str) -> str:
        block = re.search(rf'variable "{variable}" {{(.*?)\n}}', text, re.S)
        assert block, variable
        found = re.search(r"default\s*=\s*(\S+)", block.group(1))
        assert found, variable
        return found.group(1).strip('"')

    assert default("instance_type") == DEFAULT_INSTANCE_TYPE
    assert default("max_lifetime_seconds") == str(DEFAULT_MAX_LIFETIME_SECONDS)
    assert default("name") == DEFAULT_STACK_NAME
    families = re.search(r"gpu_families\s*=\s*\[(.*?)\]", text)
    assert families and tuple(re.findall(r'"([^"]+)"', families.group(1))) == GPU_FAMILIES


def test_the_plan_holds_what_a_real_account_gets(deployed_stack: Infrastructure, tmp_path: Path) -> None:
    """Planned in the session's moto as a second stack: every zone gets a public subnet, nothing comes in."""
    target = deployed_stack.target
    settings = StackSettings(
        bucket_name="plan-check", name="plancheck", worker_image=deployed_stack.outputs["worker_image"]
    )
    planned = Deployment(tmp_path, target).plan(settings.variables(target))
    assert planned.updates == [] and planned.deletes == []

    repository = one(planned, "aws_ecr_repository")
    assert repository["image_tag_mutability"] == "IMMUTABLE"
    assert repository["image_scanning_configuration"] == [{"scan_on_push": True}]
    assert repository["encryption_configuration"][0]["encryption_type"] == "AES256"
    assert one(planned, "aws_ecr_lifecycle_policy")["repository"] == "plancheck-worker"
    logs = one(planned, "aws_cloudwatch_log_group")
    assert logs["name"] == "/spotbatch/plancheck/workers" and logs["retention_in_days"] > 0

    zones = target.client("ec2").describe_availability_zones()["AvailabilityZones"]
    subnets = planned.planned_resources("aws_subnet")
    assert sorted(s["values"]["availability_zone"] for s in subnets) == sorted(z["ZoneName"] for z in zones)
    assert all(s["values"]["map_public_ip_on_launch"] for s in subnets)
    assert len(planned.planned_resources("aws_internet_gateway")) == 1
    workers = one(planned, "aws_security_group")  # public mode: the workers' group, no endpoints' group
    assert workers["name_prefix"] == "plancheck-workers-"
    assert planned.planned_resources("aws_vpc_security_group_ingress_rule") == []  # no way in at all
    egress = one(planned, "aws_vpc_security_group_egress_rule")
    assert (egress["ip_protocol"], egress["from_port"], egress["to_port"]) == ("tcp", 443, 443)

    templates = {
        t["values"]["name_prefix"]: t["values"] for t in planned.planned_resources("aws_launch_template")
    }
    assert len(templates) == 2
    ami = target.client("ssm").get_parameter(Name=AMI_PARAMETER.format(""))["Parameter"]["Value"]
    for template in templates.values():
        assert template["image_id"] == ami and template["instance_type"] == DEFAULT_INSTANCE_TYPE
        assert template["metadata_options"][0]["http_tokens"] == "required"
        assert template["metadata_options"][0]["instance_metadata_tags"] == "enabled"
        assert template["block_device_mappings"][0]["ebs"][0]["encrypted"] == "true"
        assert template["instance_initiated_shutdown_behavior"] == "terminate"
    spot = [t for t in templates.values() if t["instance_market_options"]]
    # no max price: EC2 caps each spot instance at its own type's on-demand price (a pool of another type
    # launched from this template must not be refused for the stack type's price)
    assert spot[0]["instance_market_options"][0]["spot_options"][0]["max_price"] is None


def test_the_templates_carry_the_rendered_boot_script(deployed_stack: Infrastructure) -> None:
    """The user-data EC2 holds for the applied stack (unknown at plan time: it names the new bucket)."""
    ec2 = deployed_stack.target.client("ec2")
    stack = deployed_stack.stack
    lifetime = (
        f'shutdown -h "+{DEFAULT_MAX_LIFETIME_SECONDS // 60}" "spotbatch: max lifetime reached" || true'
    )
    for template_id in stack.launch_template_ids.values():
        data = ec2.describe_launch_template_versions(LaunchTemplateId=template_id)["LaunchTemplateVersions"][
            0
        ]
        script = base64.b64decode(data["LaunchTemplateData"]["UserData"]).decode()
        # the script's own commands, not the lines of the functions it defines (indented)
        commands = [line for line in script.splitlines() if line and not line.startswith(("#", " "))]
        assert commands[0] == lifetime  # armed before any other call
        trap = next(i for i, c in enumerate(commands) if c.startswith("trap "))
        assert "shutdown -h now" in commands[trap]  # however the script ends, the machine stops...
        calls = ("token=$(curl", "dnf ", "docker ", "systemctl ")
        first_call = next(i for i, c in enumerate(commands) if c.startswith(calls))
        assert trap < first_call  # ...armed before anything that can fail (its log shipped on the way)
        assert f'docker pull "{deployed_stack.outputs["worker_image"]}"' in script
        assert f"awslogs-group={stack.log_group}" in script and f"s3://{stack.bucket}/jobs/$job" in script
        assert "--gpus all" not in script  # a CPU type: the CPU image, no GPUs asked for


def test_the_stack_queues_ec2s_interruption_events_for_the_coordinator(
    deployed_stack: Infrastructure,
) -> None:
    """The applied rules deliver EC2's interruption warning to the stack's encrypted queue (moto delivers
    `put_events` to SQS targets as EventBridge does); a running-state change is not queued; a message
    received too often moves to the dead-letter queue."""
    target, outputs = deployed_stack.target, deployed_stack.outputs
    sqs, events = target.client("sqs"), target.client("events")
    queue = outputs["events_queue_url"]
    attributes = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["All"])["Attributes"]
    assert attributes["SqsManagedSseEnabled"] == "true"
    redrive = json.loads(attributes["RedrivePolicy"])
    dead_letter = sqs.get_queue_attributes(
        QueueUrl=outputs["events_dead_letter_queue_url"], AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    assert redrive == {"deadLetterTargetArn": dead_letter, "maxReceiveCount": 5}
    stack_name = outputs["name"]
    rules = {r["Name"] for r in events.list_rules(NamePrefix=f"{stack_name}-")["Rules"]}
    assert {f"{stack_name}-{k}" for k in ("spot-interruption", "rebalance", "state-change")} <= rules

    def event(detail_type: str, detail: dict[str, str]) -> dict[str, Any]:
        return {"Source": "aws.ec2", "DetailType": detail_type, "Detail": json.dumps(detail)}

    sqs.purge_queue(QueueUrl=queue)  # the session's earlier runs left their instances' events in it
    events.put_events(
        Entries=[
            event("EC2 Instance State-change Notification", {"instance-id": "i-0test", "state": "running"}),
            event(
                "EC2 Spot Instance Interruption Warning",
                {"instance-id": "i-0test", "instance-action": "terminate"},
            ),
        ]
    )
    received = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=2)
    ours = [
        m for m in received.get("Messages", []) if json.loads(m["Body"])["detail"]["instance-id"] == "i-0test"
    ]
    assert [json.loads(m["Body"])["detail-type"] for m in ours] == ["EC2 Spot Instance Interruption Warning"]
    for message in received.get("Messages", []):
        sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])


def test_a_gpu_type_gets_the_gpu_ami_and_the_gpus(deployed_stack: Infrastructure, tmp_path: Path) -> None:
    target = deployed_stack.target
    settings = StackSettings(
        bucket_name="plan-gpu",
        name="plangpu",
        instance_type="g5.xlarge",
        worker_image="registry/repo@sha256:" + "0" * 64,
    )
    planned = Deployment(tmp_path, target).plan(settings.variables(target))
    ami = target.client("ssm").get_parameter(Name=AMI_PARAMETER.format("gpu/"))["Parameter"]["Value"]
    for template in planned.planned_resources("aws_launch_template"):
        assert template["values"]["image_id"] == ami and template["values"]["instance_type"] == "g5.xlarge"
    # `--gpus all` in the rendered script: the worker_templates module test gpu_types_run_with_the_gpus

    own_ami = StackSettings(
        bucket_name="plan-own", name="planown", image_id="ami-12345678", worker_image="r/x@sha256:" + "1" * 64
    )
    planned = Deployment(tmp_path / "own", target).plan(own_ami.variables(target))
    assert {t["values"]["image_id"] for t in planned.planned_resources("aws_launch_template")} == {
        "ami-12345678"
    }
    assert "data.aws_ssm_parameter.ami" not in planned.text  # the user's AMI: no parameter is read


def test_emulator_endpoints_stay_on_loopback(tmp_path: Path, terraform_ready: None) -> None:
    with pytest.raises(EmulatorError, match=r"refusing emulator endpoint 'http://10\.0\.0\.5:5000'"):
        require_loopback("http://10.0.0.5:5000")
    tf = Terraform.discover(STACK_DIR, state_dir=tmp_path)
    tf.init()
    variables = {
        "region": "us-east-1",
        "bucket_name": "b-123",
        "endpoint": "https://ec2.us-east-1.amazonaws.com",
        "emulator_credentials": {"access_key": "k", "secret_key": "s"},
    }
    with pytest.raises(TerraformError, match="must be a loopback URL"):
        tf.plan(variables)


def test_localstack_target_where_one_runs(tmp_path: Path, terraform_ready: None) -> None:
    """LocalStack needs Docker, which this machine lacks: the test runs only where one answers."""
    import requests

    from coordinator.sim.emulator_stack import emulator_infrastructure, localstack_endpoint

    endpoint = localstack_endpoint()
    try:
        requests.get(f"{endpoint}/_localstack/health", timeout=scaled(2)).raise_for_status()
    except requests.RequestException:
        pytest.skip(f"no LocalStack answering at {endpoint} (it runs in Docker; start it to run this test)")
    with emulator_infrastructure(tmp_path, target="localstack") as infra:
        assert set(infra.outputs["launch_template_ids"]) == {"spot", "on-demand"}
        assert infra.target.client("s3").head_bucket(Bucket=infra.outputs["bucket"])
