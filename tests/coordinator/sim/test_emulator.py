"""The embedded AWS process forgets terminated instances as EC2 does, so a long matrix meets it as the first
run did; running instances and recently terminated ones stay."""

from __future__ import annotations

import subprocess
import sys
import time

import boto3
import pytest

from coordinator.sim.emulator import MotoServer

VISIBLE_SECONDS = 2.0


def test_a_terminated_instance_is_described_for_its_visible_time_then_forgotten() -> None:
    with MotoServer(terminated_visible_seconds=VISIBLE_SECONDS) as aws:
        target = aws.target()
        ec2 = boto3.client(
            "ec2",
            region_name=target.region,
            endpoint_url=target.endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
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


def test_a_visible_time_that_is_not_positive_is_refused_in_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "coordinator.sim.moto_main", "--terminated-visible-seconds", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert done.stderr.strip() == "--terminated-visible-seconds must be > 0, got 0.0"
