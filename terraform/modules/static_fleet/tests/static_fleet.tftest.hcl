mock_provider "aws" {}

variables {
  instance_count        = 10
  total_rows            = 10000
  on_demand_price       = 3.06
  image_id              = "ami-12345678"
  instance_type         = "p3.2xlarge"
  subnet_id             = "subnet-1"
  security_group_ids    = ["sg-1"]
  instance_profile_name = "profile"
  input_uri             = "s3://b/data/x.parquet"
  output_prefix         = "s3://b/jobs/static"
  region                = "us-east-1"
}

run "ten_parallel_spot_instances" {
  command = plan
  variables {
    market = "spot"
  }
  assert {
    condition     = length(aws_spot_instance_request.this) == 10 && length(aws_instance.this) == 0
    error_message = "10 spot requests, no on-demand instance"
  }
  assert {
    condition     = alltrue([for r in aws_spot_instance_request.this : r.spot_price == "3.06" && r.instance_interruption_behavior == "terminate"])
    error_message = "max price is the on-demand price; interruption terminates"
  }
  assert {
    condition     = output.segments[0].start == 0 && output.segments[9].stop == 10000 && output.segments[3].start == output.segments[2].stop
    error_message = "segments cover every row, contiguous"
  }
}

run "one_on_demand_instance" {
  command = plan
  variables {
    market         = "on-demand"
    instance_count = 1
  }
  assert {
    condition     = length(aws_instance.this) == 1 && aws_instance.this[0].metadata_options[0].http_tokens == "required"
    error_message = "one on-demand instance with IMDSv2"
  }
}
