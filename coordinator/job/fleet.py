"""The fleet: launches workers from the Terraform launch templates with boto3, and terminates them.

Errors are sorted the way SkyPilot sorts them: throttling and 5xx are retried here with exponential backoff
and jitter; capacity errors (no spot capacity, price too low, spot limits) are the policy's business and
raised as `CapacityError`; anything else is a `LaunchError` that must not be retried (bad template, bad
permissions). The attempt id is the launch's `ClientToken`, so a retried or repeated launch of the same
attempt (a coordinator restarted mid-call) returns the same instance instead of a second one.

Usage::

    fleet = Fleet(ec2, templates={"spot": "lt-1", "on-demand": "lt-2"}, subnet_id="subnet-1")
    instance_id = fleet.launch(LaunchRequest(job_id="job-1", segment_id="seg-0000",
                                             attempt_id="job-1/seg-0000/1",
                                             market="spot", start=0, stop=2500, input_key="data/x.parquet"))
    fleet.terminate_and_confirm([instance_id])
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from botocore.exceptions import ClientError, ConnectionError, HTTPClientError
from botocore.parsers import ResponseParserError

from coordinator.errors import CapacityError, LaunchError
from coordinator.job.instances import GONE_STATES, InstanceInfo, alive_ids, list_instances
from coordinator.job.launch_contract import TAG_ATTEMPT, LaunchRequest, tags_for

log = logging.getLogger("coordinator.job.fleet")

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
        "MaxSpotInstanceCountExceeded",
        "InsufficientHostCapacity",
        "Unsupported",
    }
)
MAX_API_RETRIES = 6  # 0.5 + 1 + 2 + 4 + 8 + 16 s: past half a minute of throttling, something else is wrong
BASE_DELAY_SECONDS = 0.5
CONFIRM_TIMEOUT_SECONDS = 120.0  # EC2 takes up to a minute or two to report terminated
CONFIRM_POLL_SECONDS = 2.0


# TerminateInstances answers while another caller is terminating the same instance: AWS when it is already
# gone; moto when a concurrent terminate detached its volume first (seen under load in the simulator)
TERMINATING_ELSEWHERE = frozenset({"InvalidInstanceID.NotFound", "InvalidAttachment.NotFound"})


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def is_retryable(error: ClientError) -> bool:
    status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    return error_code(error) in RETRYABLE_CODES or status >= 500


class Fleet:
    def __init__(
        self,
        ec2: Any,
        *,
        templates: dict[str, str],
        subnet_id: str | None,
        max_retries: int = MAX_API_RETRIES,
        base_delay: float = BASE_DELAY_SECONDS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.ec2 = ec2
        self.templates = templates
        self.subnet_id = subnet_id
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.sleep = sleep
        self.api_retries = 0  # retried calls, for the run's log

    def _call(self, operation: str, **kwargs: Any) -> Any:
        history: list[str] = []
        for attempt in range(self.max_retries + 1):
            try:
                return getattr(self.ec2, operation)(**kwargs)
            except ClientError as error:
                code = error_code(error)
                history.append(f"{operation}: {code or 'HTTP error'}")
                if code in CAPACITY_CODES:
                    raise CapacityError(f"{operation}: {code}: {error}", history) from None
                if not is_retryable(error) or attempt == self.max_retries:
                    raise LaunchError(
                        f"{operation} failed after {attempt + 1} call(s): {code}: {error}", history
                    ) from None
                self._back_off(attempt)
            except (ResponseParserError, ConnectionError, HTTPClientError) as error:
                # a 5xx without AWS's error document (a proxy's or emulator's HTML page), a reset connection
                history.append(f"{operation}: {type(error).__name__}")
                if attempt == self.max_retries:
                    raise LaunchError(
                        f"{operation} failed after {attempt + 1} call(s): {error}", history
                    ) from None
                self._back_off(attempt)
        raise AssertionError("unreachable")

    def _back_off(self, attempt: int) -> None:
        self.api_retries += 1
        delay = self.base_delay * 2**attempt
        self.sleep(delay + random.uniform(0, delay / 2))

    def launch(self, request: LaunchRequest, *, repeat: bool = False) -> str:
        """Launch one worker for the request; returns its id. `repeat`: the call may have run before (a
        restart mid-launch): adopt the instance this attempt already has. A fresh attempt id cannot have one,
        so the look-up (a describe by tag, which moto answers by scanning every instance it ever had) is
        skipped."""
        template = self.templates.get(request.market)
        if template is None:
            raise LaunchError(
                f"no launch template for market {request.market!r}; have {sorted(self.templates)}"
            )
        existing = self._attempt_instance(request.attempt_id) if repeat else None
        if existing is not None:  # launched before a crash: EC2's ClientToken covers a call still in flight
            return existing
        kwargs: dict[str, Any] = {
            "LaunchTemplate": {"LaunchTemplateId": template},
            "MinCount": 1,
            "MaxCount": 1,
            "ClientToken": request.attempt_id[:64],
            "TagSpecifications": [
                {
                    "ResourceType": "instance",
                    "Tags": [{"Key": k, "Value": v} for k, v in tags_for(request).items()],
                }
            ],
        }
        if self.subnet_id:
            kwargs["SubnetId"] = self.subnet_id
        instances = self._call("run_instances", **kwargs)["Instances"]
        return str(instances[0]["InstanceId"])

    def _attempt_instance(self, attempt_id: str) -> str | None:
        reservations = self._call(
            "describe_instances", Filters=[{"Name": f"tag:{TAG_ATTEMPT}", "Values": [attempt_id]}]
        )["Reservations"]
        alive = [
            i["InstanceId"]
            for r in reservations
            for i in r["Instances"]
            if i["State"]["Name"] not in GONE_STATES
        ]
        return str(alive[0]) if alive else None

    def job_instances(self, job_id: str) -> dict[str, InstanceInfo]:
        """Every instance of the job EC2 still lists, each page through the retries of `_call`."""
        return list_instances(partial(self._call, "describe_instances"), job_id=job_id)

    def alive(self, job_id: str) -> list[str]:
        return alive_ids(self.job_instances(job_id))

    def terminate(self, instance_ids: list[str]) -> None:
        """Ask for termination without waiting (the worker drains on the SIGTERM); confirm later."""
        if instance_ids:
            self._request_termination(instance_ids)

    def _request_termination(self, instance_ids: list[str]) -> None:
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
            reservations = self._call("describe_instances", InstanceIds=instance_ids)["Reservations"]
            states = {i["InstanceId"]: i["State"]["Name"] for r in reservations for i in r["Instances"]}
            left = sorted(i for i in instance_ids if states.get(i, "terminated") not in GONE_STATES)
            if not left:
                return
            if time.monotonic() > deadline:
                raise LaunchError(f"instances still alive {timeout:.0f} s after terminate: {', '.join(left)}")
            self.sleep(CONFIRM_POLL_SECONDS)
