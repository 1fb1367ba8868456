"""The job's adapter to AWS: the deployed stack and its clients, the fleet (launch, terminate, capacity
pools), instance listings, the job's worker role, EC2's event queue, the teardown probe, the error codes
no retry can fix, and what CloudWatch says of an attempt. It never imports the loop or the data room.

Usage::

    from coordinator.job.aws import CloudTarget, Fleet, list_instances
"""

from coordinator.job.aws.attempt_usage import UsageRecorder
from coordinator.job.aws.capacity_pools import CapacityPool, CapacityPools, Placement
from coordinator.job.aws.cloud_target import CloudTarget
from coordinator.job.aws.error_codes import error_code, raise_for_setup
from coordinator.job.aws.event_queue import EventQueue, InstanceEvent, owners_by_tag
from coordinator.job.aws.fleet import EC2_MAX_ATTEMPTS, Fleet
from coordinator.job.aws.instances import (
    GONE_STATES,
    InstanceInfo,
    alive_ids,
    list_instances,
    wait_terminated,
)
from coordinator.job.aws.roles import JobRoles, delete_roles_under
from coordinator.job.aws.worker_logs import WorkerLogTail

__all__ = [
    "EC2_MAX_ATTEMPTS",
    "GONE_STATES",
    "CapacityPool",
    "CapacityPools",
    "CloudTarget",
    "EventQueue",
    "Fleet",
    "InstanceEvent",
    "InstanceInfo",
    "JobRoles",
    "Placement",
    "UsageRecorder",
    "WorkerLogTail",
    "alive_ids",
    "delete_roles_under",
    "error_code",
    "list_instances",
    "owners_by_tag",
    "raise_for_setup",
    "wait_terminated",
]
