"""The embedded AWS's process: moto's server, plus four behaviours of EC2 that moto lacks, one lookup
that moto makes quadratic, one S3 deletion and one VPC endpoint deletion moto fails.

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
event through moto's EventBridge, whose rules deliver it to the stack's queue (`install_shutdowns`).

EC2 holds a terminated instance in shutting-down while its OS stops (systemd stops the services, Docker
flushes its containers' logs with the instance role), and only then shows it terminated. moto goes straight
to terminated. Here an instance that a simulated machine runs (the instance runtime says so:
`ec2_events.telling_machine`) stays shutting-down until that machine has powered off, at most
`--longest-shutdown-seconds`; one without a machine ends at once, as before. The state-change events follow:
shutting-down, then terminated (`Shutdowns`).

S3 deletes a key with every version: moto disposes of each version and a delete marker has no `dispose`,
so once a bucket's versioning is suspended (Terraform's force_destroy does that first) a key that had been
deleted while versioned (a worker deletes the parts a killed attempt wrote) could not be deleted: a 500
that the provider retried for minutes. A delete marker holds no data; disposing of it is nothing
(`install_disposable_delete_markers`).

EC2 deletes a gateway VPC endpoint whose route is gone already; moto did not (`moto_endpoints.py`).

Usage::

    python -m coordinator.sim.moto_main --terminated-visible-seconds 240 --longest-shutdown-seconds 60 \
        -H 127.0.0.1 -p 5000
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import Any

from coordinator.sim.ec2_events import MACHINE_HEADER, REASON_HEADER, STATE_REASONS, state_change
from coordinator.sim.moto_endpoints import install_endpoint_deletes_without_their_routes

EC2_TERMINATED_VISIBLE_SECONDS = 3600.0  # the EC2 User Guide's "approximately one hour"
# a machine that never says it powered off (its runtime died with it) is terminated after this long (wall)
LONGEST_SHUTDOWN_SECONDS = 60.0
SWEEP_EVERY_SECONDS = 1.0


class TerminatedInstanceForgetter:
    """Drops instances that have been terminated for longer than `visible_seconds` from moto's EC2
    backends (every account and region in this process)."""

    def __init__(
        self, visible_seconds: float, clock: Any = time.monotonic, shutdowns: Shutdowns | None = None
    ) -> None:
        self.visible_seconds = visible_seconds
        self.clock = clock
        self.shutdowns = shutdowns  # swept too: machines that never said they powered off
        self.terminated_since: dict[str, float] = {}  # instance id -> when first seen terminated
        self.forgotten = 0

    def sweep(self) -> None:
        from moto.ec2.models import ec2_backends

        if self.shutdowns is not None:
            self.shutdowns.sweep()
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


class Shutdowns:
    """The instances in shutting-down: those a simulated machine runs, from their TerminateInstances until the
    machine has powered off (or `longest` wall seconds)."""

    def __init__(self, longest: float, clock: Any = time.monotonic) -> None:
        self.longest, self.clock = longest, clock
        self.machines: set[str] = set()  # instances a simulated machine runs
        self.since: dict[str, tuple[float, Any, str, str]] = {}  # id -> (since, instance, account, region)

    def tell(self, instance_ids: list[str], word: str) -> None:
        """A machine's word on its instances: "up" (it runs them), "off" (it has powered off)."""
        with LAUNCH_LOCK:
            if word == "up":
                self.machines.update(instance_ids)
            elif word == "off":
                self.machines.difference_update(instance_ids)
                self.end(instance_ids)

    def terminate(self, response: Any, terminate: Any) -> Any:
        """moto's TerminateInstances, then shutting-down for the instances of machines (already shutting
        down: unchanged, their StateReason kept); publishes the state changes."""
        instance_ids = [str(i) for i in response._get_param("InstanceIds", [])]
        account, region = response.current_account, response.region
        with LAUNCH_LOCK:  # no read sees moto's "terminated" before it is shutting-down
            stopping = {i: self.since[i][1].state_reason for i in instance_ids if i in self.since}
            answer = terminate(response)
            changed = [i for i in instance_ids if i not in stopping]
            reason = response.headers.get(REASON_HEADER)
            for instance_id in instance_ids:
                instance = response.ec2_backend.get_instance(instance_id)
                if instance_id in stopping:
                    _set_state(instance, "shutting-down")
                    instance.state_reason = stopping[instance_id]
                    continue
                if reason in STATE_REASONS:
                    instance.state_reason = _state_reason(reason)
                if instance_id in self.machines:
                    _set_state(instance, "shutting-down")
                    self.since[instance_id] = (self.clock(), instance, account, region)
        _publish(
            [(i, "shutting-down" if i in self.since else "terminated") for i in changed], account, region
        )
        return answer

    def end(self, instance_ids: list[str]) -> None:
        ended = [(i, self.since.pop(i)) for i in instance_ids if i in self.since]
        for _, (_, instance, _, _) in ended:
            _set_state(instance, "terminated")
        for instance_id, (_, _, account, region) in ended:
            _publish([(instance_id, "terminated")], account, region)

    def sweep(self) -> None:
        now = self.clock()
        with LAUNCH_LOCK:
            self.end([i for i, (since, *_) in list(self.since.items()) if now - since >= self.longest])


