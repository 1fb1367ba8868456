mock_provider "aws" {
  override_data {
    target = data.aws_iam_policy_document.bucket
    values = { json = "{}" }
  }
  override_data {
    target = data.aws_iam_policy_document.assume
    values = { json = "{}" }
  }
}

variables {
  name       = "t"
  bucket_arn = "arn:aws:s3:::spotbatch-test"
}

run "policy_limited_to_prefixes" {
  command = plan
  assert {
    condition     = data.aws_iam_policy_document.bucket.statement[0].resources == toset(["arn:aws:s3:::spotbatch-test/data/*"])
    error_message = "read-only access to data/ only"
  }
  assert {
    condition     = data.aws_iam_policy_document.bucket.statement[1].resources == toset(["arn:aws:s3:::spotbatch-test/jobs/*"])
    error_message = "read-write access to jobs/ only"
  }
  assert {
    condition     = !contains(flatten([for s in data.aws_iam_policy_document.bucket.statement : tolist(s.actions)]), "s3:*")
    error_message = "no wildcard actions"
  }
}

run "prefix_must_end_with_slash" {
  command = plan
  variables {
    jobs_prefix = "jobs"
  }
  expect_failures = [var.jobs_prefix]
}
