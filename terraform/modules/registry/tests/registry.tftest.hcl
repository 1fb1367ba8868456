mock_provider "aws" {}

variables {
  name = "spotbatch-worker"
}

run "immutable_scanned_encrypted_with_a_lifecycle" {
  command = plan
  assert {
    condition     = aws_ecr_repository.this.image_tag_mutability == "IMMUTABLE"
    error_message = "tags are immutable"
  }
  assert {
    condition     = aws_ecr_repository.this.image_scanning_configuration[0].scan_on_push
    error_message = "every push is scanned"
  }
  assert {
    condition     = aws_ecr_repository.this.encryption_configuration[0].encryption_type == "AES256"
    error_message = "images are encrypted at rest"
  }
  assert {
    condition     = length(jsondecode(aws_ecr_lifecycle_policy.this.policy).rules) == 2
    error_message = "untagged images expire and only the newest are kept"
  }
}

run "kms_when_given" {
  command = plan
  variables {
    kms_key_arn = "arn:aws:kms:us-east-1:123456789012:key/abc"
  }
  assert {
    condition     = aws_ecr_repository.this.encryption_configuration[0].encryption_type == "KMS"
    error_message = "a given key encrypts the images"
  }
}
