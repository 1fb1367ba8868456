"""The fleet: launches workers from the Terraform launch templates with boto3, and terminates them.

Errors are sorted the way SkyPilot sorts them: throttling and 5xx are retried by botocore's `adaptive`
retry mode (exponential backoff with jitter, and client-side rate limiting when EC2 throttles: the client
the fleet is given, `AwsTarget.client`), and past its attempts raised as `ThrottledError` (made again
later, never a reason to give a segment up), except a capacity error: EC2 sends those as 500s too, and
botocore would spend its retries on a zone that has none (the fleet vetoes them); so is an answer botocore
cannot parse (an emulator's or a proxy's HTML page) or a reset connection. A capacity error (no spot
capacity in a zone, a price too low) is tried in the next pool, and raised as `CapacityError`
for the policy when every pool said no; a missing permission (`iam:PassRole` included) or a used-up quota
is `PermissionDenied` / `QuotaExceeded`, which stops the job; anything else is a `LaunchError` that must
not be retried (a bad template). Each launch carries the job's instance profile and is tried in the job's
capacity pools, (instance type, zone), cheapest first and refused ones last (`capacity_pools.py`).
The launch's `ClientToken` is derived from the attempt id and the pool, so a retried or repeated launch
of the same attempt (a coordinator restarted mid-call) returns the same instance instead of a second one.
The job's first instance is launched alone and dry-run-terminated before any other launch: the proof
that the credentials can end what they start, which no made-up id can give (`preflight/checks.py`).

Usage::

    fleet = Fleet(ec2, templates={"spot": "lt-1", "on-demand": "lt-2"},
                  subnets={"us-east-1a": "subnet-1", "us-east-1b": "subnet-2"},
                  instance_profile_arn=role.instance_profile_arn)
    instance_id = fleet.launch(LaunchRequest(job_id="job-1", segment_id="seg-0000",
                                             attempt_id="job-1/seg-0000/1",
                                             market="spot", start=0, stop=2500, input_key="data/x.parquet"))
    placed = fleet.launch_placed(request)          # Placement(instance_id, instance_type, zone)
    fleet.terminate_and_confirm([instance_id])
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from botocore.exceptions import ClientError, ConnectionError, HTTPClientError
from botocore.parsers import ResponseParserError

from coordinator.errors import CapacityError, LaunchError, ThrottledError
from coordinator.job.aws.capacity_pools import CapacityPools, Placement
from coordinator.job.aws.error_codes import error_code, raise_for_setup
from coordinator.job.aws.instances import GONE_STATES, InstanceInfo, alive_ids, list_instances
from coordinator.job.aws.teardown_probe import prove_teardown
from coordinator.job.core import LaunchRequest, tags_for

log = logging.getLogger("coordinator.job.aws.fleet")

RETRYABLE_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalError",
        "InternalFailure",
        "ServiceUnavailable",
        "Unavailable",
    }
)
CAPACITY_CODES = frozenset(
    {
        "InsufficientInstanceCapacity",
        "InsufficientCapacity",
        "SpotMaxPriceTooLow",
        "InsufficientHostCapacity",
        "Unsupported",  # the type is not offered in this zone: another zone may have it
    }
)
# A new instance profile takes seconds to reach EC2 (IAM is eventually consistent): RunInstances answers
# InvalidParameterValue "Invalid IAM Instance Profile ..." until it has. Retried, for this long at most.
PROFILE_PROPAGATION_SECONDS = 60.0
PROFILE_RETRY = 3.0
EC2_MAX_ATTEMPTS = 7  # the EC2 client's: a first call and six retries, then ThrottledError (tried later)
CONFIRM_TIMEOUT_SECONDS = 120.0  # EC2 takes up to a minute or two to report terminated

CONFIRM_POLL_SECONDS = 2.0
ID_BATCH = 100  # instance ids per TerminateInstances/DescribeInstances call (1,000 timed moto out)

# TerminateInstances answers while another caller is terminating the same instance: AWS when it is already
# gone; moto when a concurrent terminate detached its volume first (seen under load in the simulator)
TERMINATING_ELSEWHERE = frozenset({"InvalidInstanceID.NotFound", "InvalidAttachment.NotFound"})


def _no_retry_for_capacity(response: Any = None, **_: Any) -> bool | None:
    """A needs-retry handler: False (no retry, and no later handler asked) for a capacity error."""
    parsed = response[1] if isinstance(response, tuple) and len(response) == 2 else None
    code = parsed.get("Error", {}).get("Code") if isinstance(parsed, dict) else None
    return False if code in CAPACITY_CODES else None


def batches(instance_ids: list[str]) -> list[list[str]]:
    """The ids in runs of `ID_BATCH`, one call each."""
    return [instance_ids[first : first + ID_BATCH] for first in range(0, len(instance_ids), ID_BATCH)]


def is_retryable(error: ClientError) -> bool:
    status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    return error_code(error) in RETRYABLE_CODES or status >= 500


class Fleet:
    def __init__(
        self,
        ec2: Any,
        *,
        templates: dict[str, str],
        versions: dict[str, str] | None = None,
        subnets: dict[str, str] | None = None,
        instance_profile_arn: str | None = None,
        instance_types: list[str] | None = None,
        price: Callable[[str, str], float] | None = None,
        zone_price: Callable[[str, str, str], float | None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`versions`: market -> the template version to launch (the one the pre-flight checked; EC2's
        default without); the job's capacity pools (`capacity_pools.py`) from `subnets` to `clock`."""
        self.ec2, self.templates, self.versions = ec2, templates, versions or {}
        self.pools = CapacityPools(
            subnets or {}, instance_types=instance_types, price=price, zone_price=zone_price, clock=clock
        )
        self.instance_profile_arn = instance_profile_arn
        self.sleep = sleep
        self.api_retries = 0  # calls botocore made again (throttling, 5xx), for the run's log
        self._counting = threading.Lock()  # launches run in threads (`launch_batch.py`)
        self._first_launch = threading.Lock()  # held by the launch whose instance proves the teardown
        self.teardown_proven = False
        # EC2 answers "no capacity" with HTTP 500, which botocore retries: here it moves to the next zone
        ec2.meta.events.register_first("needs-retry.ec2", _no_retry_for_capacity)

    def _call(self, operation: str, **kwargs: Any) -> Any:
        """One EC2 call (botocore retries throttling and 5xx underneath), its errors sorted."""
        try:
            answer = getattr(self.ec2, operation)(**kwargs)
        except ClientError as error:
            attempts = self._count_retries(dict(error.response))
            code = error_code(error)
            history = [f"{operation}: {code or 'HTTP error'}"]
            raise_for_setup(error, "ec2", f"{operation}")
            if code in CAPACITY_CODES:
                raise CapacityError(f"{operation}: {code}: {error}", history) from None
            if is_retryable(error):
                raise ThrottledError(
                    f"{operation}: {code} after {attempts} call(s) (botocore's adaptive retries)", history
                ) from None
            raise LaunchError(
                f"{operation} failed after {attempts} call(s): {code}: {error}", history
            ) from None
        except (ResponseParserError, ConnectionError, HTTPClientError) as error:
            # a 5xx without AWS's error document (a proxy's or emulator's HTML page), a reset connection
            history = [f"{operation}: {type(error).__name__}"]
            raise ThrottledError(f"{operation} failed past botocore's retries: {error}", history) from None
        self._count_retries(answer)
        return answer

    def _count_retries(self, response: dict[str, Any]) -> int:
        """The calls botocore made for one answer (its retries counted in `api_retries`)."""
        retries = int(response.get("ResponseMetadata", {}).get("RetryAttempts", 0) or 0)
        with self._counting:
            self.api_retries += retries
        return retries + 1

    def launch(self, request: LaunchRequest, *, repeat: bool = False) -> str:
        """`launch_placed`'s instance id."""
        return self.launch_placed(request, repeat=repeat).instance_id

    def launch_placed(self, request: LaunchRequest, *, repeat: bool = False) -> Placement:
        """Launch one worker for the request in the first pool with capacity (the job's first one alone,
        then dry-run-terminated: `TeardownRefused` if that is refused)."""
        with self._first_launch:
            if not self.teardown_proven:
                placed = self._launch_placed(request, repeat=repeat)
                self.teardown_proven = prove_teardown(self.ec2, placed, self.sleep)
                return placed
        return self._launch_placed(request, repeat=repeat)

    def _launch_placed(self, request: LaunchRequest, *, repeat: bool) -> Placement:
        """Launch one worker in the first pool with capacity. `repeat`: the call may have run before (a
        restart mid-launch): adopt the instance this attempt already has. A fresh attempt id cannot have
        one, so the look-up (a describe by tag, which moto answers by scanning every instance it ever had)
        is skipped."""
        template = self.templates.get(request.market)
        if template is None:
            raise LaunchError(
                f"no launch template for market {request.market!r}; have {sorted(self.templates)}"
            )
        existing = self._attempt_instance(request.attempt_id) if repeat else None
        if existing is not None:  # launched before a crash, found by its tag (moto ignores ClientToken)
            return existing
        tags = [{"Key": k, "Value": v} for k, v in tags_for(request).items()]
        kwargs: dict[str, Any] = {
            "LaunchTemplate": {
                "LaunchTemplateId": template,
                "Version": self.versions.get(request.market, "$Default"),
            },
            "MinCount": 1,
            "MaxCount": 1,
            "TagSpecifications": [{"ResourceType": "instance", "Tags": tags}],
        }
        if self.instance_profile_arn:
            kwargs["IamInstanceProfile"] = {"Arn": self.instance_profile_arn}
        refusals: list[str] = []
        for kind, zone, subnet in self.pools.order(request.segment_id, request.market):
            pool = f"{request.attempt_id}|{subnet}" + (f"|{kind}" if kind else "")
            token = hashlib.sha256(pool.encode()).hexdigest()[:64]
            placed = {"SubnetId": subnet} if subnet else {}
            typed = {"InstanceType": kind} if kind else {}
            try:
                instances = self._run(ClientToken=token, **placed, **typed, **kwargs)["Instances"]
            except CapacityError as error:  # this pool has none: the next one may
                where = " ".join(part for part in (kind, zone or "default") if part)
                refusals += [f"{where}: {h}" for h in error.history]
                self.pools.avoid(request.market, kind, zone)
                continue
            return Placement(str(instances[0]["InstanceId"]), kind, zone)
        raise CapacityError(f"no capacity for {request.market} in any pool: {'; '.join(refusals)}", refusals)

    def _run(self, **kwargs: Any) -> Any:
        """RunInstances, waiting out a new instance profile's propagation to EC2."""
        waited = 0.0
        while True:
            try:
                return self._call("run_instances", **kwargs)
            except LaunchError as error:
                propagating = "Instance Profile" in str(error) and "InvalidParameterValue" in str(error)
                if not propagating or waited >= PROFILE_PROPAGATION_SECONDS:
                    raise
                log.info("instance profile not visible to EC2 yet; launching again in %.0f s", PROFILE_RETRY)
                self.sleep(PROFILE_RETRY)
                waited += PROFILE_RETRY

    def _attempt_instance(self, attempt_id: str) -> Placement | None:
        """The instance a launch of this attempt made, alive or gone: it bills from its LaunchTime."""
        found = list_instances(partial(self._call, "describe_instances"), attempt_id=attempt_id).values()
        for info in sorted(found, key=lambda i: (not i.alive, i.launch_time)):
            return Placement(info.instance_id, info.instance_type, info.zone, info.launch_time or None)
        return None

    def job_instances(self, job_id: str) -> dict[str, InstanceInfo]:
        """Every instance of the job EC2 still lists, each page through the retries of `_call`."""
        return list_instances(partial(self._call, "describe_instances"), job_id=job_id)

    def instances(self, instance_ids: list[str]) -> dict[str, InstanceInfo]:
        """Those of `instance_ids` EC2 still lists (an id it does not know is simply absent)."""
        found: dict[str, InstanceInfo] = {}
        for batch in batches(instance_ids):
            found.update(list_instances(partial(self._call, "describe_instances"), instance_ids=batch))
        return found

    def alive(self, job_id: str) -> list[str]:
        return alive_ids(self.job_instances(job_id))

    def terminate(self, instance_ids: list[str]) -> None:
        """Ask for termination without waiting (the worker drains on the SIGTERM); confirm later."""
        if instance_ids:
            self._request_termination(instance_ids)

    def _request_termination(self, instance_ids: list[str]) -> None:
        for batch in batches(instance_ids):
            self._terminate_batch(batch)

    def _terminate_batch(self, instance_ids: list[str]) -> None:
        """TerminateInstances; an answer that says someone else got there first is not an error (the
        re-listing that follows is the proof)."""
        try:
            self._call("terminate_instances", InstanceIds=instance_ids)
        except LaunchError as error:
            if not error.history or error.history[-1].split(": ", 1)[-1] not in TERMINATING_ELSEWHERE:
                raise
            log.info(
                "terminate %s: %s (terminated concurrently); re-listing",
                ", ".join(instance_ids),
                error.history[-1],
            )

    def terminate_and_confirm(
        self, instance_ids: list[str], timeout: float = CONFIRM_TIMEOUT_SECONDS
    ) -> None:
        """Terminate, then re-list until every instance reports shutting-down or terminated."""
        if not instance_ids:
            return
        self._request_termination(instance_ids)
        deadline = time.monotonic() + timeout
        while True:
            states = {}
            for batch in batches(instance_ids):
                reservations = self._call("describe_instances", InstanceIds=batch)["Reservations"]
                states.update(
                    {i["InstanceId"]: i["State"]["Name"] for r in reservations for i in r["Instances"]}
                )
            left = sorted(i for i in instance_ids if states.get(i, "terminated") not in GONE_STATES)
            if not left:
                return
            if time.monotonic() > deadline:
                raise LaunchError(f"instances still alive {timeout:.0f} s after terminate: {', '.join(left)}")
            self.sleep(CONFIRM_POLL_SECONDS)
