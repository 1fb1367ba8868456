output "name" {
  description = "Log group name (the awslogs driver's awslogs-group)."
  value       = aws_cloudwatch_log_group.this.name
}

output "arn" {
  description = "Log group ARN (for the workers' permission to write to it)."
  value       = aws_cloudwatch_log_group.this.arn
}
