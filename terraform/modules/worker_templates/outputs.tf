output "launch_template_ids" {
  description = "Launch template id per market (\"spot\", \"on-demand\")."
  value       = { for market, template in aws_launch_template.this : market => template.id }
}

output "launch_template_versions" {
  description = "Latest (and default) version per market: what the coordinator launches and its pre-flight checks."
  value       = { for market, template in aws_launch_template.this : market => tostring(template.latest_version) }
}

output "spot_max_price" {
  description = "Max price of the spot template, USD per hour; null: EC2's default, the on-demand price of the type launched."
  value       = local.spot_max_price
}
