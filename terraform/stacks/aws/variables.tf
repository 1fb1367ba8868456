variable "region" {
  description = "AWS region, as in us-east-1."
  type        = string
  default     = "us-east-1"
}

variable "name" {
  description = "Name prefix of the stack's resources."
  type        = string
  default     = "spotbatch"
}

variable "bucket_name" {
  description = "Job bucket (globally unique)."
  type        = string
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
}

variable "instance_type" {
  description = "Worker instance type."
  type        = string
  default     = "p3.2xlarge"
}

variable "on_demand_price" {
  description = "On-demand price of instance_type, USD per hour (the spot max price)."
  type        = number
  default     = 3.06
}

variable "worker_image" {
  description = "Container image of the worker, in a registry the instances can pull from."
  type        = string
}

variable "max_lifetime_seconds" {
  description = "Longest a worker instance may live."
  type        = number
  default     = 21600
}
