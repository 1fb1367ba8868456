mock_provider "aws" {
  mock_resource "aws_sqs_queue" {
    defaults = { arn = "arn:aws:sqs:us-east-1:123456789012:t-events" }
  }
  mock_resource "aws_cloudwatch_event_rule" {
    defaults = { arn = "arn:aws:events:us-east-1:123456789012:rule/t" }
  }
  override_data {
    target = data.aws_caller_identity.this
    values = { account_id = "123456789012" }
  }
  override_data {
    target = data.aws_region.this
    values = { name = "us-east-1" }
  }
  override_data {
    target = data.aws_partition.this
    values = { partition = "aws" }
  }
  override_data {
    target = data.aws_iam_policy_document.events
    values = { json = "{\"Statement\":[]}" }
  }
}

variables {
  name = "t"
}

run "three_rules_into_one_encrypted_queue_with_a_dead_letter_queue" {
  command = apply # the redrive policy names the dead-letter queue's ARN, known after apply
  assert {
    condition     = toset(keys(aws_cloudwatch_event_rule.this)) == toset(["spot-interruption", "rebalance", "state-change"])
    error_message = "a rule for the interruption warning, the rebalance recommendation and the state changes"
  }
  assert {
    condition     = jsondecode(aws_cloudwatch_event_rule.this["spot-interruption"].event_pattern)["detail-type"] == ["EC2 Spot Instance Interruption Warning"]
    error_message = "the interruption rule matches EC2's detail-type exactly"
  }
  assert {
    condition     = jsondecode(aws_cloudwatch_event_rule.this["rebalance"].event_pattern)["detail-type"] == ["EC2 Instance Rebalance Recommendation"]
    error_message = "the rebalance rule matches EC2's detail-type exactly"
  }
  assert {
    condition     = jsondecode(aws_cloudwatch_event_rule.this["state-change"].event_pattern)["detail"]["state"] == ["stopping", "stopped", "shutting-down", "terminated"]
    error_message = "only the state changes that end an instance reach the queue"
  }
  assert {
    condition     = aws_sqs_queue.events.sqs_managed_sse_enabled && aws_sqs_queue.dead_letter.sqs_managed_sse_enabled
    error_message = "both queues are encrypted at rest"
  }
  assert {
    condition     = jsondecode(aws_sqs_queue.events.redrive_policy)["maxReceiveCount"] == 5
    error_message = "an event received five times without being handled moves to the dead-letter queue"
  }
  assert {
    condition     = local.queue_arn == aws_sqs_queue.events.arn && aws_sqs_queue.events.policy == "{\"Statement\":[]}"
    error_message = "the queue's policy is set when it is created, naming the ARN SQS gives it"
  }
  assert {
    condition     = aws_sqs_queue.events.message_retention_seconds == 300
    error_message = "an event outlives the two-minute notice, not much more"
  }
}

run "a_retention_sqs_does_not_allow_is_refused" {
  command = plan
  variables {
    message_retention_seconds = 30
  }
  expect_failures = [var.message_retention_seconds]
}
