data "aws_iam_policy_document" "assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ec2.amazonaws.com"]
    }
  }
}

# Workers read the input data and read/write their job's outputs; nothing else in the bucket or account.
data "aws_iam_policy_document" "bucket" {
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
    sid       = "ListOwnPrefixes"
    actions   = ["s3:ListBucket"]
    resources = [var.bucket_arn]
    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = ["${var.data_prefix}*", "${var.jobs_prefix}*"]
    }
  }
}

resource "aws_iam_role" "this" {
  name_prefix        = "${var.name}-worker-"
  assume_role_policy = data.aws_iam_policy_document.assume.json
  tags               = var.tags
}

resource "aws_iam_role_policy" "bucket" {
  name   = "bucket-prefixes"
  role   = aws_iam_role.this.id
  policy = data.aws_iam_policy_document.bucket.json
}

resource "aws_iam_instance_profile" "this" {
  name_prefix = "${var.name}-worker-"
  role        = aws_iam_role.this.name
  tags        = var.tags
}
