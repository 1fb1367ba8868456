"""AWS errors that no retry can fix, told apart from the rest: a missing permission or a used-up quota.

Throttling and 5xx are retried by the callers; a capacity error (no spot capacity in a zone, a price too
low) is tried elsewhere or later; but access denied, `iam:PassRole` denied and a vCPU quota reached
stop the job at once, with what to fix. AWS names the denied action in most messages ("... is not
authorized to perform: iam:PassRole on resource ..."); EC2 hides it in an encoded message, so the action
is then the call's own (`ec2:RunInstances`).

Usage::

    except ClientError as error:
        raise_for_setup(error, "ec2", "the launch")      # PermissionDenied / QuotaExceeded, or returns
"""

from __future__ import annotations

import re

from botocore.exceptions import ClientError

from coordinator.errors import PermissionDenied, QuotaExceeded
from coordinator.stack.opt_in_regions import OPT_IN_REGIONS

# a spot launch on an account without AWSServiceRoleForEC2Spot: EC2 creates it on first use only for a caller
# that may iam:CreateServiceLinkedRole, which the coordinator's policy does not grant (nor should it, daily)
SPOT_ROLE_MISSING = "AuthFailure.ServiceLinkedRoleCreationNotPermitted"
SPOT_ROLE_HINT = (
    "the account has no service-linked role for spot (AWSServiceRoleForEC2Spot) and the coordinator may "
    "not create it: create it once as an administrator, `aws iam create-service-linked-role "
    "--aws-service-name spot.amazonaws.com` (an account that ever ran a spot instance has it)"
)
# a region enabled moments ago: EC2 refuses launches there until AWS has verified the account
PENDING_VERIFICATION = "PendingVerification"
PERMISSION_CODES = frozenset(
    {
        "UnauthorizedOperation",
        "AccessDenied",
        "AccessDeniedException",
        "AuthFailure",
        "InvalidClientTokenId",
        "UnrecognizedClientException",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "ExpiredTokenException",
        "403",  # an error body the client could not parse (moto's XML answer to a JSON-protocol call)
        SPOT_ROLE_MISSING,
        PENDING_VERIFICATION,
    }
)
CREDENTIAL_CODES = frozenset(
    {"AuthFailure", "InvalidClientTokenId", "UnrecognizedClientException", "SignatureDoesNotMatch"}
    | {"ExpiredToken", "ExpiredTokenException"}
)
QUOTA_CODES = frozenset(
    {"VcpuLimitExceeded", "MaxSpotInstanceCountExceeded", "InstanceLimitExceeded", "LimitExceeded"}
)
DENIED_ACTION = re.compile(r"not authorized to perform:? ([A-Za-z0-9-]+:[A-Za-z0-9*]+)")
POLICY_HINT = "grant it in the coordinator's policy (`spotbatch policy`; docs/aws/coordinator-policy.json)"


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


# API operations whose IAM action has another name
ACTION_OF_OPERATION = {
    "s3:ListObjectsV2": "s3:ListBucket",
    "s3:ListObjects": "s3:ListBucket",
    "s3:HeadObject": "s3:GetObject",
}


def denied_action(error: ClientError, service: str) -> str:
    found = DENIED_ACTION.search(str(error))
    if found:
        return found.group(1)
    action = f"{service}:{error.operation_name}"
    return ACTION_OF_OPERATION.get(action, action)


def raise_for_setup(error: ClientError, service: str, doing: str) -> None:
    """Raise `PermissionDenied` or `QuotaExceeded` for an error that is one; return for any other."""
    code = error_code(error)
    if code in PERMISSION_CODES:
        action = denied_action(error, service)
        if code == SPOT_ROLE_MISSING:
            message, action = f"{doing}: {code}: {SPOT_ROLE_HINT}", "iam:CreateServiceLinkedRole"
        elif code == PENDING_VERIFICATION:
            message = (
                f"{doing}: {code}: AWS is still verifying the account in this region (enabled moments ago?): "
                f"run again once it is done (minutes, at most a few hours) ({error})"
            )
        elif code in CREDENTIAL_CODES:
            message = (
                f"{doing}: {code}: the credentials are not valid here, or the region is an opt-in region "
                f"({', '.join(sorted(OPT_IN_REGIONS)[:4])}, ...) the account has not enabled ({error})"
            )
        elif action == "iam:PassRole":
            message = (
                f"{doing}: {code}: iam:PassRole is denied: the coordinator may not hand the job's "
                "worker role to EC2; allow iam:PassRole on the stack's role path to ec2.amazonaws.com "
                f"({POLICY_HINT})"
            )
        else:
            message = f"{doing}: {code}: the credentials may not call {action}; {POLICY_HINT}"
        raise PermissionDenied(message, action) from None
    if code in QUOTA_CODES:
        raise QuotaExceeded(
            f"{doing}: {code}: an account quota is used up ({error}); request more in Service Quotas, "
            "or run fewer instances at once (--max-instances)"
        ) from None
