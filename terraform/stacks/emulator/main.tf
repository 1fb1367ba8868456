# The emulator stack: the same modules as the AWS stack, against a local AWS emulator (moto server by
# default, LocalStack where one runs). The coordinator starts the emulator and passes its endpoint.
provider "aws" {
  region                      = var.region
  access_key                  = "testing"
  secret_key                  = "testing"
  skip_credentials_validation = true
  skip_metadata_api_check     = true
  skip_requesting_account_id  = true
  skip_region_validation      = true
  s3_use_path_style           = true

  endpoints {
    ec2 = var.endpoint
    s3  = var.endpoint
    iam = var.endpoint
    sts = var.endpoint
  }

  default_tags {
    tags = local.tags
  }
}

locals {
  tags = { Project = "spotbatch", "spotbatch:stack" = var.name }
}

data "aws_ami" "worker" {
  owners      = ["amazon"]
  most_recent = true
  filter {
    name   = "name"
    values = ["al2023-ami-2023*-kernel-6.1-x86_64"]
  }
}

module "network" {
  source = "../../modules/network"
  name   = var.name
  region = var.region
  # moto never frees a terminated instance's private IP, and `make simulate` launches about 400 instances:
  # a /24 runs out of addresses (HTTP 500 from RunInstances) halfway through the matrix
  vpc_cidr    = "10.42.0.0/16"
  subnet_cidr = "10.42.0.0/20"
}

module "storage" {
  source        = "../../modules/storage"
  bucket_name   = var.bucket_name
  force_destroy = true # throwaway: the emulator's data dies with it anyway
}

module "worker_iam" {
  source     = "../../modules/worker_iam"
  name       = var.name
  bucket_arn = module.storage.bucket_arn
}

module "worker_templates" {
  source                = "../../modules/worker_templates"
  name                  = var.name
  image_id              = data.aws_ami.worker.id
  instance_type         = var.instance_type
  on_demand_price       = var.on_demand_price
  instance_profile_name = module.worker_iam.instance_profile_name
  security_group_ids    = [module.network.security_group_id]
  bucket                = module.storage.bucket
  region                = var.region
  max_lifetime_seconds  = var.max_lifetime_seconds
}
