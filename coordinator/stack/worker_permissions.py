"""The inline policy of one job's worker role: read the input, write its job's parts, checkpoints,
heartbeats and segment manifests and nothing else (not the job's control prefix: the lease and the job's
manifest are the coordinator's), pull the worker image, write its logs and metrics. The stack's boundary
(terraform/modules/worker_iam) caps it. The coordinator's policy is `permissions.py`'s.

Usage::

    document = render(worker_job_policy(arns, "job-1"))
"""

from __future__ import annotations

from coordinator.stack.iam_documents import StackArns, Statement
from coordinator.stack.key_permissions import bucket_key
from inference.layout import WORKER_PREFIXES


def worker_job_policy(arns: StackArns, job_id: str) -> list[Statement]:
    job = f"{arns.job_prefix}{job_id}/"
    return [
        Statement(
            "ReadInput",
            (("s3:GetObject", "the input rows of its segment"),),
            (f"{arns.bucket_arn}/{arns.data_prefix}*",),
        ),
        Statement(
            "WriteItsJob",
            (
                ("s3:GetObject", "its checkpoint, to resume"),
                ("s3:PutObject", "its output parts, checkpoint, heartbeat and segment manifest"),
                ("s3:PutObjectTagging", "tags on its parts (attempt, rows)"),
                ("s3:DeleteObject", "parts a killed attempt wrote after its last checkpoint"),
            ),
            tuple(f"{arns.bucket_arn}/{job}{prefix}*" for prefix in WORKER_PREFIXES),
        ),
        Statement(
            "ListItsJob",
            (("s3:ListBucket", "find parts its checkpoint does not list (only under its job)"),),
            (arns.bucket_arn,),
            {"StringLike": {"s3:prefix": [f"{job}*"]}},
        ),
        Statement(
            "RegistryLogin",
            (("ecr:GetAuthorizationToken", "log in to the registry (the action has no resource)"),),
            ("*",),
        ),
        Statement(
            "PullTheWorkerImage",
            (
                ("ecr:BatchGetImage", "the image manifest"),
                ("ecr:GetDownloadUrlForLayer", "the image layers"),
                ("ecr:BatchCheckLayerAvailability", "which layers to fetch"),
            ),
            (arns.repository_arn,),
        ),
        Statement(
            "WriteItsLogs",
            (
                ("logs:CreateLogStream", "one stream per attempt (job/segment/instance)"),
                ("logs:PutLogEvents", "the worker's output"),
            ),
            (f"{arns.log_group_arn}:log-stream:{job_id}/*",),
        ),
        Statement(
            "PutItsMetrics",
            (("cloudwatch:PutMetricData", "CPU, memory and rows/s (the action has no resource)"),),
            ("*",),
            {"StringEquals": {"cloudwatch:namespace": arns.metrics_namespace}},
        ),
        *bucket_key(arns, "the bucket's objects and the image"),
    ]
