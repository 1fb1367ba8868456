"""The embedded AWS process forgets terminated instances as EC2 does, so a long matrix meets it as the first
run did; running instances and recently terminated ones stay."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from coordinator.sim.emulator import MotoServer
from tests.host_load import scaled

VISIBLE_SECONDS = 2.0


@pytest.mark.slow
def test_a_terminated_instance_is_described_for_its_visible_time_then_forgotten() -> None:
    with MotoServer(terminated_visible_seconds=VISIBLE_SECONDS) as aws:
        ec2 = aws.target().client("ec2")
        image = ec2.describe_images()["Images"][0]["ImageId"]
        launched = ec2.run_instances(ImageId=image, MinCount=3, MaxCount=3, InstanceType="c7i.xlarge")
        ended, *running = sorted(i["InstanceId"] for i in launched["Instances"])
        ec2.create_tags(Resources=[ended], Tags=[{"Key": "Project", "Value": "spotbatch"}])
        ec2.terminate_instances(InstanceIds=[ended])
        terminated_at = time.monotonic()

        def described() -> dict[str, str]:
            pages = ec2.describe_instances()["Reservations"]
            return {i["InstanceId"]: i["State"]["Name"] for r in pages for i in r["Instances"]}

        assert described()[ended] == "terminated"  # still visible right after, as on EC2
        while ended in described():
            assert time.monotonic() - terminated_at < VISIBLE_SECONDS + 10, "never forgotten"
            time.sleep(0.2)
        assert time.monotonic() - terminated_at >= VISIBLE_SECONDS - 0.01
        assert described() == dict.fromkeys(running, "running")
        assert ended not in {t["ResourceId"] for t in ec2.describe_tags()["Tags"]}
        with pytest.raises(ec2.exceptions.ClientError, match="InvalidInstanceID"):
            ec2.describe_instances(InstanceIds=[ended])


@pytest.mark.slow
def test_the_next_start_stops_a_leftover_emulator_it_recorded(tmp_path: Path) -> None:
    pid_file = tmp_path / "moto.pid"
    leftover = MotoServer(pid_file=pid_file).start()  # as if its simulator had died without stopping it
    try:
        assert leftover.process is not None
        with MotoServer(pid_file=pid_file):
            assert leftover.process.wait(scaled(10)) == -signal.SIGKILL
    finally:
        leftover.close()


@pytest.mark.slow
def test_a_visible_time_that_is_not_positive_is_refused_in_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "coordinator.sim.moto_main", "--terminated-visible-seconds", "0"],
        capture_output=True,
        text=True,
        timeout=scaled(60),
        check=False,
    )
    assert done.returncode != 0
    assert done.stderr.strip() == "--terminated-visible-seconds must be > 0, got 0.0"


class _FilledWhileRead(list[Any]):
    """A reservation's instance list that RunInstances appends to while a sweep reads it."""

    def __init__(self, items: list[Any], late: Any) -> None:
        super().__init__(items)
        self.late = late

    def __iter__(self) -> Iterator[Any]:
        snapshot = list(super().__iter__())
        if self.late is not None:
            self.append(self.late)  # the launch thread, between the sweep's read and its write
            self.late = None
        return iter(snapshot)


def test_a_sweep_rewrites_only_reservations_with_an_instance_to_forget() -> None:
    """A reservation RunInstances is still filling has nothing terminated: a sweep must leave its list
    alone (rewriting it from a snapshot dropped the instance being added, and that launch failed)."""
    from moto import mock_aws
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.ec2.models import ec2_backends

    from coordinator.sim.moto_main import TerminatedInstanceForgetter

    now = [0.0]
    forgetter = TerminatedInstanceForgetter(60.0, clock=lambda: now[0])
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        image = ec2.describe_images()["Images"][0]["ImageId"]
        mixed = [
            i["InstanceId"] for i in ec2.run_instances(ImageId=image, MinCount=2, MaxCount=2)["Instances"]
        ]
        filling = ec2.run_instances(ImageId=image, MinCount=2, MaxCount=2)
        ec2.terminate_instances(InstanceIds=[mixed[0]])
        backend = ec2_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]
        reservation = backend.reservations[filling["ReservationId"]]
        first, late = reservation.instances
        reservation.instances = _FilledWhileRead([first], late)
        forgetter.sweep()  # first seen terminated now
        now[0] = 59.0
        forgetter.sweep()
        assert len(backend.all_instances()) == 4
        now[0] = 60.0
        forgetter.sweep()
        left = sorted(i.id for i in backend.all_instances())
        assert left == sorted([mixed[1], *(i["InstanceId"] for i in filling["Instances"])])
        assert forgetter.forgotten == 1


