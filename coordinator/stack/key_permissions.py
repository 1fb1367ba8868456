"""The statements a customer-managed KMS key adds to the project's policies (`permissions.py`).

The stack's `kms_key_arn` encrypts the bucket, the image repository, the logs and the workers' root volumes.
Reading and writing objects needs the key's data-key actions; launching an instance whose volume it encrypts
needs EC2 to use the key on the caller's behalf (AWS's key policy for encrypted volumes: a grant for the
volume, a data key without plaintext, re-encryption of the AMI's snapshot), or the launch ends
`Client.InternalError`. Without a key (AWS-managed encryption) neither is needed.
"""

from __future__ import annotations

from coordinator.stack.iam_documents import StackArns, Statement


def bucket_key(arns: StackArns, why: str) -> list[Statement]:
    """Read and write the bucket's objects (and pull the image) encrypted with the stack's key."""
    if arns.kms_key_arn is None:
        return []
    actions = (("kms:GenerateDataKey", f"{why}: write"), ("kms:Decrypt", f"{why}: read"))
    return [Statement("UseTheStackKey", actions, (arns.kms_key_arn,))]


def volume_key(arns: StackArns) -> list[Statement]:
    """The root volumes are encrypted with the stack's key: a launch has EC2 use it on the caller's behalf
    (AWS's key policy for encrypted volumes), only through EC2, and a grant only for the volume."""
    if arns.kms_key_arn is None:
        return []
    via_ec2 = {"kms:ViaService": f"ec2.{arns.region}.amazonaws.com"}
    return [
        Statement(
            "LaunchWithTheStackKey",
            (
                ("kms:GenerateDataKeyWithoutPlaintext", "the data key of a new encrypted root volume"),
                ("kms:ReEncryptFrom", "the AMI's snapshot re-encrypted under the stack's key"),
                ("kms:ReEncryptTo", "the AMI's snapshot re-encrypted under the stack's key"),
                ("kms:DescribeKey", "EC2 checks the key before it uses it"),
            ),
            (arns.kms_key_arn,),
            {"StringEquals": via_ec2},
        ),
        Statement(
            "GrantTheKeyOnlyToVolumes",
            (("kms:CreateGrant", "EC2 holds a grant on the key for as long as the volume is attached"),),
            (arns.kms_key_arn,),
            {"Bool": {"kms:GrantIsForAWSResource": "true"}, "StringEquals": via_ec2},
        ),
    ]
