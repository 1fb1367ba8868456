mock_provider "aws" {}

variables {
  bucket_name = "spotbatch-test-bucket"
}

run "private_encrypted_versioned" {
  command = plan

  assert {
    condition     = aws_s3_bucket_public_access_block.this.block_public_acls && aws_s3_bucket_public_access_block.this.block_public_policy && aws_s3_bucket_public_access_block.this.ignore_public_acls && aws_s3_bucket_public_access_block.this.restrict_public_buckets
    error_message = "public access must be blocked"
  }
  assert {
    condition     = one(one(aws_s3_bucket_server_side_encryption_configuration.this.rule).apply_server_side_encryption_by_default).sse_algorithm == "AES256"
    error_message = "SSE-S3 by default"
  }
  assert {
    condition     = aws_s3_bucket_versioning.this.versioning_configuration[0].status == "Enabled"
    error_message = "versioning must be on"
  }
  assert {
    condition     = contains([for r in aws_s3_bucket_lifecycle_configuration.this.rule : r.id], "heartbeats")
    error_message = "a lifecycle rule expires heartbeats"
  }
  assert {
    condition     = aws_s3_bucket.this.force_destroy == false
    error_message = "real buckets are not emptied by destroy unless asked"
  }
}

run "kms_when_given" {
  command = plan
  variables {
    kms_key_arn = "arn:aws:kms:us-east-1:123456789012:key/abc"
  }
  assert {
    condition     = one(one(aws_s3_bucket_server_side_encryption_configuration.this.rule).apply_server_side_encryption_by_default).sse_algorithm == "aws:kms"
    error_message = "a KMS key switches to SSE-KMS"
  }
}

run "bad_bucket_name" {
  command = plan
  variables {
    bucket_name = "Not_A_Bucket"
  }
  expect_failures = [var.bucket_name]
}
