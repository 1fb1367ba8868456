mock_provider "aws" {}

variables {
  name               = "t"
  region             = "us-east-1"
  availability_zones = ["us-east-1a", "us-east-1b", "us-east-1c"]
}

run "public_by_default_one_subnet_per_zone_and_no_inbound" {
  command = plan
  assert {
    condition     = length(aws_subnet.this) == 3 && alltrue([for s in aws_subnet.this : s.map_public_ip_on_launch])
    error_message = "one subnet per zone, with public addresses, in public mode"
  }
  assert {
    condition     = length(aws_internet_gateway.this) == 1 && aws_route.internet[0].destination_cidr_block == "0.0.0.0/0"
    error_message = "public mode routes to an internet gateway"
  }
  assert {
    condition     = length(aws_vpc_endpoint.interface) == 0 && length(aws_vpc_endpoint.s3) == 1
    error_message = "public mode needs no interface endpoints; S3 goes through the free gateway endpoint"
  }
  assert {
    condition     = length(aws_vpc_security_group_ingress_rule.ssh) == 0
    error_message = "no inbound rule by default"
  }
  assert {
    condition     = aws_vpc_security_group_egress_rule.https.from_port == 443 && aws_vpc_security_group_egress_rule.https.to_port == 443
    error_message = "egress is HTTPS only"
  }
}

run "private_mode_reaches_aws_through_endpoints" {
  command = plan
  variables {
    mode = "private"
  }
  assert {
    condition     = alltrue([for s in aws_subnet.this : !s.map_public_ip_on_launch]) && length(aws_internet_gateway.this) == 0
    error_message = "private mode: no public address, no internet gateway"
  }
  assert {
    condition     = toset(keys(aws_vpc_endpoint.interface)) == toset(["ecr.api", "ecr.dkr", "logs", "monitoring"])
    error_message = "private mode: interface endpoints for ECR (api, dkr), CloudWatch Logs and metrics"
  }
}

run "uses_given_ids" {
  command = plan
  variables {
    existing = { vpc_id = "vpc-1", subnet_ids = { "us-east-1a" = "subnet-1" } }
  }
  assert {
    condition     = length(aws_vpc.this) == 0 && output.subnet_ids["us-east-1a"] == "subnet-1" && length(output.subnet_ids) == 1
    error_message = "given ids are used, nothing is created"
  }
}

run "ssh_from_the_world_is_refused" {
  command = plan
  variables {
    ssh_ingress_cidrs = ["0.0.0.0/0"]
  }
  expect_failures = [var.ssh_ingress_cidrs]
}

run "ssh_from_two_halves_of_the_world_is_refused" {
  command = plan
  variables {
    ssh_ingress_cidrs = ["0.0.0.0/1", "128.0.0.0/1"]
  }
  expect_failures = [var.ssh_ingress_cidrs]
}

run "ssh_from_all_of_ipv6_is_refused" {
  command = plan
  variables {
    ssh_ingress_cidrs = ["::/0"]
  }
  expect_failures = [var.ssh_ingress_cidrs]
}

run "ssh_from_a_narrow_range_is_allowed" {
  command = plan
  variables {
    ssh_ingress_cidrs = ["203.0.113.0/24", "2001:db8::/48"]
  }
  assert {
    condition     = length(aws_vpc_security_group_ingress_rule.ssh) == 2
    error_message = "narrow ranges get an SSH rule each"
  }
}
