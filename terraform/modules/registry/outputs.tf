output "repository_url" {
  description = "Where to push the worker image: <account>.dkr.ecr.<region>.amazonaws.com/<name>."
  value       = aws_ecr_repository.this.repository_url
}

output "repository_arn" {
  description = "Repository ARN (for the workers' pull permission)."
  value       = aws_ecr_repository.this.arn
}
