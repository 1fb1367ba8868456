output "instance_ids" {
  description = "Instance ids, one per segment."
  value       = var.market == "spot" ? aws_spot_instance_request.this[*].spot_instance_id : aws_instance.this[*].id
}

output "segments" {
  description = "Row range of each instance's segment."
  value       = local.segments
}
