# Where the workers' logs go: the docker awslogs driver on each instance writes one stream per attempt
# (<job>/<segment>/<instance>), so a worker's log outlives its instance.
resource "aws_cloudwatch_log_group" "this" {
  #checkov:skip=CKV_AWS_338:worker logs are for debugging a job, kept retention_in_days (14 by default), not a year
  #checkov:skip=CKV_AWS_158:CloudWatch Logs encrypts every group at rest; a customer key (kms_key_arn) is optional
  name              = var.name
  retention_in_days = var.retention_in_days
  kms_key_id        = var.kms_key_arn
  tags              = var.tags
}
