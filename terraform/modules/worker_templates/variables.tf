variable "name" {
  description = "Name prefix of the launch templates."
  type        = string
}

variable "markets" {
  description = "Which templates to create: any of \"spot\" and \"on-demand\"."
  type        = set(string)
  default     = ["spot", "on-demand"]

  validation {
    condition     = length(var.markets) > 0 && alltrue([for m in var.markets : contains(["spot", "on-demand"], m)])
    error_message = "markets must be a non-empty set of \"spot\" and/or \"on-demand\"."
  }
}

variable "image_id" {
  description = "AMI of the workers (the same for both markets)."
  type        = string
}

variable "instance_type" {
  description = "EC2 instance type of the workers (the same for both markets), as in c7i.xlarge or g5.xlarge."
  type        = string
}

variable "gpu" {
  description = "Whether instance_type has NVIDIA GPUs: the worker then runs with --gpus all (and the AMI and image must be the GPU ones)."
  type        = bool
  default     = false
}

variable "spot" {
  description = "Spot options: max_price (USD/h; default none: each instance's cap is the on-demand price of its type), spot_instance_type (one-time or persistent), instance_interruption_behavior (terminate, stop or hibernate)."
  type = object({
    max_price                      = optional(number)
    spot_instance_type             = optional(string, "one-time")
    instance_interruption_behavior = optional(string, "terminate")
  })
  default = {}

  validation {
    condition     = var.spot.max_price == null || try(var.spot.max_price > 0, false)
    error_message = "spot.max_price must be a positive number of dollars per hour (or null)."
  }

  validation {
    condition     = contains(["one-time", "persistent"], var.spot.spot_instance_type)
    error_message = "spot.spot_instance_type must be \"one-time\" or \"persistent\"."
  }

  validation {
    condition     = contains(["terminate", "stop", "hibernate"], var.spot.instance_interruption_behavior)
    error_message = "spot.instance_interruption_behavior must be \"terminate\", \"stop\" or \"hibernate\"."
  }

  validation {
    condition     = var.spot.spot_instance_type == "persistent" || var.spot.instance_interruption_behavior == "terminate"
    error_message = "A one-time spot request can only terminate on interruption."
  }
}

variable "security_group_ids" {
  description = "Security groups of the workers."
  type        = list(string)
}

variable "root_volume" {
  description = "Root volume: size (GiB), type (gp3, gp2, io1, io2), device_name, kms_key_id (null: the account's default EBS key). Always encrypted."
  type = object({
    size        = optional(number, 40)
    type        = optional(string, "gp3")
    device_name = optional(string, "/dev/xvda")
    kms_key_id  = optional(string)
  })
  default = {}

  validation {
    condition     = var.root_volume.size >= 8
    error_message = "root_volume.size must be at least 8 GiB."
  }
}

variable "max_lifetime_seconds" {
  description = "Longest an instance may live; tagged on the instance and enforced by a shutdown timer in user-data."
  type        = number
  default     = 21600

  validation {
    condition     = var.max_lifetime_seconds > 0
    error_message = "max_lifetime_seconds must be positive."
  }
}

variable "bucket" {
  description = "Job bucket (input under data/, outputs under jobs/<job>/)."
  type        = string
}

variable "region" {
  description = "Region of the bucket and the workers."
  type        = string
}

variable "tags" {
  description = "Tags for the templates and the instances and volumes they launch."
  type        = map(string)
  default     = {}
}

variable "worker_image" {
  description = "The worker image by digest, as in <account>.dkr.ecr.<region>.amazonaws.com/spotbatch-worker@sha256:<64 hex> (`make image-push` prints it)."
  type        = string

  validation {
    condition     = can(regex("^[^/@]+/[^@]+@sha256:[0-9a-f]{64}$", var.worker_image))
    error_message = "worker_image must name the image by digest: <registry>/<repository>@sha256:<64 hex digits> (run `make image-push`)."
  }
}

variable "model" {
  description = "Model directory inside the image, or a hub name."
  type        = string
  default     = "/models/minilm-sentiment"
}

variable "log_group" {
  description = "CloudWatch Logs group the workers' containers log to (one stream per attempt)."
  type        = string
}

variable "metrics_namespace" {
  description = "CloudWatch namespace of the workers' CPU, memory and rows/s metrics."
  type        = string
  default     = "spotbatch"
}
