variable "name" {
  description = "Log group name, as in /spotbatch/<stack>/workers."
  type        = string
}

variable "retention_in_days" {
  description = "Days the workers' logs are kept (one of CloudWatch's values: 1, 3, 5, 7, 14, 30, 60, 90, ...)."
  type        = number
  default     = 14

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.retention_in_days)
    error_message = "retention_in_days must be one of CloudWatch Logs' values (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, ...)."
  }
}

variable "kms_key_arn" {
  description = "KMS key for the logs; null uses CloudWatch Logs' own encryption."
  type        = string
  default     = null
}

variable "tags" {
  description = "Tags for the log group."
  type        = map(string)
  default     = {}
}
