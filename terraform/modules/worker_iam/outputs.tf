output "boundary_arn" {
  description = "ARN of the permissions boundary every per-job worker role gets."
  value       = aws_iam_policy.boundary.arn
}

output "role_path" {
  description = "IAM path under which the coordinator creates the per-job worker roles."
  value       = var.role_path
}
