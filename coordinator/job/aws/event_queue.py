"""EC2's own word on the job's instances: the stack's events queue, long-polled in a thread.

The stack's EventBridge rules (terraform/modules/interruption_events) put three kinds of EC2 event in one
SQS queue: the spot interruption warning (two minutes before the reclaim), the rebalance recommendation
(the instance is at elevated risk of one) and the state changes that end an instance (stopping,
shutting-down, terminated). `EventQueue` long-polls the queue in a thread and parses each message into an
`InstanceEvent`. The control loop `take()`s them each cycle, and its wait between cycles (`wait()`) returns
as soon as one arrives: a warning is acted on at once, not at the next cycle, and independently of the
worker (whose heartbeats stay the second signal).

The rules see every instance of the account and region. An event about one of this job's instances is
handed to the loop and deleted once handled (`handled`): a coordinator that dies before that finds it again
after the visibility timeout. One about another job's instance is made visible again after
`HAND_BACK_SECONDS` for that job's coordinator; one about no spotbatch instance is deleted. A message that
is not an EC2 event is left alone: after the queue's max receive count it moves to the dead-letter queue.

Usage::

    with EventQueue(sqs, stack.events_queue_url, job_id, owners=owners_by_tag(ec2)) as events:
        events.wait(5.0)                      # returns early when an event arrives
        for event in events.take():           # InstanceEvent(kind, instance_id, state, at, ...)
            ...
            events.handled(event)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from coordinator.background import Background
from coordinator.job.aws.instances import list_instances
from coordinator.untrusted import load_json

EventKind = Literal["interruption-warning", "rebalance", "state-change"]
DETAIL_TYPES: dict[str, EventKind] = {
    "EC2 Spot Instance Interruption Warning": "interruption-warning",
    "EC2 Instance Rebalance Recommendation": "rebalance",
    "EC2 Instance State-change Notification": "state-change",
}
LONG_POLL_SECONDS = 20  # SQS's longest: the fewest requests, and a message is returned the moment it comes
HAND_BACK_SECONDS = 2  # another job's event: visible again this soon, for its own coordinator
RETRY_SECONDS = 1.0  # after a failed receive (throttled, the network)
log = logging.getLogger("coordinator.events")
Owners = Callable[[list[str]], dict[str, str]]  # instance ids -> the job each belongs to ("" none)


@dataclass(frozen=True, slots=True)
class InstanceEvent:
    kind: EventKind
    instance_id: str
    state: str  # a state change's new state; "" for the others
    at: float  # the event's time (epoch seconds, as EC2 stamped it)
    receipt: str  # SQS receipt handle: to delete it once handled
    message_id: str


def parse_event(body: str, receipt: str = "", message_id: str = "") -> InstanceEvent | None:
    """An EC2 event as EventBridge delivers it to SQS; None if the message is not one (anything may be sent
    to the queue: a body that is not UTF-8, not JSON, or nested too deep is refused alone, with limits)."""
    try:
        document = load_json(body, what="events queue message")
        kind = DETAIL_TYPES.get(document.get("detail-type", ""))
        detail = document.get("detail") or {}
        instance_id = str(detail.get("instance-id", ""))
        at = datetime.fromisoformat(str(document.get("time", "")).replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError, TypeError):  # UntrustedInput is a ValueError
        return None
    if kind is None or document.get("source") != "aws.ec2" or not instance_id.startswith("i-"):
        return None
    return InstanceEvent(kind, instance_id, str(detail.get("state", "")), at, receipt, message_id)


def owners_by_tag(ec2: Any) -> Owners:
    """Which job each instance belongs to, by its spotbatch tags ("" for an instance of no job)."""

    def owners(instance_ids: list[str]) -> dict[str, str]:
        found = list_instances(ec2.describe_instances, instance_ids=instance_ids)
        return {i: found[i].job if i in found else "" for i in instance_ids}

    return owners


class EventQueue(Background):
    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        job_id: str,
        *,
        owners: Owners,
        long_poll_seconds: int = LONG_POLL_SECONDS,
    ) -> None:
        self.sqs, self.queue_url, self.job_id = sqs, queue_url, job_id
        self.owners = owners
        self.long_poll_seconds = long_poll_seconds
        self.mine: set[str] = set()  # instances known to be this job's (no describe needed)
        self._owner: dict[str, str] = {}  # other instances' jobs ("" none), as EC2's tags said (listener's)
        self.received = self.deleted = self.handed_back = 0
        self._ready: list[InstanceEvent] = []
        self._arrived = threading.Condition()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._listen, name="events", daemon=True)

    def start(self) -> EventQueue:
        self._thread.start()
        return self

    def close(self) -> None:
        self._closed.set()  # a long poll in flight: its messages are handed back when it returns

    # -- the control loop's side ------------------------------------------------------------------------

    def watch(self, instance_id: str) -> None:
        """An instance the job launched: its events are the job's without asking EC2."""
        with self._arrived:
            self.mine.add(instance_id)

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True at once if an event is (or becomes) ready."""
        with self._arrived:
            return self._arrived.wait_for(lambda: bool(self._ready), timeout=seconds)

    def take(self) -> list[InstanceEvent]:
        with self._arrived:
            ready, self._ready = self._ready, []
        return ready

    def handled(self, event: InstanceEvent) -> None:
        self._delete([event])

    # -- the listener thread ----------------------------------------------------------------------------

    def _listen(self) -> None:
        while not self._closed.is_set():
            try:
                answer = self.sqs.receive_message(
                    QueueUrl=self.queue_url,
                    MaxNumberOfMessages=10,
                    WaitTimeSeconds=self.long_poll_seconds,
                )
            except Exception as error:  # throttled, the network: heartbeats carry on meanwhile
                log.warning("events queue: receive failed (%s); again in %g s", error, RETRY_SECONDS)
                self._closed.wait(RETRY_SECONDS)
                continue
            messages = answer.get("Messages", [])
            if self._closed.is_set():  # closed during the poll: leave them for whoever polls next
                self._hand_back(messages, 0)
                return
            try:
                self._sort(messages)
            except Exception as error:  # an EC2 lookup failed: the messages come back after the timeout
                log.warning("events queue: cannot sort %d event(s) (%s)", len(messages), error)

    def _sort(self, messages: list[dict[str, Any]]) -> None:
        events = {}
        for message in messages:
            event = parse_event(message["Body"], message["ReceiptHandle"], message.get("MessageId", ""))
            if event is None:
                log.warning("events queue: not an EC2 event, left for the dead-letter queue: %.200s", message)
                continue
            events[event.message_id or event.receipt] = event
        self.received += len(events)
        with self._arrived:
            unknown = {e.instance_id for e in events.values() if e.instance_id not in self.mine}
        unknown -= self._owner.keys()
        if unknown:  # asked once per instance: its job tag is set at launch and never changes
            self._owner.update(self.owners(sorted(unknown)))
        owners = self._owner
        ours: list[InstanceEvent] = []
        others: list[InstanceEvent] = []
        strangers: list[InstanceEvent] = []
        for event in events.values():
            owner = self.job_id if event.instance_id in self.mine else owners.get(event.instance_id, "")
            (ours if owner == self.job_id else others if owner else strangers).append(event)
        self._delete(strangers)
        self._hand_back([{"ReceiptHandle": e.receipt} for e in others], HAND_BACK_SECONDS)
        if ours:
            with self._arrived:
                self.mine.update(e.instance_id for e in ours)
                self._ready.extend(ours)
                self._arrived.notify_all()

    def _delete(self, events: Iterable[InstanceEvent]) -> None:
        """One DeleteMessage each (IAM's `sqs:DeleteMessage`; moto, unlike SQS, asks a batch for its own
        action). A failed delete is not an error: the event comes back after the visibility timeout, and
        acting on it again changes nothing."""
        for event in events:
            try:
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=event.receipt)
                self.deleted += 1
            except Exception as error:
                log.warning("events queue: cannot delete an event of %s (%s)", event.instance_id, error)

    def _hand_back(self, messages: list[dict[str, Any]], seconds: int) -> None:
        for message in messages:
            try:
                self.sqs.change_message_visibility(
                    QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=seconds
                )
                self.handed_back += 1
            except Exception as error:  # it comes back after the visibility timeout anyway
                log.warning("events queue: cannot hand an event back (%s)", error)