STATE_CODES = {"shutting-down": 32, "terminated": 48}


def _set_state(instance: Any, name: str) -> None:
    instance._state.name, instance._state.code = name, STATE_CODES[name]


def _state_reason(code: str) -> Any:
    """moto's StateReason of one of EC2's codes."""
    from moto.ec2.models.instances import StateReason

    return StateReason(STATE_REASONS[code], code)


def _publish(changes: list[tuple[str, str]], account: str, region: str) -> None:
    """EC2's state-change events through moto's EventBridge (its rules deliver them to the stack's queue)."""
    from moto.events.models import events_backends

    entries = [state_change(instance_id, state, region, account) for instance_id, state in changes]
    for entry in entries:
        entry.pop("Time")  # moto stamps its own
    try:
        for first in range(0, len(entries), 10):  # PutEvents takes ten at a time
            events_backends[account][region].put_events(entries[first : first + 10])
    except Exception as error:  # an internal moto change: the termination itself stands
        print(f"moto_main: no state-change event: {error!r}", file=sys.stderr)


def install_shutdowns(shutdowns: Shutdowns) -> None:
    """TerminateInstances through `shutdowns`; DescribeInstances hears a machine's word first."""
    from moto.ec2.responses.instances import InstanceResponse

    terminate, describe = InstanceResponse.terminate_instances, InstanceResponse.describe_instances

    def terminate_and_tell(self: Any) -> Any:
        return shutdowns.terminate(self, terminate)

    def hear_then_describe(self: Any) -> Any:
        word = self.headers.get(MACHINE_HEADER)
        if word:
            shutdowns.tell([str(i) for i in self._get_param("InstanceIds", [])], word)
        return describe(self)

    setattr(InstanceResponse, "terminate_instances", terminate_and_tell)  # noqa: B010
    setattr(InstanceResponse, "describe_instances", hear_then_describe)  # noqa: B010


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
    parser.add_argument("--longest-shutdown-seconds", type=float, default=LONGEST_SHUTDOWN_SECONDS)
    ours, moto_args = parser.parse_known_args(argv)
    for name in ("terminated_visible_seconds", "longest_shutdown_seconds"):
        if getattr(ours, name) <= 0:
            raise SystemExit(f"--{name.replace('_', '-')} must be > 0, got {getattr(ours, name)}")
    install_own_tags()
    install_atomic_launches()
    shutdowns = Shutdowns(ours.longest_shutdown_seconds)
    install_shutdowns(shutdowns)
    install_disposable_delete_markers()
    install_endpoint_deletes_without_their_routes()
    forgetter = TerminatedInstanceForgetter(ours.terminated_visible_seconds, shutdowns=shutdowns)
    threading.Thread(target=forgetter.run_forever, name="forget-terminated", daemon=True).start()
    from moto.server import main as moto_server_main

    moto_server_main(moto_args)


if __name__ == "__main__":
    main()
