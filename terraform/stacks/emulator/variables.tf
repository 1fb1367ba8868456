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
}

variable "region" {
  description = "Region the emulator pretends to be."
  type        = string
  default     = "us-east-1"
}

variable "bucket_name" {
  description = "Job bucket."
  type        = string
  default     = "spotbatch-sim"
}

variable "instance_type" {
  description = "Worker instance type (priced from the project's price table)."
  type        = string
  default     = "p3.2xlarge"
}

variable "on_demand_price" {
  description = "On-demand price of instance_type, USD per hour."
  type        = number
  default     = 3.06
}

variable "max_lifetime_seconds" {
  description = "Longest a worker instance may live."
  type        = number
  default     = 21600
}
