"""The fault proxy: AWS's error documents over real HTTP in front of moto, sorted by the fleet as AWS's."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.config import Config

from coordinator.errors import CapacityError, LaunchError, PermissionDenied, ThrottledError
from coordinator.job.aws.fleet import Fleet
from coordinator.sim.fault_proxy import FaultProxy, FaultRule


def test_fault_proxy_answers_with_aws_errors_that_the_fleet_sorts(moto_endpoint: str) -> None:
    with FaultProxy(moto_endpoint) as proxy:
        ec2: Any = boto3.client(
            "ec2",
            endpoint_url=proxy.endpoint,
            region_name="us-east-1",
            config=Config(retries={"total_max_attempts": 4, "mode": "adaptive"}),
        )
        image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]  # forwarded to moto
        template = ec2.create_launch_template(LaunchTemplateName="t", LaunchTemplateData={"ImageId": image})[
            "LaunchTemplate"
        ]["LaunchTemplateId"]
        fleet = Fleet(ec2, templates={"spot": template})
        request = dict(job_id="j", segment_id="seg-0000", market="spot", start=0, stop=10, input_key="k")
        from coordinator.job.core.worker_contract import LaunchRequest

        proxy.add(FaultRule("RunInstances", "RequestLimitExceeded", times=1))
        proxy.add(FaultRule("RunInstances", "InternalError", times=1))
        assert fleet.launch(LaunchRequest(attempt_id="j/seg-0000/1", **request)).startswith("i-")  # type: ignore[arg-type]
        assert fleet.api_retries == 2  # botocore called again after each
        proxy.add(
            FaultRule("RunInstances", "HTML page", times=1, html=True)
        )  # moto's own 500s look like this
        with pytest.raises(ThrottledError, match="Unable to parse"):  # not a verdict: made again later
            fleet.launch(LaunchRequest(attempt_id="j/seg-0000/2", **request))  # type: ignore[arg-type]
        proxy.add(FaultRule("RunInstances", "InsufficientInstanceCapacity", times=1, template_id=template))
        with pytest.raises(CapacityError, match="InsufficientInstanceCapacity"):
            fleet.launch(LaunchRequest(attempt_id="j/seg-0000/3", **request))  # type: ignore[arg-type]
        proxy.add(FaultRule("RunInstances", "UnauthorizedOperation", times=1))
        with pytest.raises(PermissionDenied, match="UnauthorizedOperation: the credentials may not call"):
            fleet.launch(LaunchRequest(attempt_id="j/seg-0000/6", **request))  # type: ignore[arg-type]
        proxy.add(FaultRule("RunInstances", "InvalidLaunchTemplateId.Malformed", times=1))
        with pytest.raises(LaunchError, match="InvalidLaunchTemplateId") as error:
            fleet.launch(LaunchRequest(attempt_id="j/seg-0000/4", **request))  # type: ignore[arg-type]
        assert not isinstance(error.value, CapacityError) and len(error.value.history) == 1
        proxy.add(FaultRule("RunInstances", "RequestLimitExceeded", times=4))  # every call botocore makes
        with pytest.raises(ThrottledError, match="RequestLimitExceeded after 4 call"):
            fleet.launch(LaunchRequest(attempt_id="j/seg-0000/5", **request))  # type: ignore[arg-type]
        assert (
            proxy.injected
            == [
                "RunInstances: RequestLimitExceeded",
                "RunInstances: InternalError",
                "RunInstances: HTML page",
                "RunInstances: InsufficientInstanceCapacity",
                "RunInstances: UnauthorizedOperation",
                "RunInstances: InvalidLaunchTemplateId.Malformed",
            ]
            + ["RunInstances: RequestLimitExceeded"] * 4
        )
