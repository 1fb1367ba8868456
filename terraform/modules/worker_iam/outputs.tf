output "instance_profile_name" {
  description = "Instance profile for the launch templates."
  value       = aws_iam_instance_profile.this.name
}

output "role_arn" {
  description = "ARN of the workers' role."
  value       = aws_iam_role.this.arn
}
