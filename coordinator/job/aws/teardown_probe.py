"""The proof that a job can end what it starts: `TerminateInstances(DryRun=True)` on its first instance.

The pre-flight cannot give it: EC2 answers a dry run about an instance that does not exist with
InvalidInstanceID.NotFound, and where the policy lets the coordinator terminate only instances tagged
Project=spotbatch (docs/aws/coordinator-policy.json) with UnauthorizedOperation, whatever the policy. So the
fleet launches a job's first instance alone and asks about it before any other launch; and as EC2 answers
UnauthorizedOperation too for an instance it does not list yet (the tag condition cannot be read), a
refusal counts only once DescribeInstances lists the instance.

Usage::

    fleet.teardown_proven = prove_teardown(ec2, placement, time.sleep)    # or TeardownRefused
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from coordinator.errors import TeardownRefused
from coordinator.job.aws.capacity_pools import Placement
from coordinator.job.aws.error_codes import PERMISSION_CODES, POLICY_HINT, error_code

# EC2's API is eventually consistent: a new instance may be unknown to TerminateInstances for a moment
NOT_FOUND_RETRIES = 5
RETRY_SECONDS = 1.0
log = logging.getLogger("coordinator.job.aws.fleet")


def prove_teardown(ec2: Any, placed: Placement, sleep: Callable[[float], None]) -> bool:
    """True once EC2 answers DryRunOperation; `TeardownRefused` when it refuses the permission; False when
    it cannot tell yet (throttled, the instance still unknown to it): the next launch asks again."""
    for _ in range(NOT_FOUND_RETRIES):
        try:
            ec2.terminate_instances(InstanceIds=[placed.instance_id], DryRun=True)
        except ClientError as error:
            code = error_code(error)
            if code == "DryRunOperation":
                return True
            if code in PERMISSION_CODES and not _listed(ec2, placed.instance_id):
                # under the policy's tag condition EC2 refuses an instance it cannot see yet, whatever the
                # permission (asked in the same breath as RunInstances): a refusal only once it lists it
                sleep(RETRY_SECONDS)
                continue
            if code in PERMISSION_CODES:
                raise TeardownRefused(
                    f"ec2:TerminateInstances is refused ({code}) on the job's first instance "
                    f"{placed.instance_id}, tagged Project=spotbatch: the job stops before launching "
                    "another, and that instance powers itself off when its worker ends or at its max "
                    f"lifetime; {POLICY_HINT}",
                    *placed[:3],
                ) from None
            if code != "InvalidInstanceID.NotFound":
                log.warning(
                    "teardown dry run on %s: %s; asked again at the next launch", placed.instance_id, code
                )
                return False
        else:  # an endpoint that ignores DryRun terminated it: not a proof, and the attempt ends
            log.warning("teardown dry run on %s answered without DryRunOperation", placed.instance_id)
            return False
        sleep(RETRY_SECONDS)
    log.warning(
        "teardown dry run: %s still unknown to EC2; asked again at the next launch", placed.instance_id
    )
    return False


def _listed(ec2: Any, instance_id: str) -> bool:
    """Whether EC2 lists the instance yet (its API is eventually consistent after RunInstances)."""
    try:
        answer = ec2.describe_instances(InstanceIds=[instance_id])
    except ClientError as error:
        if error_code(error) == "InvalidInstanceID.NotFound":
            return False
        raise
    return any(r.get("Instances") for r in answer.get("Reservations", []))
