variable "endpoint" {
  description = "URL of the local AWS emulator, as in http://127.0.0.1:5000 (loopback only; the coordinator checks)."
  type        = string

  validation {
    condition     = can(regex("^http://(127\\.[0-9]+\\.[0-9]+\\.[0-9]+|localhost)(:[0-9]+)?/?$", var.endpoint))
    error_message = "endpoint must be a loopback URL (http://127.x.x.x:PORT or http://localhost:PORT): the emulator stack never talks to a remote endpoint."
  }
}

variable "name" {
  description = "Name prefix of the stack's resources."
  type        = string
  default     = "spotbatch-sim"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,30}$", var.name))
    error_message = "name must be 1-31 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "region" {
  description = "Region the emulator pretends to be."
  type        = string
  default     = "us-east-1"

  validation {
    condition     = can(regex("^[a-z]{2}(-[a-z]+)+-[0-9]$", var.region))
    error_message = "region must look like us-east-1."
  }
}

variable "bucket_name" {
  description = "Job bucket."
  type        = string
  default     = "spotbatch-sim"

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.bucket_name))
    error_message = "bucket_name must be a valid S3 bucket name: 3-63 lowercase letters, digits, dots or hyphens."
  }
}

variable "instance_type" {
  description = "Worker instance type (priced from the project's price table)."
  type        = string
  default     = "p3.2xlarge"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]*[0-9][a-z0-9-]*\\.[a-z0-9]+$", var.instance_type))
    error_message = "instance_type must be an EC2 type such as p3.2xlarge or c7i.xlarge."
  }
}

variable "on_demand_price" {
  description = "On-demand price of instance_type, USD per hour."
  type        = number
  default     = 3.06

  validation {
    condition     = var.on_demand_price > 0
    error_message = "on_demand_price must be a positive number of dollars per hour."
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
