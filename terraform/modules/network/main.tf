locals {
  create = var.subnet_id == null
  vpc_id = local.create ? aws_vpc.this[0].id : var.vpc_id
}

resource "aws_vpc" "this" {
  #checkov:skip=CKV2_AWS_11:flow logs cost per GB for a VPC with no inbound path; enable them in the account baseline if needed
  count                = local.create ? 1 : 0
  cidr_block           = var.vpc_cidr
  enable_dns_support   = true
  enable_dns_hostnames = true
  tags                 = merge(var.tags, { Name = var.name })
}

resource "aws_subnet" "this" {
  count                   = local.create ? 1 : 0
  vpc_id                  = aws_vpc.this[0].id
  cidr_block              = var.subnet_cidr
  availability_zone       = var.availability_zone
  map_public_ip_on_launch = false
  tags                    = merge(var.tags, { Name = "${var.name}-workers" })
}

# Workers reach the bucket through a gateway endpoint: no internet gateway, no public address.
resource "aws_vpc_endpoint" "s3" {
  count             = local.create ? 1 : 0
  vpc_id            = aws_vpc.this[0].id
  service_name      = "com.amazonaws.${var.region}.s3"
  vpc_endpoint_type = "Gateway"
  route_table_ids   = [aws_vpc.this[0].main_route_table_id]
  tags              = var.tags
}

# The VPC's default security group: no rules at all, so nothing can use it by accident.
resource "aws_default_security_group" "this" {
  count  = local.create ? 1 : 0
  vpc_id = aws_vpc.this[0].id
  tags   = var.tags
}

resource "aws_security_group" "this" {
  #checkov:skip=CKV2_AWS_5:attached by the worker_templates module (launch templates), which checkov does not follow
  name_prefix = "${var.name}-workers-"
  description = "spotbatch workers: no inbound; outbound HTTPS only (bucket, image registry)"
  vpc_id      = local.vpc_id
  tags        = var.tags

  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_vpc_security_group_egress_rule" "https" {
  security_group_id = aws_security_group.this.id
  description       = "HTTPS to AWS APIs and the image registry"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = var.egress_cidr
}

resource "aws_vpc_security_group_ingress_rule" "ssh" {
  for_each          = toset(var.ssh_ingress_cidrs)
  security_group_id = aws_security_group.this.id
  description       = "SSH from an explicitly allowed range"
  ip_protocol       = "tcp"
  from_port         = 22
  to_port           = 22
  cidr_ipv4         = each.value
}
