mock_provider "aws" {}

variables {
  name                  = "t"
  image_id              = "ami-12345678"
  instance_type         = "p3.2xlarge"
  on_demand_price       = 3.06
  instance_profile_name = "profile"
  security_group_ids    = ["sg-1"]
  bucket                = "bucket"
  region                = "us-east-1"
}

run "spot_and_on_demand_templates" {
  command = plan

  assert {
    condition     = length(aws_launch_template.this) == 2
    error_message = "expected a spot and an on-demand template"
  }
  assert {
    condition     = aws_launch_template.this["spot"].instance_market_options[0].market_type == "spot"
    error_message = "the spot template must use the spot market"
  }
  assert {
    condition     = aws_launch_template.this["spot"].instance_market_options[0].spot_options[0].spot_instance_type == "one-time"
    error_message = "spot requests are one-time"
  }
  assert {
    condition     = aws_launch_template.this["spot"].instance_market_options[0].spot_options[0].instance_interruption_behavior == "terminate"
    error_message = "an interrupted spot instance terminates"
  }
  assert {
    condition     = aws_launch_template.this["spot"].instance_market_options[0].spot_options[0].max_price == "3.06"
    error_message = "max price defaults to the on-demand price"
  }
  assert {
    condition     = length(aws_launch_template.this["on-demand"].instance_market_options) == 0
    error_message = "the on-demand template has no market options"
  }
  assert {
    condition     = alltrue([for t in aws_launch_template.this : t.metadata_options[0].http_tokens == "required"])
    error_message = "IMDSv2 must be required"
  }
  assert {
    condition     = alltrue([for t in aws_launch_template.this : t.block_device_mappings[0].ebs[0].encrypted == "true"])
    error_message = "root volumes must be encrypted"
  }
  assert {
    condition     = alltrue([for t in aws_launch_template.this : t.instance_initiated_shutdown_behavior == "terminate"])
    error_message = "a worker that shuts down must terminate"
  }
  assert {
    condition     = aws_launch_template.this["spot"].image_id == aws_launch_template.this["on-demand"].image_id && aws_launch_template.this["spot"].user_data == aws_launch_template.this["on-demand"].user_data
    error_message = "both templates share AMI and user-data"
  }
}

run "explicit_max_price" {
  command = plan
  variables {
    spot = { max_price = 1.5 }
  }
  assert {
    condition     = aws_launch_template.this["spot"].instance_market_options[0].spot_options[0].max_price == "1.5"
    error_message = "an explicit max price wins"
  }
}

run "bad_market_is_refused" {
  command = plan
  variables {
    markets = ["spot", "reserved"]
  }
  expect_failures = [var.markets]
}

run "non_positive_prices_are_refused" {
  command = plan
  variables {
    on_demand_price = 0
    spot            = { max_price = -1 }
  }
  expect_failures = [var.on_demand_price, var.spot]
}

run "one_time_spot_cannot_stop" {
  command = plan
  variables {
    spot = { instance_interruption_behavior = "stop" }
  }
  expect_failures = [var.spot]
}
