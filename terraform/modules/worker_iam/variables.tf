variable "name" {
  description = "Name prefix for the role and the instance profile."
  type        = string
}

variable "bucket_arn" {
  description = "ARN of the job bucket."
  type        = string
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
  description = "Key prefix of job outputs (parts, checkpoints, heartbeats), read-write for workers (ends with /)."
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
