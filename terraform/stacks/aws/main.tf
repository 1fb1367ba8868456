# The real-AWS stack: the same modules, the real provider and credentials from the usual chain.
# Remote state: copy backend.tf.example to backend.tf (S3 + DynamoDB lock) before the first apply.
provider "aws" {
  region = var.region

  default_tags {
    tags = { Project = "spotbatch", "spotbatch:stack" = var.name }
  }
}

data "aws_ssm_parameter" "al2023" {
  name = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
}

module "network" {
  source            = "../../modules/network"
  name              = var.name
  region            = var.region
  vpc_id            = var.vpc_id
  subnet_id         = var.subnet_id
  ssh_ingress_cidrs = var.ssh_ingress_cidrs
}

module "storage" {
  source        = "../../modules/storage"
  bucket_name   = var.bucket_name
  force_destroy = var.force_destroy_bucket
  kms_key_arn   = var.kms_key_arn
}

module "worker_iam" {
  source     = "../../modules/worker_iam"
  name       = var.name
  bucket_arn = module.storage.bucket_arn
}

module "worker_templates" {
  source                = "../../modules/worker_templates"
  name                  = var.name
  image_id              = coalesce(var.image_id, nonsensitive(data.aws_ssm_parameter.al2023.value))
  instance_type         = var.instance_type
  on_demand_price       = var.on_demand_price
  instance_profile_name = module.worker_iam.instance_profile_name
  security_group_ids    = [module.network.security_group_id]
  bucket                = module.storage.bucket
  region                = var.region
  worker_image          = var.worker_image
  max_lifetime_seconds  = var.max_lifetime_seconds
}
