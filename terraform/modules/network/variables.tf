variable "name" {
  description = "Name prefix for the network resources."
  type        = string
}

variable "region" {
  description = "Region of the VPC (for the endpoints' service names), as in us-east-1."
  type        = string
}

variable "availability_zones" {
  description = "Zones to put a worker subnet in (every zone of the region: each is a capacity pool)."
  type        = list(string)

  validation {
    condition     = length(var.availability_zones) > 0
    error_message = "availability_zones must name at least one zone."
  }
}

variable "mode" {
  description = "How workers reach AWS and the registry: \"public\" (public addresses, internet gateway) or \"private\" (no public address, VPC endpoints)."
  type        = string
  default     = "public"

  validation {
    condition     = contains(["public", "private"], var.mode)
    error_message = "mode must be \"public\" or \"private\"."
  }
}

variable "existing" {
  description = "An existing network to use instead of creating one: vpc_id and subnet_ids (zone => subnet id); null creates the network."
  type = object({
    vpc_id     = string
    subnet_ids = map(string)
  })
  default = null
}

variable "vpc_cidr" {
  description = "CIDR block of the created VPC."
  type        = string
  default     = "10.42.0.0/16"

  validation {
    condition     = can(cidrhost(var.vpc_cidr, 0))
    error_message = "vpc_cidr must be an IPv4 CIDR block, as in 10.42.0.0/16."
  }
}

variable "subnet_newbits" {
  description = "Bits added to vpc_cidr for each zone's subnet (4: a /20 per zone in a /16, room for 4,091 workers each)."
  type        = number
  default     = 4
}

variable "egress_cidr" {
  description = "Where workers may open HTTPS connections (0.0.0.0/0 reaches S3, ECR and CloudWatch in public mode)."
  type        = string
  default     = "0.0.0.0/0"
}

variable "ssh_ingress_cidrs" {
  description = "CIDR ranges (IPv4 or IPv6) allowed to SSH in; empty (the default) allows no inbound traffic at all. Together at most a /8 (IPv4) or /32 (IPv6) worth of addresses."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.ssh_ingress_cidrs : can(cidrhost(c, 0))])
    error_message = "ssh_ingress_cidrs must be CIDR blocks, as in 203.0.113.0/24."
  }

  # The prefix lengths, not the strings: 0.0.0.0/1 + 128.0.0.0/1 is the whole internet as surely as 0.0.0.0/0.
  validation {
    condition = sum(concat([0], [
      for c in var.ssh_ingress_cidrs : strcontains(c, ":") ? 0 : pow(2, 32 - tonumber(split("/", c)[1]))
    ])) <= pow(2, 24)
    error_message = "ssh_ingress_cidrs together cover more than a /8 of IPv4 addresses (SSH from most of the internet is refused); name narrower ranges."
  }

  validation {
    condition     = alltrue([for c in var.ssh_ingress_cidrs : !strcontains(c, ":") || tonumber(split("/", c)[1]) >= 32])
    error_message = "an IPv6 range in ssh_ingress_cidrs must be a /32 or narrower (SSH from most of the internet is refused)."
  }
}

variable "tags" {
  description = "Tags for every resource of the module."
  type        = map(string)
  default     = {}
}
