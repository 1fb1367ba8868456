"""The vCPU quota check against Service Quotas answers (botocore's Stubber: moto has no EC2 quotas)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from coordinator.errors import PermissionDenied
from coordinator.preflight.quotas import QUOTA_CODES, check_vcpu_quotas, family_group


@pytest.fixture
def quotas() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client(
        "service-quotas", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s"
    )
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def ec2() -> Iterator[Any]:
    """An account that already runs two on-demand c7i.xlarge (4 vCPUs each) and one spot g5.xlarge."""
    client = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")

    def instance(kind: str, lifecycle: str | None, state: str = "running") -> dict[str, Any]:
        data: dict[str, Any] = {
            "InstanceType": kind,
            "State": {"Name": state},
            "CpuOptions": {"CoreCount": 2, "ThreadsPerCore": 2},
        }
        if lifecycle:
            data["InstanceLifecycle"] = lifecycle
        return data

    running = [
        instance("c7i.xlarge", None),
        instance("m7i.xlarge", None),
        instance("c7i.xlarge", "spot", state="terminated"),  # gone: holds no quota
        instance("g5.xlarge", "spot"),
    ]
    with Stubber(client) as stubber:
        stubber.add_response("describe_instances", {"Reservations": [{"Instances": running}]})
        yield client


def quota(stubber: Stubber, code: str, value: float) -> None:
    stubber.add_response(
        "get_service_quota",
        {"Quota": {"QuotaCode": code, "Value": value}},
        {"ServiceCode": "ec2", "QuotaCode": code},
    )


def test_family_groups_follow_the_service_quota_names() -> None:
    assert [family_group(t) for t in ("c7i.xlarge", "t3.micro", "g5.xlarge", "p3.2xlarge")] == [
        "standard",
        "standard",
        "g",
        "p",
    ]
    assert [family_group(t) for t in ("inf2.xlarge", "trn1.2xlarge", "vt1.3xlarge", "dl1.24xlarge")] == [
        "inf",
        "trn",
        "g",
        "dl",
    ]


def test_a_fleet_that_fits_passes_with_the_free_vcpus(quotas: tuple[Any, Stubber], ec2: Any) -> None:
    client, stubber = quotas
    on_demand, spot = QUOTA_CODES["standard"]
    quota(stubber, on_demand, 64)
    quota(stubber, spot, 32)
    result = check_vcpu_quotas(
        client, ec2, instance_type="c7i.xlarge", vcpus=4, instances=8, markets=("on-demand", "spot")
    )
    assert result.passed, result.reason
    assert f"on-demand standard ({on_demand}): 32 vCPUs needed, 56 of 64 free" in result.reason
    assert f"spot standard ({spot}): 32 vCPUs needed, 32 of 32 free" in result.reason


def test_a_fleet_that_cannot_fit_is_refused_naming_the_quota(quotas: tuple[Any, Stubber], ec2: Any) -> None:
    client, stubber = quotas
    on_demand, spot = QUOTA_CODES["standard"]
    quota(stubber, on_demand, 36)  # 8 already used: 28 free, 32 needed
    quota(stubber, spot, 64)
    result = check_vcpu_quotas(
        client, ec2, instance_type="c7i.xlarge", vcpus=4, instances=8, markets=("on-demand", "spot")
    )
    assert not result.passed
    assert result.reason.startswith(f"on-demand standard ({on_demand}): 32 vCPUs needed, 28 of 36 free")
    assert "request more in Service Quotas" in result.reason and "spot" not in result.reason


def test_a_quota_the_endpoint_does_not_know_passes_with_a_note(quotas: tuple[Any, Stubber], ec2: Any) -> None:
    client, stubber = quotas
    stubber.add_client_error("get_service_quota", "NoSuchResourceException", "no such quota")
    result = check_vcpu_quotas(
        client, ec2, instance_type="g5.xlarge", vcpus=4, instances=2, markets=("spot",)
    )
    assert result.passed and f"spot quota {QUOTA_CODES['g'][1]} not reported here" in result.reason


def test_no_right_to_read_quotas_names_the_action(quotas: tuple[Any, Stubber], ec2: Any) -> None:
    client, stubber = quotas
    stubber.add_client_error(
        "get_service_quota",
        "AccessDeniedException",
        "User: arn:aws:iam::1:user/x is not authorized to perform: servicequotas:GetServiceQuota",
    )
    with pytest.raises(PermissionDenied, match="may not call servicequotas:GetServiceQuota") as raised:
        check_vcpu_quotas(client, ec2, instance_type="c7i.xlarge", vcpus=4, instances=1, markets=("spot",))
    assert raised.value.action == "servicequotas:GetServiceQuota"


def test_a_young_accounts_quota_names_the_segments_that_fit_and_the_request_to_make(
    quotas: tuple[Any, Stubber], ec2: Any
) -> None:
    """New accounts start at 5-32 standard vCPUs; the default job wants 10 x 4. The refusal says what to
    run instead, and the exact request for what was asked."""
    client, stubber = quotas
    on_demand, spot = QUOTA_CODES["standard"]
    quota(stubber, on_demand, 32)  # 8 in use: 24 free, 6 instances of 4 vCPUs
    quota(stubber, spot, 16)  # 4 instances
    result = check_vcpu_quotas(
        client, ec2, instance_type="c7i.xlarge", vcpus=4, instances=10, markets=("on-demand", "spot")
    )
    assert not result.passed
    assert "run at most 4 instances at once: MAX_INSTANCES=4 (--max-instances 4" in result.reason
    assert f"--quota-code {spot} --desired-value 40" in result.reason  # none in use, 40 needed
    assert f"--quota-code {on_demand} --desired-value 48" in result.reason  # 8 in use, 40 needed
    assert "aws service-quotas request-service-quota-increase --service-code ec2" in result.reason


def test_a_gpu_family_at_zero_says_no_segment_fits(quotas: tuple[Any, Stubber], ec2: Any) -> None:
    client, stubber = quotas
    quota(stubber, QUOTA_CODES["g"][1], 0)
    result = check_vcpu_quotas(
        client, ec2, instance_type="g5.xlarge", vcpus=4, instances=2, markets=("spot",)
    )
    assert (
        not result.passed and "no g5.xlarge fits" in result.reason and "MAX_INSTANCES=" not in result.reason
    )
    assert f"--quota-code {QUOTA_CODES['g'][1]} --desired-value 12" in result.reason  # 4 in use + 8