def test_own_tags_answers_as_motos_scan_does() -> None:
    from moto import mock_aws
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.ec2.models import ec2_backends
    from moto.ec2.models.core import TaggedEC2Resource

    from coordinator.sim.moto_main import own_tags

    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        image = ec2.describe_images()["Images"][0]["ImageId"]
        ids = [i["InstanceId"] for i in ec2.run_instances(ImageId=image, MinCount=3, MaxCount=3)["Instances"]]
        ec2.create_tags(Resources=ids[:2], Tags=[{"Key": "Project", "Value": "spotbatch"}])
        ec2.create_tags(
            Resources=[ids[0]], Tags=[{"Key": "spotbatch:job", "Value": "j-1"}, {"Key": "a*", "Value": "?"}]
        )
        vpc = ec2.describe_vpcs()["Vpcs"][0]["VpcId"]
        ec2.create_tags(Resources=[vpc], Tags=[{"Key": "Name", "Value": "default"}])
        backend = ec2_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]
        resources: list[Any] = [*backend.all_instances(), backend.get_vpc(vpc)]
        for resource in resources:
            assert own_tags(resource) == TaggedEC2Resource.get_tags(resource), resource.id
        assert [t["key"] for t in own_tags(backend.get_instance(ids[0]))] == [
            "Project",
            "spotbatch:job",
            "a*",
        ]
        assert own_tags(backend.get_instance(ids[2])) == []


def test_a_launch_is_described_whole_or_not_at_all(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto associates the instance profile after the instance is listed; a read racing the launch (here
    made slow) must still never see a launched instance without its profile."""
    from moto import mock_aws
    from moto.ec2.models import EC2Backend
    from moto.ec2.responses.instances import InstanceResponse

    from coordinator.sim import moto_main

    for name in ("run_instances", *moto_main.READS_OF_INSTANCES):  # undone after the test
        monkeypatch.setattr(InstanceResponse, name, getattr(InstanceResponse, name))
    moto_main.install_atomic_launches()
    associate = EC2Backend.associate_iam_instance_profile

    def slow_associate(self: Any, *args: Any, **kwargs: Any) -> Any:
        time.sleep(0.5)  # the instance is already in its reservation, running, without a profile
        return associate(self, *args, **kwargs)

    monkeypatch.setattr(EC2Backend, "associate_iam_instance_profile", slow_associate)
    with mock_aws():
        iam = boto3.client("iam", region_name="us-east-1")
        iam.create_instance_profile(InstanceProfileName="worker")
        ec2 = boto3.client("ec2", region_name="us-east-1")
        image = ec2.describe_images()["Images"][0]["ImageId"]
        seen: list[Any] = []
        launching = threading.Thread(
            target=ec2.run_instances,
            kwargs={
                "ImageId": image,
                "MinCount": 1,
                "MaxCount": 1,
                "IamInstanceProfile": {"Name": "worker"},
            },
        )
        launching.start()
        while launching.is_alive():
            reservations = ec2.describe_instances()["Reservations"]
            seen += [i for r in reservations for i in r["Instances"]]
        launching.join()
        seen += [i for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]]
        assert seen, "the launch never listed"
        assert all("IamInstanceProfile" in i for i in seen), "described mid-launch without its profile"


@pytest.mark.slow
def test_a_termination_says_why_and_is_told_to_eventbridge() -> None:
    """A reclaim ends the instance as EC2 says a spot reclaim does, a plain terminate as a user's; each
    termination reaches a state-change rule's queue, as EC2's events do."""
    from coordinator.sim.ec2_events import SPOT_TERMINATION, with_state_reason

    with MotoServer() as aws:
        target = aws.target()
        ec2, sqs, events = target.client("ec2"), target.client("sqs"), target.client("events")
        queue = sqs.create_queue(QueueName="events")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]
        pattern = {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]}
        events.put_rule(Name="ends", EventPattern=json.dumps(pattern))
        events.put_targets(Rule="ends", Targets=[{"Id": "q", "Arn": queue_arn["QueueArn"]}])
        image = ec2.describe_images()["Images"][0]["ImageId"]
        reclaimed, ended = (
            i["InstanceId"] for i in ec2.run_instances(ImageId=image, MinCount=2, MaxCount=2)["Instances"]
        )
        with_state_reason(target.client("ec2"), SPOT_TERMINATION).terminate_instances(InstanceIds=[reclaimed])
        ec2.terminate_instances(InstanceIds=[ended])

        described = ec2.describe_instances(InstanceIds=[reclaimed, ended])["Reservations"]
        reasons = {i["InstanceId"]: i["StateReason"]["Code"] for r in described for i in r["Instances"]}
        assert reasons == {reclaimed: SPOT_TERMINATION, ended: "Client.UserInitiatedShutdown"}
        got = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=2)["Messages"]
        details = sorted(
            (json.loads(m["Body"])["detail"]["instance-id"], json.loads(m["Body"])["detail"]["state"])
            for m in got
        )
        assert details == sorted([(reclaimed, "terminated"), (ended, "terminated")])


@pytest.mark.slow
def test_an_instance_a_machine_runs_shows_shutting_down_until_the_machine_has_powered_off() -> None:
    """EC2 holds a terminated instance in shutting-down while its OS stops (the worker's last log lines go
    out then, with its role); the emulator does so for the instances a simulated machine runs, with the two
    state-change events EC2 sends, keeping the termination's reason. Without a machine: terminated at once."""
    from coordinator.sim.ec2_events import SPOT_TERMINATION, telling_machine, with_state_reason

    with MotoServer() as aws:
        target = aws.target()
        ec2, sqs, events = target.client("ec2"), target.client("sqs"), target.client("events")
        queue = sqs.create_queue(QueueName="events")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]
        pattern = {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]}
        events.put_rule(Name="ends", EventPattern=json.dumps(pattern))
        events.put_targets(Rule="ends", Targets=[{"Id": "q", "Arn": queue_arn["QueueArn"]}])
        image = ec2.describe_images()["Images"][0]["ImageId"]
        machine, bare = (
            i["InstanceId"] for i in ec2.run_instances(ImageId=image, MinCount=2, MaxCount=2)["Instances"]
        )
        telling_machine(target.client("ec2"), "up").describe_instances(InstanceIds=[machine])
        reclaimer = with_state_reason(target.client("ec2"), SPOT_TERMINATION)
        answer = reclaimer.terminate_instances(InstanceIds=[machine, bare])["TerminatingInstances"]
        assert {i["CurrentState"]["Name"] for i in answer} == {"shutting-down"}  # what EC2 answers

        def states() -> dict[str, tuple[str, str]]:
            pages = ec2.describe_instances(InstanceIds=[machine, bare])["Reservations"]
            return {
                i["InstanceId"]: (i["State"]["Name"], i["StateReason"]["Code"])
                for r in pages
                for i in r["Instances"]
            }

        assert states() == {
            machine: ("shutting-down", SPOT_TERMINATION),
            bare: ("terminated", SPOT_TERMINATION),
        }
        ec2.terminate_instances(InstanceIds=[machine])  # again, as a coordinator's confirm may: no change
        assert states()[machine] == ("shutting-down", SPOT_TERMINATION)
        telling_machine(target.client("ec2"), "off").describe_instances(InstanceIds=[machine])
        assert states() == {machine: ("terminated", SPOT_TERMINATION), bare: ("terminated", SPOT_TERMINATION)}

        told: list[tuple[str, str]] = []
        while len(told) < 3:
            got = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=2).get(
                "Messages"
            )
            assert got, f"the state changes stopped at {told}"
            told += [
                (json.loads(m["Body"])["detail"]["instance-id"], json.loads(m["Body"])["detail"]["state"])
                for m in got
            ]
        assert sorted(told) == sorted(
            [(machine, "shutting-down"), (machine, "terminated"), (bare, "terminated")]
        )


