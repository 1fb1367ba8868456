"""The embedded AWS's process: moto's server, plus three behaviours of EC2 that moto lacks, one lookup
that moto makes quadratic, and one S3 deletion moto fails.

EC2 shows a terminated instance in `DescribeInstances` for about an hour, then forgets it ("Terminated
instances remain visible ... for approximately one hour", the EC2 User Guide, "Terminate Amazon EC2
instances"). moto keeps every instance it ever launched, and each `DescribeInstances`/`RunInstances`
walks all of them: over a matrix of simulated runs (hundreds of instances) its answers slowed from 12-16 ms
to 85 ms and the emulated boots fell behind their modelled ones. This process forgets a terminated
instance (and its tags) `--terminated-visible-seconds` after it first saw it terminated (the simulator
passes an hour on its scaled clock), so every run meets the emulator as the first one did.

moto also finds an EC2 resource's own tags by scanning every tag of every resource in the region (a
`describe_tags` with a `resource-id` filter per resource), so a `DescribeInstances` with a tag filter costs
instances x all tags: profiled over a matrix it was most of moto's CPU by the fifth run. `own_tags` reads
the resource's entry directly and answers the same list.

EC2's `RunInstances` is one step: an instance is described with its instance profile and tags from the
first answer on. moto registers the new reservation first, then fills it (tags, volumes) and associates the
instance profile after that, so a `DescribeInstances` racing the launch could see a running instance of the
job with no profile: under load a simulated machine booted without credentials and its launch was lost
(`docker: pull access denied ... no instance profile`). Here a launch and the reads of instances take turns
(`install_atomic_launches`).

EC2 tells why an instance ended (`StateReason`) and sends an "EC2 Instance State-change Notification" to
EventBridge when it does; moto says "Client.UserInitiatedShutdown" for every end and sends nothing. Here a
TerminateInstances carrying the simulator's reason header (`ec2_events.with_state_reason`: a spot reclaim,
a machine that powered itself off) records that reason, and every termination publishes the state-change
event through moto's EventBridge, whose rules deliver it to the stack's queue (`install_termination_events`).

S3 deletes a key with every version: moto disposes of each version and a delete marker has no `dispose`,
so once a bucket's versioning is suspended (Terraform's force_destroy does that first) a key that had been
deleted while versioned (a worker deletes the parts a killed attempt wrote) could not be deleted: a 500
that the provider retried for minutes. A delete marker holds no data; disposing of it is nothing
(`install_disposable_delete_markers`).

Usage::

    python -m coordinator.sim.moto_main --terminated-visible-seconds 240 -H 127.0.0.1 -p 5000
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import Any

from coordinator.sim.ec2_events import REASON_HEADER, STATE_REASONS, state_change

EC2_TERMINATED_VISIBLE_SECONDS = 3600.0  # the EC2 User Guide's "approximately one hour"
SWEEP_EVERY_SECONDS = 1.0


class TerminatedInstanceForgetter:
    """Drops instances that have been terminated for longer than `visible_seconds` from moto's EC2
    backends (every account and region in this process)."""

    def __init__(self, visible_seconds: float, clock: Any = time.monotonic) -> None:
        self.visible_seconds = visible_seconds
        self.clock = clock
        self.terminated_since: dict[str, float] = {}  # instance id -> when first seen terminated
        self.forgotten = 0

    def sweep(self) -> None:
        from moto.ec2.models import ec2_backends

        now = self.clock()
        with LAUNCH_LOCK:  # never a reservation RunInstances is filling
            for account in list(ec2_backends.values()):
                for backend in list(account.values()):
                    self._sweep_backend(backend, now)

    def _sweep_backend(self, backend: Any, now: float) -> None:
        for reservation_id, reservation in list(backend.reservations.items()):
            forget = {i.id for i in list(reservation.instances) if self._forgettable(i, now)}
            if not forget:
                continue  # untouched: RunInstances may still be filling it (it has nothing terminated)
            kept = [i for i in reservation.instances if i.id not in forget]
            reservation.instances = kept  # a new list: a request walking the old one still sees it whole
            for instance_id in forget:
                backend.tags.pop(instance_id, None)
                self.terminated_since.pop(instance_id, None)
            self.forgotten += len(forget)
            if not kept:
                backend.reservations.pop(reservation_id, None)

    def _forgettable(self, instance: Any, now: float) -> bool:
        if instance.state != "terminated":
            return False
        since = self.terminated_since.setdefault(instance.id, now)
        return now - since >= self.visible_seconds

    def run_forever(self) -> None:
        while True:
            time.sleep(SWEEP_EVERY_SECONDS)
            try:
                self.sweep()
            except Exception as error:  # an internal moto change: say so in moto's log, keep serving
                print(f"moto_main: cannot forget terminated instances: {error!r}", file=sys.stderr)
                return


def own_tags(resource: Any) -> list[dict[str, str]]:
    """moto's `TaggedEC2Resource.get_tags`, the same answer in the same order, without the scan."""
    from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix

    resource_id = resource.id
    if not resource_id:
        return []
    kind = EC2_PREFIX_TO_RESOURCE.get(get_prefix(resource_id), "")
    tags = dict(resource.ec2_backend.tags.get(resource_id, {}))
    return [
        {"resource_id": resource_id, "key": k, "value": v, "resource_type": kind} for k, v in tags.items()
    ]


