# The ceiling of every worker's permissions. The coordinator creates one role per job under `role_path`,
# with this policy as its permissions boundary and an inline policy that narrows it to the job's own prefix
# (coordinator/job/aws/roles.py), so a worker can read the input data, write only under jobs/<its job>/, pull
# the worker image, write its logs and its metrics, and nothing else, whatever the inline policy says.
data "aws_iam_policy_document" "boundary" {
  statement {
    sid       = "ReadInput"
    actions   = ["s3:GetObject"]
    resources = ["${var.bucket_arn}/${var.data_prefix}*"]
  }
  statement {
    sid       = "ReadWriteJobs"
    actions   = ["s3:GetObject", "s3:PutObject", "s3:PutObjectTagging", "s3:DeleteObject"]
    resources = ["${var.bucket_arn}/${var.jobs_prefix}*"]
  }
  statement {
    sid       = "ListJobs"
    actions   = ["s3:ListBucket"]
    resources = [var.bucket_arn]
    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = ["${var.jobs_prefix}*"]
    }
  }
  statement {
    sid       = "RegistryLogin"
    actions   = ["ecr:GetAuthorizationToken"]
    resources = ["*"] # the action has no resource: ECR hands out a token for the account's registry
  }
  statement {
    sid       = "PullWorkerImage"
    actions   = ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchCheckLayerAvailability"]
    resources = [var.repository_arn]
  }
  statement {
    sid       = "WriteLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${var.log_group_arn}:*"]
  }
  statement {
    sid       = "PutMetrics"
    actions   = ["cloudwatch:PutMetricData"]
    resources = ["*"] # PutMetricData has no resource; the namespace condition narrows it
    condition {
      test     = "StringEquals"
      variable = "cloudwatch:namespace"
      values   = [var.metrics_namespace]
    }
  }
  dynamic "statement" {
    for_each = var.kms_key_arn == null ? [] : [var.kms_key_arn]
    content {
      sid       = "UseTheStackKey"
      actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
      resources = [statement.value]
    }
  }
}

resource "aws_iam_policy" "boundary" {
  name_prefix = "${var.name}-worker-boundary-"
  path        = var.role_path
  description = "spotbatch: the most any job's worker role may do"
  policy      = data.aws_iam_policy_document.boundary.json
  tags        = var.tags
}
