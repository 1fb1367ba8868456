"""The IAM policies: docs/aws is what the code renders, every action has a reason, the worker writes only
under its own job, KMS follows the key, and moto gets the same actions with resources it can match."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from coordinator.cli import main
from coordinator.paths import REPO_ROOT
from coordinator.stack.emulator_policy import for_emulator
from coordinator.stack.iam_documents import actions_of, render
from coordinator.stack.permissions import coordinator_policy
from coordinator.stack.policy_docs import docs_files, placeholder_arns
from coordinator.stack.worker_permissions import worker_job_policy
from inference.layout import CONTROL_PREFIX, JOB_MANIFEST_KEY, WORKER_PREFIXES

DOCS = REPO_ROOT / "docs" / "aws"
KEY = "arn:aws:kms:REGION:ACCOUNT_ID:key/KEY_ID"


def test_docs_aws_is_what_the_code_renders() -> None:
    for name, text in docs_files().items():
        assert (DOCS / name).read_text(encoding="utf-8") == text, (
            f"docs/aws/{name} is stale: run `python -m coordinator policy --write-docs docs/aws`"
        )
    assert "coordinator-policy.json" in (DOCS / "README.md").read_text(encoding="utf-8")


def test_every_action_has_a_reason_and_a_managed_policy_holds_it() -> None:
    arns = placeholder_arns()
    for statements in (coordinator_policy(arns), worker_job_policy(arns, "job-1")):
        assert all(why.strip() for s in statements for _, why in s.actions)
        compact = json.dumps(render(statements), separators=(",", ":"))
        assert len(compact) < 6_144  # a managed policy's size limit (an inline user policy's is 2,048)


def test_the_worker_writes_only_its_own_work_in_its_own_job() -> None:
    """Its parts, checkpoints, heartbeats and segment manifests; never the job's control prefix (the lease,
    the job's manifest), nor another job's."""
    worker = render(worker_job_policy(placeholder_arns(), "job-1"))
    writes = [
        s for s in worker["Statement"] if any(a in s["Action"] for a in ("s3:PutObject", "s3:DeleteObject"))
    ]
    assert [s["Resource"] for s in writes] == [
        [f"arn:aws:s3:::BUCKET/jobs/job-1/{prefix}*" for prefix in WORKER_PREFIXES]
    ]
    assert CONTROL_PREFIX not in WORKER_PREFIXES and not JOB_MANIFEST_KEY.startswith(WORKER_PREFIXES)
    listing = next(s for s in worker["Statement"] if "s3:ListBucket" in s["Action"])
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["jobs/job-1/*"]}}
    assert not [a for s in worker["Statement"] for a in s["Action"] if a.startswith(("iam:", "ec2:"))]


def test_kms_permissions_follow_the_key() -> None:
    plain = placeholder_arns()
    keyed = replace(plain, kms_key_arn=KEY)
    for policy in (coordinator_policy, lambda arns: worker_job_policy(arns, "job-1")):
        assert not [a for a in actions_of(policy(plain)) if a.startswith("kms:")]
        kms = [s for s in policy(keyed) if s.sid == "UseTheStackKey"]
        assert [(sorted(a for a, _ in s.actions), s.resources) for s in kms] == [
            (["kms:Decrypt", "kms:GenerateDataKey"], (KEY,))
        ]


def test_moto_gets_the_same_actions_with_resources_it_can_match() -> None:
    policy = coordinator_policy(placeholder_arns())
    emulated = for_emulator(policy)
    aliases = [a for a in actions_of(emulated) if a not in actions_of(policy)]
    assert aliases == ["monitoring:GetMetricStatistics"]  # moto's name of cloudwatch:GetMetricStatistics
    for original, widened in zip(policy, emulated, strict=True):
        s3_only = all(action.startswith("s3:") for action, _ in original.actions)
        assert widened.resources == (original.resources if s3_only else ("*",))
        # moto has no request value for s3:prefix: that condition would never be met there
        assert widened.condition == ({} if "s3:prefix" in str(original.condition) else original.condition)
    listing = next(s for s in policy if s.sid == "ListJobHeartbeats")
    assert listing.condition == {"StringLike": {"s3:prefix": ["jobs/*"]}}  # on AWS, only under jobs/


def test_policy_command_writes_the_docs(tmp_path: Path, capsys: object) -> None:
    assert main(["policy", "--write-docs", str(tmp_path)]) == 0
    assert {p.name for p in tmp_path.iterdir()} == set(docs_files())


def test_a_customer_key_lets_the_coordinator_launch_encrypted_volumes() -> None:
    """With the stack's key on the root volumes, RunInstances needs EC2 to use the key on the caller's
    behalf (AWS's "key policy for use with encrypted volumes"): a grant for the volume, a data key without
    plaintext, re-encryption and the key's description; without them launches end Client.InternalError."""
    keyed = coordinator_policy(replace(placeholder_arns(), kms_key_arn=KEY))
    ebs = next(s for s in keyed if s.sid == "LaunchWithTheStackKey")
    assert sorted(a for a, _ in ebs.actions) == [
        "kms:DescribeKey",
        "kms:GenerateDataKeyWithoutPlaintext",
        "kms:ReEncryptFrom",
        "kms:ReEncryptTo",
    ]
    assert ebs.resources == (KEY,)
    assert ebs.condition == {"StringEquals": {"kms:ViaService": "ec2.REGION.amazonaws.com"}}
    grant = next(s for s in keyed if s.sid == "GrantTheKeyOnlyToVolumes")
    assert [a for a, _ in grant.actions] == ["kms:CreateGrant"]
    assert grant.condition == {
        "Bool": {"kms:GrantIsForAWSResource": "true"},
        "StringEquals": {"kms:ViaService": "ec2.REGION.amazonaws.com"},
    }
    assert not [s for s in coordinator_policy(placeholder_arns()) if "Key" in s.sid]  # no key, no statement


BUCKET, ACCOUNT = "job-bucket", "123456789012"  # moto's default account


def test_a_workers_credentials_cannot_write_the_jobs_lease_or_its_manifest(aws_credentials: None) -> None:
    """With moto's IAM enforcement on, as a job's worker role: it writes its heartbeat, and is denied the
    job's control prefix (the lease, which locked or handed over the job, and the job's manifest) and any
    other job's prefix."""
    import boto3
    from botocore.exceptions import ClientError
    from moto import mock_aws
    from moto.core.authorization import ActionAuthenticatorMixin

    from coordinator.job.loop.lease import lease_key

    with mock_aws():
        iam: Any = boto3.client("iam", region_name="us-east-1")
        sts: Any = boto3.client("sts", region_name="us-east-1")
        s3: Any = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        arns = replace(placeholder_arns(), bucket=BUCKET, account=ACCOUNT)
        trust = {
            "Statement": [{"Effect": "Allow", "Principal": {"AWS": ACCOUNT}, "Action": "sts:AssumeRole"}]
        }
        iam.create_role(RoleName="worker", AssumeRolePolicyDocument=json.dumps(trust))
        policy = json.dumps(render(worker_job_policy(arns, "job-1")))
        iam.put_role_policy(RoleName="worker", PolicyName="job", PolicyDocument=policy)
        keys = sts.assume_role(RoleArn=f"arn:aws:iam::{ACCOUNT}:role/worker", RoleSessionName="worker")[
            "Credentials"
        ]
        worker = boto3.client(
            "s3",
            region_name="us-east-1",
            aws_access_key_id=keys["AccessKeyId"],
            aws_secret_access_key=keys["SecretAccessKey"],
            aws_session_token=keys["SessionToken"],
        )

        @ActionAuthenticatorMixin.set_initial_no_auth_action_count(0)
        def as_the_worker() -> list[str]:
            worker.put_object(Bucket=BUCKET, Key="jobs/job-1/heartbeats/seg-0000.json", Body=b"{}")  # its own
            denied = []
            for key in (lease_key("job-1"), f"jobs/job-1/{JOB_MANIFEST_KEY}", "jobs/job-2/heartbeats/s.json"):
                try:
                    worker.put_object(Bucket=BUCKET, Key=key, Body=b"forged")
                except ClientError as error:
                    denied.append(f"{key}: {error.response['Error']['Code']}")
            return denied

        assert as_the_worker() == [
            f"{lease_key('job-1')}: AccessDenied",
            f"jobs/job-1/{JOB_MANIFEST_KEY}: AccessDenied",
            "jobs/job-2/heartbeats/s.json: AccessDenied",
        ]
