"""`make apply-real` / `destroy-real`, exercised against a moto server standing in for AWS: the real stack,
the saved plan, the confirmation gate and the re-list after destroy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import boto3
import pytest

pytestmark = pytest.mark.slow


def spotbatch(
    *args: str, home: Path, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    import os

    env = {**os.environ, "SPOTBATCH_HOME": str(home), **(env_extra or {})}
    env.pop("CONFIRM", None)
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "coordinator", *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_apply_real_needs_confirmation_then_applies_the_saved_plan(
    moto_endpoint: str, tmp_path: Path, terraform_ready: None
) -> None:
    real = [
        "--bucket-name",
        "spotbatch-real-test",
        "--worker-image",
        "registry.example/spotbatch:1",
        "--override",
        "price-of-the-day=test against an emulator",
    ]
    refused = spotbatch("infra", "apply-real", *real, home=tmp_path)
    assert refused.returncode == 5, refused.stderr  # declined at the prompt
    assert "Plan:" in refused.stdout and "refusing to apply this plan without CONFIRM=yes" in refused.stderr
    s3 = boto3.client("s3")
    assert "spotbatch-real-test" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]  # nothing applied

    applied = spotbatch("infra", "apply-real", *real, home=tmp_path, env_extra={"CONFIRM": "yes"})
    assert applied.returncode == 0, applied.stderr
    assert "PASS       no-stray-instances" in applied.stdout
    assert "launch_template_ids" in applied.stdout
    assert "spotbatch-real-test" in [b["Name"] for b in s3.list_buckets()["Buckets"]]

    ec2 = boto3.client("ec2")
    spot_template = next(
        t for t in ec2.describe_launch_templates()["LaunchTemplates"] if "-spot-" in t["LaunchTemplateName"]
    )
    ec2.run_instances(
        LaunchTemplate={"LaunchTemplateId": spot_template["LaunchTemplateId"]}, MinCount=1, MaxCount=1
    )
    # destroy-real re-lists: an instance launched outside Terraform keeps it from saying "nothing left"
    leftover = spotbatch(
        "infra",
        "destroy-real",
        "--bucket-name",
        "spotbatch-real-test",
        "--worker-image",
        "x",
        home=tmp_path,
        env_extra={"CONFIRM": "yes"},
    )
    assert leftover.returncode == 1 and "instances tagged Project=spotbatch are alive" in leftover.stderr
