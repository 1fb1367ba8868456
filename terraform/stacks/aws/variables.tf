variable "region" {
  description = "AWS region, as in us-east-1."
  type        = string
  default     = "us-east-1"

  validation {
    condition     = can(regex("^[a-z]{2}(-[a-z]+)+-[0-9]$", var.region))
    error_message = "region must look like us-east-1."
  }
}

variable "name" {
  description = "Name prefix of the stack's resources."
  type        = string
  default     = "spotbatch"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,30}$", var.name))
    error_message = "name must be 1-31 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "bucket_name" {
  description = "Job bucket (globally unique)."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.bucket_name))
    error_message = "bucket_name must be a valid S3 bucket name: 3-63 lowercase letters, digits, dots or hyphens."
  }
}

variable "force_destroy_bucket" {
  description = "Whether destroy deletes the bucket's objects (false keeps real outputs safe)."
  type        = bool
  default     = false
}

variable "kms_key_arn" {
  description = "KMS key for the bucket; null uses SSE-S3."
  type        = string
  default     = null
}

variable "vpc_id" {
  description = "Existing VPC (with subnet_id); null creates one."
  type        = string
  default     = null
}

variable "subnet_id" {
  description = "Existing subnet for the workers; null creates a private one with an S3 endpoint."
  type        = string
  default     = null
}

variable "ssh_ingress_cidrs" {
  description = "CIDR ranges allowed to SSH in (default none)."
  type        = list(string)
  default     = []
}

variable "image_id" {
  description = "Worker AMI; null takes the latest Amazon Linux 2023 (install Docker in user-data or bake an AMI)."
  type        = string
  default     = null

  validation {
    condition     = var.image_id == null || can(regex("^ami-[0-9a-f]+$", var.image_id))
    error_message = "image_id must be null or an AMI id (ami-...)."
  }
}

variable "instance_type" {
  description = "Worker instance type."
  type        = string
  default     = "p3.2xlarge"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]*[0-9][a-z0-9-]*\\.[a-z0-9]+$", var.instance_type))
    error_message = "instance_type must be an EC2 type such as p3.2xlarge or c7i.xlarge."
  }
}

variable "on_demand_price" {
  description = "On-demand price of instance_type, USD per hour (the spot max price)."
  type        = number
  default     = 3.06

  validation {
    condition     = var.on_demand_price > 0
    error_message = "on_demand_price must be a positive number of dollars per hour."
  }
}

variable "worker_image" {
  description = "Container image of the worker, in a registry the instances can pull from."
  type        = string

  validation {
    condition     = length(trimspace(var.worker_image)) > 0
    error_message = "worker_image must name the worker's container image."
  }
}

variable "max_lifetime_seconds" {
  description = "Longest a worker instance may live."
  type        = number
  default     = 21600

  validation {
    condition     = var.max_lifetime_seconds > 0 && var.max_lifetime_seconds <= 604800
    error_message = "max_lifetime_seconds must be between 1 and 604800 (a week)."
  }
}
