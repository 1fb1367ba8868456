"""Simulator only: EC2's events and termination reasons as AWS produces them, for the emulator to play.

moto keeps instance records and delivers EventBridge `put_events` to SQS targets, but EC2 in moto emits no
events and ends every instance "Client.UserInitiatedShutdown". Here, the same documents EC2 sends
(the EC2 User Guide, "Spot Instance interruption notices" and "EventBridge for Amazon EC2"):

- `interruption_warning`: the PutEvents entry of "EC2 Spot Instance Interruption Warning"; the injector
  publishes it through the emulator's EventBridge when it serves the two-minute notice;
- `state_change`: "EC2 Instance State-change Notification"; `moto_main` publishes one for every instance
  a TerminateInstances ends;
- `with_state_reason(ec2, code)`: an EC2 client whose TerminateInstances says why the instance ends
  (`STATE_REASONS`: a spot reclaim, a machine that powered itself off); `moto_main` records it as the
  instance's `StateReason`, as EC2 does. The coordinator reads both through the real path;
- `telling_machine(ec2, word)`: an EC2 client whose DescribeInstances tells `moto_main` that a simulated
  machine runs the instances it names ("up") or has finished powering off ("off"): EC2 holds a terminated
  instance in shutting-down while its OS stops, and only a machine's power-off ends that.

Usage::

    events.put_events(Entries=[interruption_warning("i-0abc", "us-east-1", "123456789012")])
    reclaimer = with_state_reason(target.client("ec2"), SPOT_TERMINATION)
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

REASON_HEADER = "x-spotbatch-state-reason"
MACHINE_HEADER = "x-spotbatch-machine"
MACHINE_WORDS = ("up", "off")
SPOT_TERMINATION = "Server.SpotInstanceTermination"
INSTANCE_SHUTDOWN = "Client.InstanceInitiatedShutdown"
USER_SHUTDOWN = "Client.UserInitiatedShutdown"
STATE_REASONS = {  # StateReason code -> its message, as DescribeInstances shows them
    SPOT_TERMINATION: "Server.SpotInstanceTermination: Spot instance termination",
    INSTANCE_SHUTDOWN: "Client.InstanceInitiatedShutdown: Instance initiated shutdown",
    USER_SHUTDOWN: "Client.UserInitiatedShutdown: User initiated shutdown",
}


def _entry(detail_type: str, detail: dict[str, str], region: str, account: str) -> dict[str, Any]:
    return {
        "Source": "aws.ec2",
        "DetailType": detail_type,
        "Detail": json.dumps(detail),
        "Resources": [f"arn:aws:ec2:{region}:{account}:instance/{detail['instance-id']}"],
        "Time": datetime.now(UTC),
    }


def interruption_warning(instance_id: str, region: str, account: str) -> dict[str, Any]:
    detail = {"instance-id": instance_id, "instance-action": "terminate"}
    return _entry("EC2 Spot Instance Interruption Warning", detail, region, account)


def rebalance_recommendation(instance_id: str, region: str, account: str) -> dict[str, Any]:
    return _entry("EC2 Instance Rebalance Recommendation", {"instance-id": instance_id}, region, account)


def state_change(instance_id: str, state: str, region: str, account: str) -> dict[str, Any]:
    detail = {"instance-id": instance_id, "state": state}
    return _entry("EC2 Instance State-change Notification", detail, region, account)


def with_state_reason(ec2: Any, code: str) -> Any:
    """`ec2` (a client of its own: the handler stays on it), its TerminateInstances calls saying `code`."""
    if code not in STATE_REASONS:
        raise ValueError(f"unknown EC2 state reason {code!r}; one of {', '.join(STATE_REASONS)}")

    def say_why(request: Any, **_: Any) -> None:
        request.headers[REASON_HEADER] = code

    ec2.meta.events.register("before-sign.ec2.TerminateInstances", say_why)
    return ec2


def telling_machine(ec2: Any, word: str) -> Any:
    """`ec2` (a client of its own), its DescribeInstances calls saying the named machines are `word`."""
    if word not in MACHINE_WORDS:
        raise ValueError(f"a machine is {' or '.join(MACHINE_WORDS)}, not {word!r}")

    def say(request: Any, **_: Any) -> None:
        request.headers[MACHINE_HEADER] = word

    ec2.meta.events.register("before-sign.ec2.DescribeInstances", say)
    return ec2
