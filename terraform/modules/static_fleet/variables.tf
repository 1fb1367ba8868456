variable "market" {
  description = "Market of every instance: \"spot\" (aws_spot_instance_request, max price = on-demand) or \"on-demand\"."
  type        = string

  validation {
    condition     = contains(["spot", "on-demand"], var.market)
    error_message = "market must be \"spot\" or \"on-demand\"."
  }
}

variable "instance_count" {
  description = "Number of instances, one segment each (10 spot or 1 on-demand reproduces the original experiment)."
  type        = number

  validation {
    condition     = var.instance_count >= 1 && floor(var.instance_count) == var.instance_count
    error_message = "instance_count must be a whole number >= 1."
  }
}

variable "total_rows" {
  description = "Rows of the dataset, split evenly over the instances."
  type        = number

  validation {
    condition     = var.total_rows >= 1
    error_message = "total_rows must be at least 1."
  }
}

variable "on_demand_price" {
  description = "On-demand price of instance_type, USD per hour (the spot max price)."
  type        = number

  validation {
    condition     = var.on_demand_price > 0
    error_message = "on_demand_price must be a positive number of dollars per hour."
  }
}

variable "image_id" {
  description = "AMI of the instances."
  type        = string
}

variable "instance_type" {
  description = "EC2 instance type, as in p3.2xlarge."
  type        = string
}

variable "subnet_id" {
  description = "Subnet of the instances."
  type        = string
}

variable "security_group_ids" {
  description = "Security groups of the instances."
  type        = list(string)
}

variable "instance_profile_name" {
  description = "Instance profile (bucket-prefix access)."
  type        = string
}

variable "input_uri" {
  description = "s3:// URI of the Parquet dataset."
  type        = string
}

variable "output_prefix" {
  description = "s3:// prefix for parts, checkpoints and heartbeats."
  type        = string
}

variable "region" {
  description = "Region of the bucket."
  type        = string
}

variable "worker_image" {
  description = "Container image of the worker."
  type        = string
  default     = "spotbatch-worker:latest"
}

variable "model" {
  description = "Model directory inside the image, or a hub name."
  type        = string
  default     = "/models/minilm-sentiment"
}

variable "max_lifetime_seconds" {
  description = "Longest an instance may live before its shutdown timer terminates it."
  type        = number
  default     = 21600
}

variable "root_volume_size" {
  description = "Root volume size in GiB (always encrypted)."
  type        = number
  default     = 40
}

variable "tags" {
  description = "Tags for every resource of the module."
  type        = map(string)
  default     = {}
}
