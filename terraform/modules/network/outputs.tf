output "vpc_id" {
  description = "VPC of the workers."
  value       = local.vpc_id
}

output "subnet_id" {
  description = "Subnet the coordinator launches workers into."
  value       = local.create ? aws_subnet.this[0].id : var.subnet_id
}

output "security_group_id" {
  description = "Security group of the workers (no inbound unless ssh_ingress_cidrs is set)."
  value       = aws_security_group.this.id
}
