mock_provider "aws" {}

variables {
  name               = "t"
  image_id           = "ami-12345678"
  instance_type      = "p3.2xlarge"
  security_group_ids = ["sg-1"]
  bucket             = "bucket"
  region             = "us-east-1"
  log_group          = "/spotbatch/t/workers"
  worker_image       = "123456789012.dkr.ecr.us-east-1.amazonaws.com/spotbatch-worker@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
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
    condition     = aws_launch_template.this["spot"].instance_market_options[0].spot_options[0].max_price == null
    error_message = "no max price by default: EC2 caps each instance at its own type's on-demand price"
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
    condition     = alltrue([for t in aws_launch_template.this : t.update_default_version])
    error_message = "each apply's version (a new image) must become the default that EC2 launches"
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

run "a_non_positive_max_price_is_refused" {
  command = plan
  variables {
    spot = { max_price = -1 }
  }
  expect_failures = [var.spot]
}

run "one_time_spot_cannot_stop" {
  command = plan
  variables {
    spot = { instance_interruption_behavior = "stop" }
  }
  expect_failures = [var.spot]
}

run "the_boot_script_arms_the_lifetime_first_and_uses_the_gpus_only_on_gpu_types" {
  command = plan
  variables {
    max_lifetime_seconds = 3601
  }
  assert {
    condition     = startswith([for line in split("\n", base64decode(aws_launch_template.this["spot"].user_data)) : line if line != "" && !startswith(line, "#")][0], "shutdown -h ")
    error_message = "the lifetime shutdown is the script's first command, before any call that could fail"
  }
  assert {
    condition     = strcontains(base64decode(aws_launch_template.this["spot"].user_data), "shutdown -h \"+61\"")
    error_message = "the lifetime (rounded up to whole minutes) is armed"
  }
  assert {
    condition     = length(regexall("--gpus all", base64decode(aws_launch_template.this["spot"].user_data))) == 0
    error_message = "a CPU type runs without --gpus"
  }
  assert {
    condition     = strcontains(base64decode(aws_launch_template.this["spot"].user_data), "credHelpers") && strcontains(base64decode(aws_launch_template.this["spot"].user_data), "123456789012.dkr.ecr.us-east-1.amazonaws.com")
    error_message = "the registry is logged into with the instance role's credentials"
  }
  assert {
    condition     = alltrue([for t in aws_launch_template.this : length(t.iam_instance_profile) == 0])
    error_message = "no instance profile in the templates: each job brings its own role"
  }
}

run "gpu_types_run_with_the_gpus" {
  command = plan
  variables {
    gpu = true
  }
  assert {
    condition     = strcontains(base64decode(aws_launch_template.this["on-demand"].user_data), "--gpus all")
    error_message = "a GPU type runs the container with --gpus all"
  }
}

run "an_image_by_tag_is_refused" {
  command = plan
  variables {
    worker_image = "123456789012.dkr.ecr.us-east-1.amazonaws.com/spotbatch-worker:latest"
  }
  expect_failures = [var.worker_image]
}
