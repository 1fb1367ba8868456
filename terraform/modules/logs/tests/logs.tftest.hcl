mock_provider "aws" {}

run "retention_is_set" {
  command = plan
  variables {
    name = "/spotbatch/t/workers"
  }
  assert {
    condition     = aws_cloudwatch_log_group.this.retention_in_days == 14
    error_message = "logs do not live forever"
  }
}

run "a_retention_cloudwatch_does_not_offer_is_refused" {
  command = plan
  variables {
    name              = "/spotbatch/t/workers"
    retention_in_days = 10
  }
  expect_failures = [var.retention_in_days]
}
