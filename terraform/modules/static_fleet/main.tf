# The original experiment without a coordinator: N parallel spot instances (max price = on-demand) or
# on-demand instances, each running one fixed segment of the dataset from user-data, then powering off.
locals {
  base  = floor(var.total_rows / var.instance_count)
  extra = var.total_rows % var.instance_count
  segments = [for i in range(var.instance_count) : {
    id    = format("seg-%04d", i)
    start = i * local.base + min(i, local.extra)
    stop  = (i + 1) * local.base + min(i + 1, local.extra)
  }]
  user_data = [for s in local.segments : templatefile("${path.module}/user_data.sh.tftpl", {
    image            = var.worker_image
    input_uri        = var.input_uri
    output_prefix    = var.output_prefix
    model            = var.model
    region           = var.region
    segment          = s.id
    start            = s.start
    stop             = s.stop
    market           = var.market
    max_lifetime_min = ceil(var.max_lifetime_seconds / 60)
  })]
}

resource "aws_spot_instance_request" "this" {
  count = var.market == "spot" ? var.instance_count : 0

  ami                            = var.image_id
  instance_type                  = var.instance_type
  spot_price                     = tostring(var.on_demand_price)
  spot_type                      = "one-time"
  instance_interruption_behavior = "terminate"
  wait_for_fulfillment           = true
  subnet_id                      = var.subnet_id
  vpc_security_group_ids         = var.security_group_ids
  iam_instance_profile           = var.instance_profile_name
  user_data_base64               = base64encode(local.user_data[count.index])
  ebs_optimized                  = true
  monitoring                     = true

  instance_initiated_shutdown_behavior = "terminate"

  metadata_options {
    http_endpoint = "enabled"
    http_tokens   = "required"
  }

  root_block_device {
    encrypted   = true
    volume_type = "gp3"
    volume_size = var.root_volume_size
  }

  tags = merge(var.tags, { "spotbatch:segment" = local.segments[count.index].id, "spotbatch:market" = "spot" })
}

resource "aws_instance" "this" {
  count = var.market == "on-demand" ? var.instance_count : 0

  ami                    = var.image_id
  instance_type          = var.instance_type
  subnet_id              = var.subnet_id
  vpc_security_group_ids = var.security_group_ids
  iam_instance_profile   = var.instance_profile_name
  user_data_base64       = base64encode(local.user_data[count.index])
  ebs_optimized          = true
  monitoring             = true

  instance_initiated_shutdown_behavior = "terminate"

  metadata_options {
    http_endpoint = "enabled"
    http_tokens   = "required"
  }

  root_block_device {
    encrypted   = true
    volume_type = "gp3"
    volume_size = var.root_volume_size
  }

  tags = merge(var.tags, { "spotbatch:segment" = local.segments[count.index].id, "spotbatch:market" = "on-demand" })
}
