output "vpc_id" {
  description = "VPC of the workers."
  value       = local.vpc_id
}

output "subnet_ids" {
  description = "Worker subnet per availability zone (zone => subnet id): the zones a job may place instances in."
  value       = local.create ? { for zone, subnet in aws_subnet.this : zone => subnet.id } : var.existing.subnet_ids
}

output "security_group_id" {
  description = "Security group of the workers (no inbound rule unless ssh_ingress_cidrs is set)."
  value       = aws_security_group.this.id
}