@pytest.mark.slow
def test_a_bucket_whose_objects_were_deleted_while_versioned_can_be_emptied_after() -> None:
    """Terraform's force_destroy suspends versioning, then deletes every version: moto failed on a key
    whose versions include a delete marker (a worker deletes parts a killed attempt wrote) with a 500,
    which the provider retried for minutes."""
    with MotoServer() as aws:
        s3 = aws.target().client("s3")
        s3.create_bucket(Bucket="versioned-parts")
        s3.put_bucket_versioning(Bucket="versioned-parts", VersioningConfiguration={"Status": "Enabled"})
        s3.put_object(Bucket="versioned-parts", Key="parts/seg-0000/1.parquet", Body=b"x")
        s3.delete_object(Bucket="versioned-parts", Key="parts/seg-0000/1.parquet")  # a delete marker
        s3.put_bucket_versioning(Bucket="versioned-parts", VersioningConfiguration={"Status": "Suspended"})
        listed = s3.list_object_versions(Bucket="versioned-parts")
        versions = [*listed.get("Versions", []), *listed.get("DeleteMarkers", [])]
        objects = [{"Key": v["Key"], "VersionId": v["VersionId"]} for v in versions]
        assert len(objects) == 2
        answer = s3.delete_objects(Bucket="versioned-parts", Delete={"Objects": objects})
        assert answer.get("Errors", []) == []
        s3.delete_object(
            Bucket="versioned-parts", Key="parts/seg-0000/1.parquet"
        )  # what is left of the key goes too
        s3.delete_bucket(Bucket="versioned-parts")


@pytest.mark.slow
def test_a_gateway_endpoint_whose_route_is_gone_is_deleted_as_ec2_does() -> None:
    """moto answered InvalidRoute.NotFound, and a stack's `terraform destroy` failed with it in a CI run."""
    with MotoServer() as aws:
        ec2 = aws.target().client("ec2")
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
        endpoint = ec2.create_vpc_endpoint(
            VpcId=vpc,
            ServiceName="com.amazonaws.us-east-1.s3",
            RouteTableIds=[table],
            VpcEndpointType="Gateway",
        )["VpcEndpoint"]["VpcEndpointId"]
        routes = ec2.describe_route_tables(RouteTableIds=[table])["RouteTables"][0]["Routes"]
        (prefix_list,) = [r["DestinationPrefixListId"] for r in routes if "DestinationPrefixListId" in r]
        ec2.delete_route(RouteTableId=table, DestinationPrefixListId=prefix_list)  # gone first
        assert ec2.delete_vpc_endpoints(VpcEndpointIds=[endpoint])["Unsuccessful"] == []
        ec2.delete_route_table(RouteTableId=table)
        ec2.delete_vpc(VpcId=vpc)
