from datetime import UTC, datetime

import pytest
from botocore.utils import parse_timestamp

from coordinator.stack.target import AwsTarget
from coordinator.stack.timestamps import fast_timestamp


@pytest.mark.parametrize(
    "text",
    [
        "2026-12-04T22:00:00.000Z",  # EC2's query protocol
        "2026-12-04T22:00:00Z",
        "2026-12-04T22:00:00.123456+02:00",
        "Fri, 04 Dec 2026 22:00:00 GMT",  # S3's Last-Modified header
        "1796421600",  # epoch seconds
        "2026-12-04T22:00:00",  # no zone: botocore decides what it means
    ],
)
def test_every_form_parses_to_the_instant_botocore_gives(text: str) -> None:
    ours, botocores = fast_timestamp(text), parse_timestamp(text)
    assert ours == botocores
    assert ours.utcoffset() == botocores.utcoffset()


def test_an_epoch_number_is_botocores_answer() -> None:
    assert fast_timestamp(1796421600) == datetime(2026, 12, 4, 22, 0, tzinfo=UTC)


def test_a_target_clients_answers_carry_its_timestamps(aws_credentials: None) -> None:
    from moto import mock_aws

    with mock_aws():
        ec2 = AwsTarget.real("us-east-1").client("ec2")
        image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
        ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1)
        launched = ec2.describe_instances()["Reservations"][0]["Instances"][0]["LaunchTime"]
    assert launched.tzinfo is UTC  # fromisoformat's zone; dateutil's would be tzutc()
