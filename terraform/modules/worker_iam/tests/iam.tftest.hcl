mock_provider "aws" {
  override_data {
    target = data.aws_iam_policy_document.boundary
    values = { json = "{}" }
  }
}

variables {
  name           = "t"
  role_path      = "/spotbatch/t/"
  bucket_arn     = "arn:aws:s3:::spotbatch-test"
  repository_arn = "arn:aws:ecr:us-east-1:123456789012:repository/spotbatch-worker"
  log_group_arn  = "arn:aws:logs:us-east-1:123456789012:log-group:/spotbatch/t/workers"
}

run "the_boundary_is_the_prefixes_the_image_the_logs_and_the_metrics" {
  command = plan
  assert {
    condition     = data.aws_iam_policy_document.boundary.statement[0].resources == toset(["arn:aws:s3:::spotbatch-test/data/*"])
    error_message = "read-only access to data/ only"
  }
  assert {
    condition     = data.aws_iam_policy_document.boundary.statement[1].resources == toset(["arn:aws:s3:::spotbatch-test/jobs/*"])
    error_message = "writes under jobs/ only"
  }
  assert {
    condition     = [for s in data.aws_iam_policy_document.boundary.statement : s.sid if contains(tolist(s.actions), "s3:DeleteObject")] == ["ReadWriteJobs"]
    error_message = "workers delete only under jobs/ (the parts a killed attempt wrote after its last checkpoint)"
  }
  assert {
    condition     = !anytrue([for a in flatten([for s in data.aws_iam_policy_document.boundary.statement : tolist(s.actions)]) : endswith(a, "*")])
    error_message = "no wildcard actions"
  }
  assert {
    condition     = aws_iam_policy.boundary.path == "/spotbatch/t/"
    error_message = "the boundary lives under the roles' path"
  }
}

run "kms_key_adds_its_use" {
  command = plan
  variables {
    kms_key_arn = "arn:aws:kms:us-east-1:123456789012:key/abc"
  }
  assert {
    condition     = [for s in data.aws_iam_policy_document.boundary.statement : s.resources if s.sid == "UseTheStackKey"] == [toset(["arn:aws:kms:us-east-1:123456789012:key/abc"])]
    error_message = "a KMS key adds a statement for it, on that key only"
  }
}

run "prefix_must_end_with_slash" {
  command = plan
  variables {
    jobs_prefix = "jobs"
  }
  expect_failures = [var.jobs_prefix]
}
