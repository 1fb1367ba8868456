variable "name" {
  description = "Name prefix for the network resources."
  type        = string
}

variable "region" {
  description = "Region of the VPC (for the S3 gateway endpoint's service name), as in us-east-1."
  type        = string
}

variable "vpc_id" {
  description = "Existing VPC to use with subnet_id; null creates a VPC."
  type        = string
  default     = null
}

variable "subnet_id" {
  description = "Existing subnet for the workers; null creates a VPC, a private subnet and an S3 endpoint."
  type        = string
  default     = null
}

variable "vpc_cidr" {
  description = "CIDR block of the created VPC."
  type        = string
  default     = "10.42.0.0/16"
}

variable "subnet_cidr" {
  description = "CIDR block of the created subnet (inside vpc_cidr)."
  type        = string
  default     = "10.42.1.0/24"
}

variable "availability_zone" {
  description = "Availability zone of the created subnet; null lets AWS choose."
  type        = string
  default     = null
}

variable "egress_cidr" {
  description = "Where workers may open HTTPS connections (0.0.0.0/0 reaches S3 and the image registry)."
  type        = string
  default     = "0.0.0.0/0"
}

variable "ssh_ingress_cidrs" {
  description = "CIDR ranges allowed to SSH in; empty (the default) allows no inbound traffic at all."
  type        = list(string)
  default     = []

  validation {
    condition     = !contains(var.ssh_ingress_cidrs, "0.0.0.0/0")
    error_message = "SSH from the whole internet (0.0.0.0/0) is refused; name a narrower range."
  }
}

variable "tags" {
  description = "Tags for every resource of the module."
  type        = map(string)
  default     = {}
}
