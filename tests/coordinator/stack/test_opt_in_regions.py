"""Opt-in regions: eu-south-2, the planner's first pick, is disabled on a new account. EC2 there answered
AuthFailure to the first call (a traceback from `zone_names`), and a region enabled moments ago answers
PendingVerification to every launch (each segment FAILED as "not about capacity")."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from coordinator.cost.live_prices import zone_names
from coordinator.errors import ConfigError, PermissionDenied
from coordinator.job.aws import Fleet
from coordinator.stack.opt_in_regions import OPT_IN_REGIONS
from tests.aws_errors import queue_error
from tests.coordinator.job.aws.test_fleet import request


def test_a_disabled_opt_in_region_is_one_line_saying_how_to_enable_it(aws_credentials: None) -> None:
    ec2 = boto3.client("ec2", region_name="eu-south-2")
    with Stubber(ec2) as stub:
        queue_error(stub, "region-not-enabled")
        with pytest.raises(ConfigError, match=r"eu-south-2 is an opt-in region: enable it .*enable-region"):
            zone_names(ec2)


def test_the_same_answer_in_a_region_every_account_has_is_not_taken_for_one(aws_credentials: None) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    with Stubber(ec2) as stub:
        queue_error(stub, "region-not-enabled")
        with pytest.raises(Exception, match="AuthFailure") as raised:
            zone_names(ec2)
        assert not isinstance(raised.value, ConfigError)


def test_a_region_being_verified_stops_the_job_saying_to_come_back(aws_credentials: None) -> None:
    ec2 = boto3.client("ec2", region_name="eu-south-2")
    fleet = Fleet(ec2, templates={"spot": "lt-1"}, subnets={"eu-south-2a": "subnet-a"}, sleep=lambda s: None)
    with Stubber(ec2) as stub:
        queue_error(stub, "region-pending-verification")
        with pytest.raises(PermissionDenied, match="AWS is still verifying the account in this region"):
            fleet.launch(request())


def test_the_planners_first_pick_is_on_the_list() -> None:
    assert "eu-south-2" in OPT_IN_REGIONS and "us-east-1" not in OPT_IN_REGIONS
