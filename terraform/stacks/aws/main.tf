# The spotbatch stack, the same for real AWS and for a local AWS emulator. With `endpoint` (a loopback URL)
# and `emulator_credentials` set, every call goes to the emulator (moto by default, LocalStack where one
# runs); without them, to AWS with the usual credential chain. Nothing else differs: `make simulate` and the
# tests apply exactly what `make apply-real` applies.
provider "aws" {
  region                      = var.region
  access_key                  = var.endpoint == null ? null : var.emulator_credentials.access_key
  secret_key                  = var.endpoint == null ? null : var.emulator_credentials.secret_key
  skip_credentials_validation = var.endpoint != null
  skip_metadata_api_check     = var.endpoint != null
  skip_region_validation      = var.endpoint != null
  s3_use_path_style           = var.endpoint != null

  dynamic "endpoints" {
    for_each = var.endpoint == null ? [] : [var.endpoint]
    content {
      cloudwatch = endpoints.value
      ec2        = endpoints.value
      ecr        = endpoints.value
      events     = endpoints.value
      iam        = endpoints.value
      kms        = endpoints.value
      logs       = endpoints.value
      s3         = endpoints.value
      sqs        = endpoints.value
      ssm        = endpoints.value
      sts        = endpoints.value
    }
  }

  default_tags {
    tags = { Project = "spotbatch", "spotbatch:stack" = var.name }
  }
}

locals {
  # NVIDIA GPU families: the GPU AMI (driver + container toolkit), the CUDA image and `docker run --gpus all`
  gpu_families = ["g4dn", "g5", "g5g", "g6", "g6e", "gr6", "p3", "p3dn", "p4d", "p4de", "p5", "p5e"]
  gpu          = contains(local.gpu_families, split(".", var.instance_type)[0])
  ami_parameter = (local.gpu
    ? "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended/image_id"
    : "/aws/service/ecs/optimized-ami/amazon-linux-2023/recommended/image_id"
  )
  role_path = "/spotbatch/${var.name}/"
}

data "aws_availability_zones" "this" {
  #checkov:skip=CKV_AWS_394:every zone of the region on purpose (more spot capacity pools); a new zone shows up as a new subnet in the plan that apply-real prints and asks to confirm
  state = "available"
  filter { # the region's own zones, not Local or Wavelength Zones (fewer types, other prices)
    name   = "opt-in-status"
    values = ["opt-in-not-required"]
  }
}

# The ECS-optimized Amazon Linux 2023 AMI (Docker; for GPU types also the NVIDIA driver), read only when no
# image_id is given.
data "aws_ssm_parameter" "ami" {
  count = var.image_id == null ? 1 : 0
  name  = local.ami_parameter
}

module "network" {
  source             = "../../modules/network"
  name               = var.name
  region             = var.region
  availability_zones = data.aws_availability_zones.this.names
  mode               = var.network_mode
  existing           = var.existing_network
  ssh_ingress_cidrs  = var.ssh_ingress_cidrs
}

module "storage" {
  source        = "../../modules/storage"
  bucket_name   = var.bucket_name
  force_destroy = var.force_destroy
  kms_key_arn   = var.kms_key_arn
}

module "registry" {
  source       = "../../modules/registry"
  name         = "${var.name}-worker"
  kms_key_arn  = var.kms_key_arn
  force_delete = var.force_destroy
}

module "logs" {
  source            = "../../modules/logs"
  name              = "/spotbatch/${var.name}/workers"
  retention_in_days = var.log_retention_days
  kms_key_arn       = var.kms_key_arn
}

# EC2's interruption warnings, rebalance recommendations and state changes, queued for the coordinator.
module "interruption_events" {
  source = "../../modules/interruption_events"
  name   = var.name
}

module "worker_iam" {
  source            = "../../modules/worker_iam"
  name              = var.name
  role_path         = local.role_path
  bucket_arn        = module.storage.bucket_arn
  repository_arn    = module.registry.repository_arn
  log_group_arn     = module.logs.arn
  kms_key_arn       = var.kms_key_arn
  metrics_namespace = var.metrics_namespace
}

# The launch templates name the image by digest, so they come once an image is pushed (`make image-push`).
module "worker_templates" {
  source               = "../../modules/worker_templates"
  count                = var.worker_image == null ? 0 : 1
  name                 = var.name
  image_id             = var.image_id == null ? nonsensitive(data.aws_ssm_parameter.ami[0].value) : var.image_id
  instance_type        = var.instance_type
  gpu                  = local.gpu
  spot                 = { max_price = var.spot_max_price }
  security_group_ids   = [module.network.security_group_id]
  bucket               = module.storage.bucket
  region               = var.region
  worker_image         = var.worker_image
  log_group            = module.logs.name
  metrics_namespace    = var.metrics_namespace
  max_lifetime_seconds = var.max_lifetime_seconds
  root_volume          = { kms_key_id = var.kms_key_arn }
  tags                 = { "spotbatch:stack" = var.name } # destroy-real finds the stack's instances by it
}
