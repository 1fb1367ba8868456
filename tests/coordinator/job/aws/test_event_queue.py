"""EC2's events reach the coordinator through the stack's queue: its own instances' events are handed to the
loop (and deleted once handled), another job's are handed back, strangers' deleted, and a message that is
not an EC2 event is left for the dead-letter queue."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from coordinator.job.aws.event_queue import EventQueue, owners_by_tag, parse_event
from coordinator.job.core.worker_contract import PROJECT, PROJECT_TAG, TAG_JOB
from coordinator.sim.ec2_events import interruption_warning, state_change
from tests.host_load import scaled

REGION = "us-east-1"


@pytest.fixture
def aws() -> Iterator[dict[str, Any]]:
    with mock_aws():
        sqs: Any = boto3.client("sqs", region_name=REGION)
        ec2: Any = boto3.client("ec2", region_name=REGION)
        events: Any = boto3.client("events", region_name=REGION)
        queue = sqs.create_queue(QueueName="events", Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events.put_rule(Name="ec2", EventPattern=json.dumps({"source": ["aws.ec2"]}))
        events.put_targets(Rule="ec2", Targets=[{"Id": "q", "Arn": arn}])
        yield {"sqs": sqs, "ec2": ec2, "events": events, "queue": queue}


def launch(ec2: Any, job: str | None) -> str:
    image = ec2.describe_images()["Images"][0]["ImageId"]
    tags = [{"Key": PROJECT_TAG, "Value": PROJECT}, {"Key": TAG_JOB, "Value": job}] if job else []
    spec = [{"ResourceType": "instance", "Tags": tags}] if tags else []
    return str(
        ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, TagSpecifications=spec)["Instances"][0][
            "InstanceId"
        ]
    )


def queued(sqs: Any, queue: str) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesNotVisible"]
    )


def test_the_jobs_events_are_taken_others_handed_back_and_strangers_deleted(aws: dict[str, Any]) -> None:
    sqs, ec2, events, queue = aws["sqs"], aws["ec2"], aws["events"], aws["queue"]
    mine, theirs, stranger = launch(ec2, "job-a"), launch(ec2, "job-b"), launch(ec2, None)
    account = "123456789012"
    with EventQueue(sqs, queue, "job-a", owners=owners_by_tag(ec2), long_poll_seconds=1) as listener:
        events.put_events(
            Entries=[
                interruption_warning(mine, REGION, account),
                interruption_warning(theirs, REGION, account),
                state_change(stranger, "terminated", REGION, account),
            ]
        )
        started = time.monotonic()
        assert listener.wait(scaled(10.0)), "no event reached the loop"
        assert time.monotonic() - started < 5.0
        taken = listener.take()
        assert [(e.kind, e.instance_id) for e in taken] == [("interruption-warning", mine)]
        listener.handled(taken[0])
        deadline = time.monotonic() + scaled(10)
        while listener.handed_back == 0 or listener.deleted < 2:  # the stranger's, and mine once handled
            assert time.monotonic() < deadline, (listener.handed_back, listener.deleted)
            time.sleep(0.1)
    assert queued(sqs, queue) == 1  # only job-b's warning stays, for job-b's coordinator
    body = json.loads(sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=3)["Messages"][0]["Body"])
    assert body["detail"]["instance-id"] == theirs


def test_a_message_that_is_not_an_ec2_event_is_left_for_the_dead_letter_queue(aws: dict[str, Any]) -> None:
    sqs, ec2, queue = aws["sqs"], aws["ec2"], aws["queue"]
    sqs.send_message(QueueUrl=queue, MessageBody='{"detail-type": "something else"}')
    with EventQueue(sqs, queue, "job-a", owners=owners_by_tag(ec2), long_poll_seconds=1) as listener:
        assert not listener.wait(2.0)
    assert listener.deleted == 0 and queued(sqs, queue) == 1


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        json.dumps(
            {"source": "aws.ec2", "detail-type": "EC2 Spot Instance Interruption Warning", "detail": {}}
        ),
        json.dumps({"source": "custom", "detail-type": "EC2 Spot Instance Interruption Warning"}),
        json.dumps([1, 2]),
    ],
)
def test_what_is_not_an_ec2_instance_event_parses_to_none(body: str) -> None:
    assert parse_event(body) is None


def test_a_warning_parses_with_its_time() -> None:
    body = json.dumps(
        {
            "version": "0",
            "source": "aws.ec2",
            "detail-type": "EC2 Spot Instance Interruption Warning",
            "time": "2026-12-04T10:00:00Z",
            "detail": {"instance-id": "i-0abc", "instance-action": "terminate"},
        }
    )
    event = parse_event(body, "r", "m")
    assert event is not None
    assert (event.kind, event.instance_id, event.at) == ("interruption-warning", "i-0abc", 1796378400.0)


def test_another_jobs_event_coming_back_asks_ec2_for_its_owner_once(aws: dict[str, Any]) -> None:
    sqs, ec2, events, queue = aws["sqs"], aws["ec2"], aws["events"], aws["queue"]
    theirs = launch(ec2, "job-b")
    asked: list[list[str]] = []
    by_tag = owners_by_tag(ec2)

    def owners(instance_ids: list[str]) -> dict[str, str]:
        asked.append(instance_ids)
        return by_tag(instance_ids)

    with EventQueue(sqs, queue, "job-a", owners=owners, long_poll_seconds=1) as listener:
        events.put_events(Entries=[interruption_warning(theirs, REGION, "123456789012")])
        deadline = time.monotonic() + scaled(20)
        while listener.handed_back < 2:  # received, handed back, received again
            assert time.monotonic() < deadline, listener.handed_back
            time.sleep(0.1)
    assert asked == [[theirs]]


POISON = "[" * 100_000 + "]" * 100_000  # RecursionError out of json.loads


def test_a_poison_message_beside_a_real_warning_goes_alone_to_the_dead_letter_queue(
    aws: dict[str, Any],
) -> None:
    """A 100,000-deep array in the same receive as a genuine warning: the whole batch was dropped (the
    warning never reached the job). Each message is parsed on its own, with limits."""
    sqs, ec2, events, queue = aws["sqs"], aws["ec2"], aws["events"], aws["queue"]
    mine = launch(ec2, "job-a")
    sqs.send_message(QueueUrl=queue, MessageBody=POISON)
    sqs.send_message(QueueUrl=queue, MessageBody=b"\xff\xfe not utf-8".decode("latin-1"))
    with EventQueue(sqs, queue, "job-a", owners=owners_by_tag(ec2), long_poll_seconds=1) as listener:
        events.put_events(Entries=[interruption_warning(mine, REGION, "123456789012")])
        assert listener.wait(scaled(10.0)), "the warning never reached the loop"
        assert [(e.kind, e.instance_id) for e in listener.take()] == [("interruption-warning", mine)]
    assert parse_event(POISON) is None


@pytest.mark.parametrize("body", [POISON, '{"a": ' * 50 + "1" + "}" * 50, "x" * 300_000])
def test_a_document_nested_too_deep_or_too_big_parses_to_none(body: str) -> None:
    assert parse_event(body) is None
