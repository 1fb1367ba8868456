# The workers' network: one subnet per availability zone, a security group with no inbound rule at all.
#
# mode = "public" (default): subnets with public addresses and a route to an internet gateway, the cheapest
#   way out for image pulls and API calls; nothing can come in (the security group has no ingress).
# mode = "private": no public addresses and no route to the internet; the workers reach S3 through a gateway
#   endpoint and ECR, CloudWatch Logs and metrics through interface endpoints (for accounts that forbid
#   public IPs; the interface endpoints cost about $0.01 per hour each per zone).
locals {
  create  = var.existing == null
  vpc_id  = local.create ? aws_vpc.this[0].id : var.existing.vpc_id
  public  = var.mode == "public"
  zones   = local.create ? var.availability_zones : []
  subnets = { for index, zone in local.zones : zone => cidrsubnet(var.vpc_cidr, var.subnet_newbits, index) }
  # AWS services the workers call, reached through interface endpoints in private mode
  interface_services = local.public || !local.create ? [] : ["ecr.api", "ecr.dkr", "logs", "monitoring"]
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
  #checkov:skip=CKV_AWS_130:public mode gives workers a public address for egress (pulls, API calls) only; their security group has no ingress rule
  for_each                = local.subnets
  vpc_id                  = aws_vpc.this[0].id
  cidr_block              = each.value
  availability_zone       = each.key
  map_public_ip_on_launch = local.public
  tags                    = merge(var.tags, { Name = "${var.name}-workers-${each.key}" })
}

resource "aws_internet_gateway" "this" {
  count  = local.create && local.public ? 1 : 0
  vpc_id = aws_vpc.this[0].id
  tags   = merge(var.tags, { Name = var.name })
}

resource "aws_route_table" "this" {
  count  = local.create ? 1 : 0
  vpc_id = aws_vpc.this[0].id
  tags   = merge(var.tags, { Name = "${var.name}-workers" })
}

resource "aws_route" "internet" {
  count                  = local.create && local.public ? 1 : 0
  route_table_id         = aws_route_table.this[0].id
  destination_cidr_block = "0.0.0.0/0"
  gateway_id             = aws_internet_gateway.this[0].id
}

resource "aws_route_table_association" "this" {
  for_each       = aws_subnet.this
  subnet_id      = each.value.id
  route_table_id = aws_route_table.this[0].id
}

# S3 through a gateway endpoint in both modes: free, and traffic to the bucket stays in the region's network.
resource "aws_vpc_endpoint" "s3" {
  count             = local.create ? 1 : 0
  vpc_id            = aws_vpc.this[0].id
  service_name      = "com.amazonaws.${var.region}.s3"
  vpc_endpoint_type = "Gateway"
  route_table_ids   = [aws_route_table.this[0].id]
  tags              = var.tags
}

resource "aws_vpc_endpoint" "interface" {
  for_each            = toset(local.interface_services)
  vpc_id              = aws_vpc.this[0].id
  service_name        = "com.amazonaws.${var.region}.${each.key}"
  vpc_endpoint_type   = "Interface"
  private_dns_enabled = true
  subnet_ids          = [for subnet in aws_subnet.this : subnet.id]
  security_group_ids  = [aws_security_group.endpoints[0].id]
  tags                = merge(var.tags, { Name = "${var.name}-${each.key}" })
}

resource "aws_security_group" "endpoints" {
  count       = length(local.interface_services) > 0 ? 1 : 0
  name_prefix = "${var.name}-endpoints-"
  description = "spotbatch interface endpoints: HTTPS from inside the VPC only"
  vpc_id      = local.vpc_id
  tags        = var.tags

  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_vpc_security_group_ingress_rule" "endpoints" {
  count             = length(aws_security_group.endpoints)
  security_group_id = aws_security_group.endpoints[0].id
  description       = "HTTPS from the workers' VPC"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = var.vpc_cidr
}

# The VPC's default security group: no rules at all, so nothing can use it by accident.
resource "aws_default_security_group" "this" {
  count  = local.create ? 1 : 0
  vpc_id = aws_vpc.this[0].id
  tags   = var.tags
}

resource "aws_security_group" "this" {
  #checkov:skip=CKV2_AWS_5:attached by the coordinator's RunInstances calls (through the launch templates), which checkov does not follow
  name_prefix = "${var.name}-workers-"
  description = "spotbatch workers: no inbound; outbound HTTPS only (bucket, image registry, logs, metrics)"
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
  cidr_ipv4         = strcontains(each.value, ":") ? null : each.value
  cidr_ipv6         = strcontains(each.value, ":") ? each.value : null
}
