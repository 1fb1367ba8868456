"""The conditions of the project's IAM policies, which moto does not evaluate (it counts every condition as
met): for each, the request context it needs and why AWS grants the request (the context below), and, where
the coordinator's own calls make that context, the calls, recorded against moto. parliament checks that each
condition key is one its action takes (`make parliament`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import boto3
import pytest

from coordinator.errors import DataError
from coordinator.job.aws.fleet import Fleet
from coordinator.job.aws.roles import JobRoles
from coordinator.job.core.worker_contract import LaunchRequest
from coordinator.job.data import list_input
from coordinator.stack.outputs import StackOutputs
from coordinator.stack.permissions import coordinator_policy
from coordinator.stack.policy_docs import placeholder_arns
from coordinator.stack.worker_permissions import worker_job_policy
from inference.s3_store import S3Store

CONTEXT = {  # (statement, condition key) -> the request context that meets it, and where it comes from
    ("LaunchFromTheStackTemplates", "ec2:LaunchTemplate"): "RunInstances names a stack template (the fleet)",
    ("TagAtLaunch", "ec2:CreateAction"): "tags come in RunInstances' TagSpecifications, never by CreateTags",
    (
        "TerminateOnlyTheProject",
        "aws:ResourceTag/Project",
    ): "every launch tags its instance Project=spotbatch",
    ("PassOnlyJobRoles", "iam:PassedToService"): "the job role reaches EC2 only in RunInstances' profile",
    ("CreateJobRolesUnderTheBoundary", "iam:PermissionsBoundary"): "CreateRole names the stack's boundary",
    ("ListJobHeartbeats", "s3:prefix"): "the coordinator lists only under jobs/<job>/",
    ("ListInputDatasets", "s3:prefix"): "an input prefix is under data/ (run's --input-key refuses others)",
    ("ListItsJob", "s3:prefix"): "a worker lists only under its job's prefix (its store is rooted there)",
    ("PutItsMetrics", "cloudwatch:namespace"): "the worker puts into the stack's namespace (its env)",
    ("LaunchWithTheStackKey", "kms:ViaService"): "EC2 calls KMS itself, for the launch's volume",
    ("GrantTheKeyOnlyToVolumes", "kms:ViaService"): "EC2 calls KMS itself, for the launch's volume",
    ("GrantTheKeyOnlyToVolumes", "kms:GrantIsForAWSResource"): "the grant is EC2's, for the volume",
}


def test_every_condition_states_the_context_it_needs() -> None:
    keyed = replace(placeholder_arns(), kms_key_arn="arn:aws:kms:REGION:ACCOUNT_ID:key/KEY_ID")
    statements = [*coordinator_policy(keyed), *worker_job_policy(keyed, "JOB_ID")]
    found = {(s.sid, key) for s in statements for keys in s.condition.values() for key in keys}
    assert found == set(CONTEXT)  # a new condition says here what context it needs and who gives it


@pytest.fixture
def aws(aws_credentials: None) -> Iterator[dict[str, Any]]:
    from moto import mock_aws

    with mock_aws():
        yield {name: boto3.client(name, region_name="us-east-1") for name in ("ec2", "iam", "s3")}


def recorded(client: Any, operation: str) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    client.meta.events.register(
        f"provide-client-params.{client.meta.service_model.endpoint_prefix}.{operation}",
        lambda params, **_: calls.append(dict(params)),
    )
    return calls


def test_a_launch_carries_the_template_the_tags_and_the_role_its_conditions_need(aws: dict[str, Any]) -> None:
    ec2 = aws["ec2"]
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    template = ec2.create_launch_template(LaunchTemplateName="t", LaunchTemplateData={"ImageId": image})[
        "LaunchTemplate"
    ]["LaunchTemplateId"]
    profile = aws["iam"].create_instance_profile(InstanceProfileName="j", Path="/spotbatch/s/")[
        "InstanceProfile"
    ]
    runs, tags = recorded(ec2, "RunInstances"), recorded(ec2, "CreateTags")
    fleet = Fleet(ec2, templates={"spot": template}, instance_profile_arn=profile["Arn"])
    request = LaunchRequest(
        job_id="j",
        segment_id="seg-0000",
        attempt_id="j/seg-0000/1",
        market="spot",
        start=0,
        stop=10,
        input_key="data/x.parquet",
    )
    instance = fleet.launch(request)
    assert runs and all(call["LaunchTemplate"]["LaunchTemplateId"] == template for call in runs)
    assert all(call["IamInstanceProfile"]["Arn"].endswith("/spotbatch/s/j") for call in runs)
    specs = [
        spec for call in runs for spec in call["TagSpecifications"] if spec["ResourceType"] == "instance"
    ]
    assert all({"Key": "Project", "Value": "spotbatch"} in spec["Tags"] for spec in specs) and specs
    assert tags == []  # never tagged afterwards: ec2:CreateAction is RunInstances
    described = ec2.describe_instances(InstanceIds=[instance])["Reservations"][0]["Instances"][0]
    assert {"Key": "Project", "Value": "spotbatch"} in described[
        "Tags"
    ]  # what TerminateInstances is judged on


def test_a_job_role_is_made_under_the_stacks_boundary(aws: dict[str, Any]) -> None:
    iam = aws["iam"]
    creates = recorded(iam, "CreateRole")
    stack = StackOutputs(
        region="us-east-1",
        bucket="b",
        launch_template_ids={"spot": "lt-1"},
        subnet_ids={},
        name="s",
        worker_role_path="/spotbatch/s/",
        worker_boundary_arn="arn:aws:iam::123456789012:policy/spotbatch/s/boundary",
        repository_arn="arn:aws:ecr:us-east-1:123456789012:repository/s-worker",
        log_group="/spotbatch/s/workers",
        log_group_arn="arn:aws:logs:us-east-1:123456789012:log-group:/spotbatch/s/workers",
        metrics_namespace="spotbatch",
    )
    JobRoles(iam, stack, account="123456789012").ensure("job-1")
    assert [c["PermissionsBoundary"] for c in creates] == [stack.worker_boundary_arn]
    assert all(c["Path"] == stack.worker_role_path for c in creates)


def test_listings_stay_under_the_prefix_their_condition_allows(aws: dict[str, Any]) -> None:
    s3 = aws["s3"]
    s3.create_bucket(Bucket="spotbatch-b")
    lists = recorded(s3, "ListObjectsV2")
    store = S3Store("spotbatch-b", "jobs/job-1", client=s3)  # a worker's and the coordinator's view of a job
    store.list("heartbeats/")
    store.fingerprints("heartbeats/")
    assert not store.exists("checkpoints/seg-0000.json")
    assert lists and all(call["Prefix"].startswith("jobs/job-1/") for call in lists)
    del lists[:]
    with pytest.raises(DataError, match=r"no \.parquet object under this prefix"):  # the input of a job
        list_input(S3Store("spotbatch-b", "", client=s3), "data/reviews/")
    assert [call["Prefix"] for call in lists] == ["data/reviews/"]
