# EC2's own word on the stack's instances, as the AWS Node Termination Handler's queue mode and Karpenter
# take it: EventBridge rules for the spot interruption warning, the rebalance recommendation and the state
# changes that end an instance, all delivered to one encrypted SQS queue that the coordinator long-polls.
# A message that fails to be handled `max_receive_count` times moves to the dead-letter queue.
data "aws_partition" "this" {}
data "aws_region" "this" {}
data "aws_caller_identity" "this" {}

locals {
  # The queue's ARN before it exists, so that its policy is set when it is created: a separate
  # aws_sqs_queue_policy waits for SQS to settle a second time (about 25 s on every apply and destroy).
  queue_name = "${var.name}-events"
  queue_arn  = "arn:${data.aws_partition.this.partition}:sqs:${data.aws_region.this.name}:${data.aws_caller_identity.this.account_id}:${local.queue_name}"
  rules = {
    spot-interruption = {
      description = "EC2 Spot Instance Interruption Warning: the two-minute notice"
      pattern     = { source = ["aws.ec2"], detail-type = ["EC2 Spot Instance Interruption Warning"] }
    }
    rebalance = {
      description = "EC2 Instance Rebalance Recommendation: the spot instance is at elevated risk"
      pattern     = { source = ["aws.ec2"], detail-type = ["EC2 Instance Rebalance Recommendation"] }
    }
    state-change = {
      description = "EC2 Instance State-change Notification: an instance stopping or ending"
      pattern = {
        source      = ["aws.ec2"]
        detail-type = ["EC2 Instance State-change Notification"]
        detail      = { state = ["stopping", "stopped", "shutting-down", "terminated"] }
      }
    }
  }
}

resource "aws_sqs_queue" "dead_letter" {
  name                      = "${var.name}-events-dead-letter"
  message_retention_seconds = 1209600 # 14 days, SQS's longest: time to read what went wrong
  sqs_managed_sse_enabled   = true
  tags                      = var.tags
}

resource "aws_sqs_queue" "events" {
  name = local.queue_name
  # an event older than the two-minute notice is history: the instance has been reclaimed by then
  message_retention_seconds  = var.message_retention_seconds
  visibility_timeout_seconds = var.visibility_timeout_seconds
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.dead_letter.arn
    maxReceiveCount     = var.max_receive_count
  })
  policy = data.aws_iam_policy_document.events.json
  tags   = var.tags
}

resource "aws_cloudwatch_event_rule" "this" {
  for_each      = local.rules
  name          = "${var.name}-${each.key}"
  description   = each.value.description
  event_pattern = jsonencode(each.value.pattern)
  tags          = var.tags
}

resource "aws_cloudwatch_event_target" "this" {
  for_each  = local.rules
  rule      = aws_cloudwatch_event_rule.this[each.key].name
  target_id = "coordinator-queue"
  arn       = aws_sqs_queue.events.arn
}

# Only the stack's own rules may send to the queue.
data "aws_iam_policy_document" "events" {
  statement {
    sid       = "TheStackRulesSend"
    actions   = ["sqs:SendMessage"]
    resources = [local.queue_arn]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }
    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [for rule in aws_cloudwatch_event_rule.this : rule.arn]
    }
  }
}
