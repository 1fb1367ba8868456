"""The IAM policies of the project, each action with the reason it is there.

- `coordinator_policy`: what the user (or role) that runs `spotbatch run` needs on a deployed stack:
  launch only from the stack's templates, terminate only the project's instances, make and delete one
  worker role per job under the stack's role path and only with the stack's permissions boundary, pass
  only those roles to EC2, upload the input, read the job's outputs, metrics and logs, prices and quotas.
- `worker_job_policy` (`worker_permissions.py`): the inline policy of one job's worker role.
- `worker_trust_policy`: who may assume a worker role: EC2, and on an emulator the simulator that plays it.

Applying the stack (`make apply-real`) creates a VPC, a bucket, a repository, a log group and an IAM policy:
that needs an administrator of the account, not this policy.

The statements, `render` and `explain` are in `iam_documents.py` (the same policy as moto checks it:
`coordinator/stack/emulator_policy.py`); the files of docs/aws/ in `policy_docs.py`.

Usage::

    document = render(coordinator_policy(arns))          # {"Version": ..., "Statement": [...]}
    print(explain(coordinator_policy(arns)))             # a Markdown table: action, resource, why
"""

from __future__ import annotations

from coordinator.stack.iam_documents import StackArns, Statement
from coordinator.stack.key_permissions import bucket_key, volume_key
from coordinator.stack.outputs import StackOutputs
from inference.layout import JOB_LEASE_KEY, JOB_MANIFEST_KEY, manifest_key

COMMIT_WHY = "the job's manifest once its outputs are proven exactly once, and a done segment's manifest its worker died before writing (both derived from what the job wrote)"  # noqa: E501


def coordinator_policy(arns: StackArns) -> list[Statement]:
    return [
        *_launch_statements(arns),
        *_job_role_statements(arns),
        *_data_and_observation_statements(arns),
        *_job_prefix_statements(arns),
        *_events_statements(arns),
        *bucket_key(arns, "the bucket's objects"),
        *volume_key(arns),
    ]


def _events_statements(arns: StackArns) -> list[Statement]:
    """EC2's interruption warnings, rebalance recommendations and state changes, from the stack's queue."""
    if not arns.events_queue_arn:
        return []
    return [
        Statement(
            "ReadInterruptionEvents",
            (
                ("sqs:ReceiveMessage", "long-poll EC2's interruption and state-change events"),
                ("sqs:DeleteMessage", "an event handled (or about no instance of the stack)"),
                ("sqs:ChangeMessageVisibility", "hand an event about another job's instance back at once"),
            ),
            (arns.events_queue_arn,),
        )
    ]


def _launch_statements(arns: StackArns) -> list[Statement]:
    """Launch only from the stack's templates, tag at launch, terminate only the project's."""
    templates = tuple(arns.arn("ec2", f"launch-template/{t}") for t in arns.launch_template_ids)
    instance = arns.arn("ec2", "instance/*")
    launched = (instance, arns.arn("ec2", "volume/*"), arns.arn("ec2", "network-interface/*"))
    spot_request = arns.arn("ec2", "spot-instances-request/*")  # a spot launch makes one
    project = {"StringEquals": {"aws:ResourceTag/Project": "spotbatch"}}
    return [
        Statement(
            "LaunchFromTheStackTemplates",
            (("ec2:RunInstances", "launch a worker (the template sets AMI, type, network, user-data)"),),
            launched,
            {"ArnLike": {"ec2:LaunchTemplate": list(templates)}},
        ),
        Statement(
            "LaunchWithTheStackParts",
            (("ec2:RunInstances", "the template, subnet, security group and AMI a launch uses"),),
            (
                *templates,
                arns.arn("ec2", "subnet/*"),
                arns.arn("ec2", "security-group/*"),
                arns.arn("ec2", "image/*", account=False),
                spot_request,
            ),
        ),
        Statement(
            "TagAtLaunch",
            (("ec2:CreateTags", "the job, segment and attempt tags a launch sets (only at launch)"),),
            launched,
            {"StringEquals": {"ec2:CreateAction": "RunInstances"}},
        ),
        Statement(
            "TerminateOnlyTheProject",
            (("ec2:TerminateInstances", "stop a worker: job done, budget, a lost heartbeat, Ctrl-C"),),
            (instance,),
            project,
        ),
        Statement(
            "SeeTheFleet",
            (
                ("ec2:DescribeInstances", "the job's instances and their states (no resource-level form)"),
                ("ec2:DescribeAvailabilityZones", "zone names and IDs, to price each subnet's zone"),
                ("ec2:DescribeSpotPriceHistory", "--live-prices: the spot price of each zone"),
                ("ec2:DescribeLaunchTemplateVersions", "pre-flight: the templates' shutdown behaviour, tags"),
            ),
            ("*",),
        ),
    ]


