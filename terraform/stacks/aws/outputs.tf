output "region" {
  description = "Region of the stack."
  value       = var.region
}

output "bucket" {
  description = "Job bucket (input under data/, outputs under jobs/<job>/)."
  value       = module.storage.bucket
}

output "launch_template_ids" {
  description = "Launch template id per market (\"spot\", \"on-demand\"); empty until a worker image is given."
  value       = var.worker_image == null ? {} : module.worker_templates[0].launch_template_ids
}

output "launch_template_versions" {
  description = "Version of each launch template to launch (the latest, made the default at each apply); empty without a worker image."
  value       = var.worker_image == null ? {} : module.worker_templates[0].launch_template_versions
}

output "subnet_ids" {
  description = "Worker subnet per availability zone (zone => subnet id)."
  value       = module.network.subnet_ids
}

output "instance_type" {
  description = "The workers' instance type."
  value       = var.instance_type
}

output "gpu" {
  description = "Whether the instance type has NVIDIA GPUs (the CUDA image, --gpus all)."
  value       = local.gpu
}

output "repository_url" {
  description = "Where `make image-push` pushes the worker image."
  value       = module.registry.repository_url
}

output "worker_image" {
  description = "The image the launch templates run (by digest), or null."
  value       = var.worker_image
}

output "log_group" {
  description = "CloudWatch Logs group of the workers."
  value       = module.logs.name
}

output "worker_role_path" {
  description = "IAM path of the per-job worker roles the coordinator creates."
  value       = module.worker_iam.role_path
}

output "worker_boundary_arn" {
  description = "Permissions boundary of every per-job worker role."
  value       = module.worker_iam.boundary_arn
}

output "kms_key_arn" {
  description = "The stack's KMS key, or null (AWS-managed encryption)."
  value       = var.kms_key_arn
}

output "name" {
  description = "Name of the stack (prefix of its resources and of the per-job worker roles)."
  value       = var.name
}

output "repository_arn" {
  description = "ARN of the worker image's repository (the per-job roles may pull from it only)."
  value       = module.registry.repository_arn
}

output "log_group_arn" {
  description = "ARN of the workers' log group."
  value       = module.logs.arn
}

output "metrics_namespace" {
  description = "CloudWatch namespace of the workers' metrics."
  value       = var.metrics_namespace
}

output "worker_trusted_principals" {
  description = "Principals besides ec2.amazonaws.com that the per-job roles trust (empty on AWS)."
  value       = var.worker_trusted_principals
}

output "emulator" {
  description = "Whether the stack lives on a local emulator (whose IAM matches only S3 resources by ARN)."
  value       = var.endpoint != null
}

output "events_queue_url" {
  description = "SQS queue of EC2's interruption warnings, rebalance recommendations and state changes."
  value       = module.interruption_events.queue_url
}

output "events_queue_arn" {
  description = "ARN of the events queue (the coordinator's permission to receive and delete)."
  value       = module.interruption_events.queue_arn
}

output "events_dead_letter_queue_url" {
  description = "Dead-letter queue of events no coordinator could handle."
  value       = module.interruption_events.dead_letter_queue_url
}
