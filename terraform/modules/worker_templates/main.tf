locals {
  # No max_price unless one is given (AWS's advice): EC2 then caps each spot instance at the on-demand price
  # of the type it launched, which matters when the coordinator launches the template with another type
  # (capacity pools). A given max_price is a ceiling for every type.
  spot_max_price = var.spot.max_price

  user_data = templatefile("${path.module}/user_data.sh.tftpl", {
    image             = var.worker_image
    registry          = split("/", var.worker_image)[0]
    bucket            = var.bucket
    region            = var.region
    model             = var.model
    log_group         = var.log_group
    metrics_namespace = var.metrics_namespace
    gpu               = var.gpu
    lifetime_minutes  = ceil(var.max_lifetime_seconds / 60)
    # the ECS-optimized AMI's daemon is up within seconds of boot; two minutes is a broken one
    docker_wait_seconds = 120
  })
}

resource "aws_launch_template" "this" {
  #checkov:skip=CKV_AWS_341:hop limit 2 lets the worker's container reach IMDSv2 for the spot notice; tokens are still required
  for_each = var.markets

  name_prefix   = "${var.name}-${each.key}-"
  description   = "spotbatch worker, ${each.key}"
  image_id      = var.image_id
  instance_type = var.instance_type
  user_data     = base64encode(local.user_data)
  ebs_optimized = true

  # Each apply (a new image, say) makes a new version; EC2 launches the default version unless told
  # otherwise, so the new one becomes the default. The coordinator names the version it launches anyway
  # (launch_template_versions), the one its pre-flight checked.
  update_default_version = true

  # A worker that shuts itself down (job done, fatal error) must stop billing: terminate, not stop.
  instance_initiated_shutdown_behavior = "terminate"

  # No instance profile here: the coordinator gives every launch its job's own role (coordinator/job/aws/roles.py).

  vpc_security_group_ids = var.security_group_ids

  metadata_options {
    http_endpoint               = "enabled"
    http_tokens                 = "required" # IMDSv2 only
    http_put_response_hop_limit = 2          # the worker runs in a container: one extra hop
    instance_metadata_tags      = "enabled"  # user-data reads the job and segment from the tags
  }

  block_device_mappings {
    device_name = var.root_volume.device_name
    ebs {
      volume_size           = var.root_volume.size
      volume_type           = var.root_volume.type
      encrypted             = true
      kms_key_id            = var.root_volume.kms_key_id
      delete_on_termination = true
    }
  }

  dynamic "instance_market_options" {
    for_each = each.key == "spot" ? [var.spot] : []
    content {
      market_type = "spot"
      spot_options {
        spot_instance_type             = instance_market_options.value.spot_instance_type
        instance_interruption_behavior = instance_market_options.value.instance_interruption_behavior
        max_price                      = tostring(local.spot_max_price) # null stays null: EC2's default
      }
    }
  }

  monitoring {
    enabled = true
  }

  tag_specifications {
    resource_type = "instance"
    # Project=spotbatch is how pre-flight and destroy-real find every instance of the project.
    tags = merge(var.tags, {
      "Project"                          = "spotbatch"
      "spotbatch:market"                 = each.key
      "spotbatch:max-lifetime-seconds"   = tostring(var.max_lifetime_seconds)
      "spotbatch:max-price-usd-per-hour" = each.key == "spot" && local.spot_max_price != null ? tostring(local.spot_max_price) : "on-demand" # the launched type's
    })
  }

  tag_specifications {
    resource_type = "volume"
    tags          = merge(var.tags, { Name = "${var.name}-${each.key}-root" })
  }

  tags = var.tags
}
