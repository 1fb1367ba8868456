variable "name" {
  description = "Name prefix for the boundary policy."
  type        = string
}

variable "role_path" {
  description = "IAM path of the per-job worker roles and of the boundary, as in /spotbatch/<stack>/ (starts and ends with /)."
  type        = string

  validation {
    condition     = can(regex("^/([A-Za-z0-9+=,.@_-]+/)+$", var.role_path))
    error_message = "role_path must start and end with '/', as in /spotbatch/my-stack/."
  }
}

variable "bucket_arn" {
  description = "ARN of the job bucket."
  type        = string
}

variable "repository_arn" {
  description = "ARN of the worker image's ECR repository."
  type        = string
}

variable "log_group_arn" {
  description = "ARN of the workers' log group."
  type        = string
}

variable "kms_key_arn" {
  description = "KMS key of the bucket (and logs, images); null when they use AWS-managed encryption."
  type        = string
  default     = null
}

variable "metrics_namespace" {
  description = "CloudWatch namespace the workers publish their CPU, memory and rows/s under."
  type        = string
  default     = "spotbatch"
}

variable "data_prefix" {
  description = "Key prefix of the input data, read-only for workers (ends with /)."
  type        = string
  default     = "data/"

  validation {
    condition     = endswith(var.data_prefix, "/")
    error_message = "data_prefix must end with '/'."
  }
}

variable "jobs_prefix" {
  description = "Key prefix of job outputs (parts, checkpoints, heartbeats): each job's role may write only under its own <jobs_prefix><job>/ (ends with /)."
  type        = string
  default     = "jobs/"

  validation {
    condition     = endswith(var.jobs_prefix, "/")
    error_message = "jobs_prefix must end with '/'."
  }
}

variable "tags" {
  description = "Tags for every resource of the module."
  type        = map(string)
  default     = {}
}
