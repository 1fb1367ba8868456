variable "bucket_name" {
  description = "Name of the bucket for data, output parts, checkpoints and heartbeats (3-63 lower-case characters)."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.bucket_name))
    error_message = "bucket_name must be 3-63 characters of a-z, 0-9, '.' and '-', starting and ending with a letter or digit."
  }
}

variable "force_destroy" {
  description = "Whether destroy empties the bucket first (true for throwaway emulator stacks, false for real data)."
  type        = bool
  default     = false
}

variable "kms_key_arn" {
  description = "KMS key for SSE-KMS; null uses SSE-S3 (AES256)."
  type        = string
  default     = null
}

variable "heartbeat_expiration_days" {
  description = "Days after which heartbeat objects (tagged spotbatch:kind=heartbeat) expire."
  type        = number
  default     = 7

  validation {
    condition     = var.heartbeat_expiration_days >= 1
    error_message = "heartbeat_expiration_days must be at least 1."
  }
}

variable "noncurrent_version_expiration_days" {
  description = "Days a replaced object version is kept before it expires."
  type        = number
  default     = 30
}

variable "tags" {
  description = "Tags for every resource of the module."
  type        = map(string)
  default     = {}
}
