output "launch_template_ids" {
  description = "Launch template id per market."
  value       = module.worker_templates.launch_template_ids
}

output "bucket" {
  description = "Job bucket."
  value       = module.storage.bucket
}

output "subnet_id" {
  description = "Subnet for the workers."
  value       = module.network.subnet_id
}

output "region" {
  description = "Region of the stack."
  value       = var.region
}
