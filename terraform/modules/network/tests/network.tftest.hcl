mock_provider "aws" {}

variables {
  name   = "t"
  region = "us-east-1"
}

run "creates_private_network_without_inbound" {
  command = plan
  assert {
    condition     = length(aws_vpc.this) == 1 && length(aws_subnet.this) == 1
    error_message = "without a subnet_id the module creates the network"
  }
  assert {
    condition     = aws_subnet.this[0].map_public_ip_on_launch == false
    error_message = "workers get no public address"
  }
  assert {
    condition     = length(aws_vpc_security_group_ingress_rule.ssh) == 0
    error_message = "no inbound rule by default"
  }
  assert {
    condition     = aws_vpc_security_group_egress_rule.https.from_port == 443
    error_message = "egress is HTTPS only"
  }
}

run "uses_given_ids" {
  command = plan
  variables {
    vpc_id    = "vpc-1"
    subnet_id = "subnet-1"
  }
  assert {
    condition     = length(aws_vpc.this) == 0 && output.subnet_id == "subnet-1"
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