def _job_role_statements(arns: StackArns) -> list[Statement]:
    """One worker role per job, under the stack's role path and boundary, passed only to EC2."""
    return [
        Statement(
            "PassOnlyJobRoles",
            (("iam:PassRole", "give a launch its job's instance profile"),),
            (arns.roles(),),
            {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
        ),
        Statement(
            "CreateJobRolesUnderTheBoundary",
            (
                ("iam:CreateRole", "one worker role per job, under the stack's role path"),
                ("iam:PutRolePolicy", "the job role's inline policy (its own jobs/<job>/ prefix)"),
            ),
            (arns.roles(),),
            {"ArnEquals": {"iam:PermissionsBoundary": arns.boundary_arn}},  # an ARN-typed key
        ),
        Statement(
            "ManageJobRoles",
            (
                ("iam:GetRole", "find a job's role after a restart"),
                ("iam:TagRole", "tag the role with its stack and job"),
                ("iam:DeleteRolePolicy", "remove the job role's policy at the end of the job"),
                ("iam:DeleteRole", "remove the job role at the end of the job"),
            ),
            (arns.roles(),),
        ),
    ]


def _data_and_observation_statements(arns: StackArns) -> list[Statement]:
    """The input, the job's outputs, its metrics and logs, prices and quotas."""
    return [
        Statement(
            "FindLeftoverJobRoles",
            (("iam:ListRoles", "roles a killed run left (listed under the role path; no resource form)"),),
            ("*",),
        ),
        Statement(
            "ManageJobInstanceProfiles",
            (
                ("iam:CreateInstanceProfile", "the profile that carries the job role to EC2"),
                ("iam:GetInstanceProfile", "find it again after a restart"),
                ("iam:AddRoleToInstanceProfile", "put the job role in it"),
                ("iam:RemoveRoleFromInstanceProfile", "take it out at the end of the job"),
                ("iam:DeleteInstanceProfile", "remove it at the end of the job"),
            ),
            (arns.instance_profiles(),),
        ),
        Statement(
            "UploadInput",
            (
                ("s3:PutObject", "`make run-real` uploads the input under data/"),
                ("s3:GetObject", "read the input (row count, the merge)"),
            ),
            (f"{arns.bucket_arn}/{arns.data_prefix}*",),
        ),
        Statement(
            "ReadWorkerMetrics",
            (("cloudwatch:GetMetricStatistics", "CPU, memory and rows/s of each attempt, for the ledger"),),
            ("*",),
        ),
        Statement(
            "ReadWorkerLogs",
            (("logs:GetLogEvents", "the last lines of a failed attempt's log, in its failure reason"),),
            (f"{arns.log_group_arn}:*",),  # the group and its streams
        ),
        Statement(
            "PricesAndQuotas",
            (
                ("pricing:GetProducts", "--live-prices: the on-demand price (Price List API)"),
                ("servicequotas:GetServiceQuota", "pre-flight: spot and on-demand vCPU quotas"),
            ),
            ("*",),
        ),
    ]


def _job_prefix_statements(arns: StackArns) -> list[Statement]:
    """What the coordinator does under a job's prefix: read what its workers write, hold its lease."""
    return [
        Statement(
            "ReadJobOutputs",
            (("s3:GetObject", "heartbeats, checkpoints and parts of the job's workers"),),
            (f"{arns.bucket_arn}/{arns.job_prefix}*",),
        ),
        Statement(
            "HoldTheJobsLease",
            (
                (
                    "s3:PutObject",
                    "the job's lease: taken and renewed with conditional writes (one coordinator a job)",
                ),
                ("s3:DeleteObject", "the job's lease, released when the job ends"),
            ),
            (f"{arns.bucket_arn}/{arns.job_prefix}*/{JOB_LEASE_KEY}",),
        ),
        Statement(
            "CommitJobOutputs",
            (("s3:PutObject", COMMIT_WHY),),
            tuple(
                f"{arns.bucket_arn}/{arns.job_prefix}*/{key}" for key in (JOB_MANIFEST_KEY, manifest_key("*"))
            ),
        ),
        Statement(
            "ListJobHeartbeats",
            (("s3:ListBucket", "one listing of a job's heartbeats a cycle: the ETags tell which changed"),),
            (arns.bucket_arn,),
            {"StringLike": {"s3:prefix": [f"{arns.job_prefix}*"]}},
        ),
        Statement(
            "ListInputDatasets",
            (("s3:ListBucket", "the .parquet objects of an input given as a prefix under data/"),),
            (arns.bucket_arn,),
            {"StringLike": {"s3:prefix": [f"{arns.data_prefix}*"]}},
        ),
    ]


def arns_for(stack: StackOutputs, account: str) -> StackArns:
    return StackArns(
        partition=stack.log_group_arn.split(":")[1],
        account=account,
        region=stack.region,
        stack=stack.name,
        bucket=stack.bucket,
        role_path=stack.worker_role_path,
        boundary_arn=stack.worker_boundary_arn,
        launch_template_ids=tuple(sorted(stack.launch_template_ids.values())),
        repository_arn=stack.repository_arn,
        log_group_arn=stack.log_group_arn,
        metrics_namespace=stack.metrics_namespace,
        kms_key_arn=stack.kms_key_arn,
        events_queue_arn=stack.events_queue_arn,
    )
