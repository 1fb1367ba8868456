"""The AWS regions an account must enable before it may use them (opt-in regions), and what to say when one
is not: EC2 answers a call there with AuthFailure ("AWS was not able to validate the provided access
credentials"), as for bad credentials, and a region enabled minutes ago with PendingVerification until AWS
has verified the account there. eu-south-2, the planner's first pick, is one.

Source: AWS's list of regions and their opt-in status (Account Management, "Specify which AWS Regions your
account can use"); every region launched since March 2019 is opt-in.

Usage::

    if region in OPT_IN_REGIONS: print(enable_hint(region))
"""

from __future__ import annotations

OPT_IN_REGIONS = frozenset(
    {
        "af-south-1",
        "ap-east-1",
        "ap-east-2",
        "ap-south-2",
        "ap-southeast-3",
        "ap-southeast-4",
        "ap-southeast-5",
        "ap-southeast-6",
        "ap-southeast-7",
        "ca-west-1",
        "eu-central-2",
        "eu-south-1",
        "eu-south-2",
        "il-central-1",
        "me-central-1",
        "me-south-1",
        "mx-central-1",
    }
)


def enable_hint(region: str) -> str:
    """What to do for an opt-in region the account may not have enabled."""
    return (
        f"{region} is an opt-in region: enable it for the account (`aws account enable-region "
        f"--region-name {region}`; AWS takes minutes to hours), or choose an enabled region"
    )
