output "queue_url" {
  description = "URL of the events queue the coordinator long-polls."
  value       = aws_sqs_queue.events.id
}

output "queue_arn" {
  description = "ARN of the events queue (for the coordinator's permission to receive and delete)."
  value       = aws_sqs_queue.events.arn
}

output "dead_letter_queue_url" {
  description = "URL of the dead-letter queue: events no coordinator could handle."
  value       = aws_sqs_queue.dead_letter.id
}

output "rule_names" {
  description = "The EventBridge rules, by what they catch (spot-interruption, rebalance, state-change)."
  value       = { for key, rule in aws_cloudwatch_event_rule.this : key => rule.name }
}
