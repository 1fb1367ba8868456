variable "region" {
  description = "AWS region, as in us-east-1 (spotbatch passes --region, else $AWS_REGION/$AWS_DEFAULT_REGION, else the profile's)."
  type        = string

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

variable "endpoint" {
  description = "A local AWS emulator's URL (http://127.0.0.1:PORT); null for real AWS."
  type        = string
  default     = null

  validation {
    condition     = var.endpoint == null || can(regex("^http://(127\\.[0-9]+\\.[0-9]+\\.[0-9]+|localhost|\\[::1\\]):[0-9]+/?$", var.endpoint))
    error_message = "endpoint must be a loopback URL with a port (http://127.0.0.1:PORT): the stack never sends emulator credentials anywhere else."
  }
}

variable "emulator_credentials" {
  description = "The emulator's own credentials (access_key, secret_key); only with endpoint. Real AWS uses the usual credential chain."
  type = object({
    access_key = string
    secret_key = string
  })
  default   = null
  sensitive = true

  validation {
    condition     = (var.emulator_credentials == null) == (var.endpoint == null)
    error_message = "emulator_credentials go with endpoint, and only with it (real AWS uses the usual credential chain)."
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

variable "force_destroy" {
  description = "Whether destroy also deletes the bucket's objects and the repository's images (false keeps real outputs safe)."
  type        = bool
  default     = false
}

variable "kms_key_arn" {
  description = "KMS key for the bucket, the images, the logs and the root volumes; null uses AWS-managed encryption."
  type        = string
  default     = null
}

variable "network_mode" {
  description = "How workers reach AWS: \"public\" (public addresses, no inbound; the default) or \"private\" (VPC endpoints, no public address)."
  type        = string
  default     = "public"

  validation {
    condition     = contains(["public", "private"], var.network_mode)
    error_message = "network_mode must be \"public\" or \"private\"."
  }
}

variable "existing_network" {
  description = "Use an existing VPC and subnets (vpc_id, subnet_ids: zone => subnet id) instead of creating them; null creates them."
  type = object({
    vpc_id     = string
    subnet_ids = map(string)
  })
  default = null
}

variable "ssh_ingress_cidrs" {
  description = "CIDR ranges allowed to SSH in (default none: the workers accept no inbound traffic)."
  type        = list(string)
  default     = []
}

variable "image_id" {
  description = "Worker AMI; null takes the ECS-optimized Amazon Linux 2023 AMI (the GPU one for GPU types) from its public SSM parameter."
  type        = string
  default     = null

  validation {
    condition     = var.image_id == null || can(regex("^ami-[0-9a-f]+$", var.image_id))
    error_message = "image_id must be null or an AMI id (ami-...)."
  }
}

variable "instance_type" {
  description = "Worker instance type, as in c7i.xlarge (CPU) or g5.xlarge (GPU); priced from the project's price table."
  type        = string
  default     = "c7i.xlarge"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]*[0-9][a-z0-9-]*\\.[a-z0-9]+$", var.instance_type))
    error_message = "instance_type must be an EC2 type such as c7i.xlarge or g5.xlarge."
  }

  validation {
    condition     = !contains(["inf1", "inf2", "trn1", "trn1n", "trn2"], split(".", var.instance_type)[0])
    error_message = "Inferentia and Trainium types need the Neuron runtime, which the worker image does not carry; choose a CPU or NVIDIA GPU type."
  }

  validation {
    condition     = !contains(["p3", "p3dn"], split(".", var.instance_type)[0])
    error_message = "p3 and p3dn are V100 (sm_70) types: the CUDA image's torch 2.13 (CUDA 12.8 wheels) has no sm_70 kernels (pytorch/pytorch#172352); choose g4dn, g5, g6, g6e or p4d."
  }

  validation {
    condition     = !can(regex("^(a1|[a-z]+[0-9]+[a-z]*g[a-z]*)$", split(".", var.instance_type)[0]))
    error_message = "arm64 (Graviton) types cannot run the worker image or the stack's AMI, both x86_64; choose an x86_64 type such as c7i, m7i or g5."
  }
}

variable "spot_max_price" {
  description = "Spot max price, USD per hour, for every instance type; null (AWS's advice): EC2 caps each spot instance at the on-demand price of its own type."
  type        = number
  default     = null
}

variable "worker_image" {
  description = "The worker image by digest (<registry>/<repository>@sha256:...); null until `make image-push` has pushed one (the launch templates wait for it)."
  type        = string
  default     = null
}

variable "max_lifetime_seconds" {
  description = "Longest a worker instance may live (a shutdown armed at boot enforces it)."
  type        = number
  default     = 21600

  validation {
    condition     = var.max_lifetime_seconds > 0 && var.max_lifetime_seconds <= 604800
    error_message = "max_lifetime_seconds must be between 1 and 604800 (a week)."
  }
}

variable "log_retention_days" {
  description = "Days the workers' logs are kept in CloudWatch Logs."
  type        = number
  default     = 14
}

variable "worker_trusted_principals" {
  description = "IAM principals (ARNs) that may assume the worker roles besides ec2.amazonaws.com: the simulator's stand-in for EC2 on an emulator; keep it empty on AWS."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for arn in var.worker_trusted_principals : can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:((user|role)/.+|root)$", arn))])
    error_message = "worker_trusted_principals must be IAM user or role ARNs, or an account's root ARN."
  }
}

variable "metrics_namespace" {
  description = "CloudWatch namespace of the workers' CPU, memory and rows/s metrics."
  type        = string
  default     = "spotbatch"
}