LAUNCH_LOCK = threading.RLock()  # RunInstances whole, or a read of instances: one at a time
READS_OF_INSTANCES = ("describe_instances", "describe_instance_attribute", "describe_instance_status")


def install_atomic_launches() -> None:
    """RunInstances (with its profile association) and the reads of instances under one lock."""
    from moto.ec2.responses.instances import InstanceResponse

    for name in ("run_instances", *READS_OF_INSTANCES):
        setattr(InstanceResponse, name, _under_launch_lock(getattr(InstanceResponse, name)))


def _under_launch_lock(method: Any) -> Any:
    def locked(self: Any) -> Any:
        with LAUNCH_LOCK:
            return method(self)

    locked.__wrapped__ = method  # type: ignore[attr-defined]
    return locked


def install_termination_events() -> None:
    """TerminateInstances records the simulator's StateReason and publishes EC2's state-change events."""
    from moto.ec2.responses.instances import InstanceResponse

    terminate = InstanceResponse.terminate_instances

    def terminate_and_tell(self: Any) -> Any:
        answer = terminate(self)
        try:
            _after_termination(self, self._get_param("InstanceIds", []), self.headers.get(REASON_HEADER))
        except Exception as error:  # an internal moto change: the termination itself stands
            print(f"moto_main: no state reason or event for a termination: {error!r}", file=sys.stderr)
        return answer

    setattr(InstanceResponse, "terminate_instances", terminate_and_tell)  # noqa: B010


def _after_termination(response: Any, instance_ids: list[str], reason: str | None) -> None:
    from moto.ec2.models.instances import StateReason
    from moto.events.models import events_backends

    if reason in STATE_REASONS:
        for instance_id in instance_ids:
            response.ec2_backend.get_instance(instance_id).state_reason = StateReason(
                STATE_REASONS[reason], reason
            )
    account, region = response.current_account, response.region
    entries = [state_change(i, "terminated", region, account) for i in instance_ids]
    for entry in entries:
        entry.pop("Time")  # moto stamps its own
    for first in range(0, len(entries), 10):  # PutEvents takes ten at a time
        events_backends[account][region].put_events(entries[first : first + 10])


def install_own_tags() -> None:
    from moto.ec2.models.core import TaggedEC2Resource

    setattr(TaggedEC2Resource, "get_tags", own_tags)  # noqa: B010  (a method replaced: mypy would refuse it)


def install_disposable_delete_markers() -> None:
    from moto.s3.models import FakeDeleteMarker

    if not hasattr(FakeDeleteMarker, "dispose"):
        setattr(FakeDeleteMarker, "dispose", lambda self, garbage=False: None)  # noqa: B010


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], add_help=False)
    parser.add_argument("--terminated-visible-seconds", type=float, default=EC2_TERMINATED_VISIBLE_SECONDS)
    ours, moto_args = parser.parse_known_args(argv)
    if ours.terminated_visible_seconds <= 0:
        raise SystemExit(f"--terminated-visible-seconds must be > 0, got {ours.terminated_visible_seconds}")
    install_own_tags()
    install_atomic_launches()
    install_termination_events()
    install_disposable_delete_markers()
    forgetter = TerminatedInstanceForgetter(ours.terminated_visible_seconds)
    threading.Thread(target=forgetter.run_forever, name="forget-terminated", daemon=True).start()
    from moto.server import main as moto_server_main

    moto_server_main(moto_args)


if __name__ == "__main__":
    main()
