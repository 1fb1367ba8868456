variable "name" {
  description = "Repository name, as in spotbatch-worker."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*$", var.name))
    error_message = "name must be an ECR repository name: lowercase letters, digits and . _ - / separators."
  }
}

variable "kms_key_arn" {
  description = "KMS key for the images; null uses AES256."
  type        = string
  default     = null
}

variable "keep_images" {
  description = "How many images the lifecycle policy keeps (older ones expire)."
  type        = number
  default     = 10

  validation {
    condition     = var.keep_images >= 1
    error_message = "keep_images must be at least 1."
  }
}

variable "force_delete" {
  description = "Whether destroy deletes the repository with its images (true for throwaway emulator stacks)."
  type        = bool
  default     = false
}

variable "tags" {
  description = "Tags for the repository."
  type        = map(string)
  default     = {}
}
