"""The launch contract: what the fleet tags, the user-data template reads, and the worker role may touch."""

from __future__ import annotations

import re

from coordinator.job.core.worker_contract import (
    TAG_ATTEMPT,
    TAG_BATCH_SIZE,
    TAG_CHECKPOINT_EVERY,
    TAG_HEARTBEAT_SECONDS,
    TAG_INPUT_KEY,
    TAG_JOB,
    TAG_MARKET,
    TAG_MAX_LIFETIME,
    TAG_NOTICE_POLL_SECONDS,
    TAG_SEGMENT,
    TAG_START,
    TAG_STEADY_HEARTBEAT_SECONDS,
    TAG_STOP,
    LaunchRequest,
    tags_for,
    worker_env,
)
from coordinator.paths import TERRAFORM_DIR
from coordinator.stack.iam_documents import render
from coordinator.stack.policy_docs import placeholder_arns
from coordinator.stack.worker_permissions import worker_job_policy
from inference.layout import DATA_PREFIX, JOBS_PREFIX, WORKER_PREFIXES, job_prefix

TEMPLATE = TERRAFORM_DIR / "modules" / "worker_templates" / "user_data.sh.tftpl"
REQUEST = LaunchRequest(
    job_id="job-1",
    segment_id="seg-0003",
    attempt_id="job-1/seg-0003/2",
    market="spot",
    start=300,
    stop=400,
    input_key="data/x.parquet",
)


def test_tags_carry_the_request_and_the_env_is_built_from_them() -> None:
    tags = tags_for(REQUEST)
    assert tags["Project"] == "spotbatch" and tags[TAG_JOB] == "job-1" and tags[TAG_START] == "300"
    env = worker_env(tags, bucket="b", instance_id="i-0abc")
    assert env["SPOTBATCH_INPUT"] == "s3://b/data/x.parquet"
    assert env["SPOTBATCH_OUTPUT_PREFIX"] == f"s3://b/{job_prefix('job-1')}" == "s3://b/jobs/job-1"
    assert (env["SPOTBATCH_START"], env["SPOTBATCH_STOP"], env["SPOTBATCH_SEGMENT_ID"]) == (
        "300",
        "400",
        "seg-0003",
    )
    assert env["SPOTBATCH_ATTEMPT"] == "job-1/seg-0003/2" and env["SPOTBATCH_MARKET"] == "spot"


def test_the_user_data_template_reads_the_same_tags_and_sets_the_same_variables() -> None:
    template = TEMPLATE.read_text()
    read = set(re.findall(r"tag (spotbatch:[a-z-]+)", template))
    assert read == {
        TAG_JOB,
        TAG_SEGMENT,
        TAG_ATTEMPT,
        TAG_MARKET,
        TAG_START,
        TAG_STOP,
        TAG_INPUT_KEY,
        TAG_BATCH_SIZE,
        TAG_CHECKPOINT_EVERY,
        TAG_HEARTBEAT_SECONDS,
        TAG_STEADY_HEARTBEAT_SECONDS,
        TAG_NOTICE_POLL_SECONDS,
    }
    assert TAG_MAX_LIFETIME not in read  # the launch template's own tag; the script arms it from Terraform
    exported = set(re.findall(r"-e (SPOTBATCH_[A-Z_]+)=", template))
    assert set(worker_env(tags_for(REQUEST), bucket="b", instance_id="i")) <= exported
    lifetime = template.index('shutdown -h "+${lifetime_minutes}"')
    assert lifetime < template.index("curl") and lifetime < template.index("set -e")  # armed first
    assert (
        f"s3://${{bucket}}/{JOBS_PREFIX}$job" in template
    )  # the job's prefix, as inference/layout.py has it


def test_the_worker_role_grants_the_layout_prefixes() -> None:
    variables = (TERRAFORM_DIR / "modules" / "worker_iam" / "variables.tf").read_text()
    defaults = dict(
        re.findall(r'variable "(data_prefix|jobs_prefix)" \{.*?default\s*=\s*"([^"]+)"', variables, re.S)
    )
    assert defaults == {"data_prefix": DATA_PREFIX, "jobs_prefix": JOBS_PREFIX}
    arns = placeholder_arns()
    job_policy = render(worker_job_policy(arns, "job-1"))
    writes = [s for s in job_policy["Statement"] if "s3:PutObject" in s["Action"]]
    assert [s["Resource"] for s in writes] == [
        [f"arn:aws:s3:::{arns.bucket}/{job_prefix('job-1')}/{prefix}*" for prefix in WORKER_PREFIXES]
    ]
