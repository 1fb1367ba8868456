"""The Lambda Cloud client's real HTTP code against the stand-in of Lambda's published API."""

from __future__ import annotations

import time

import pytest

from coordinator.burst.providers.lambda_cloud import LambdaCloud
from coordinator.errors import (
    ConfigError,
    LaunchUnconfirmed,
    NoCapacity,
    ProviderError,
    RateLimited,
)
from coordinator.sim.lambda_standin import LambdaStandIn
from tests.coordinator.burst.conftest import API_KEY


def test_client_lists_launches_reads_and_terminates(standin: LambdaStandIn, cloud: LambdaCloud) -> None:
    offer = cloud.instance_types()["gpu_2x_a100_sxm4_80gb"]
    assert (offer.gpus, offer.usd_per_hour, offer.usd_per_gpu_hour) == (2, 3.58, 1.79)
    assert "us-east-1" in offer.regions_with_capacity
    launched = cloud.launch(
        instance_type="gpu_1x_a100_sxm4_80gb", region="us-east-1", ssh_key_name="k", name="spotbatch-burst-a"
    )
    assert launched.requested_at.endswith("Z") and len(launched.requested_at) == 20
    assert cloud.instance(launched.instance_id).status == "booting"  # type: ignore[union-attr]
    time.sleep(0.25)
    active = cloud.instance(launched.instance_id)
    assert active is not None and (active.status, active.ip, active.name) == (
        "active",
        "127.0.0.1",
        "spotbatch-burst-a",
    )
    assert [i.id for i in cloud.instances()] == [launched.instance_id]
    cloud.terminate([launched.instance_id])
    assert cloud.instance(launched.instance_id).status == "terminated"  # type: ignore[union-attr]
    assert cloud.instances() == [] and cloud.instance("standin-nope") is None
    assert "Bearer" not in repr(cloud) and API_KEY not in repr(cloud)


def test_client_errors_name_the_call_and_the_code(standin: LambdaStandIn, cloud: LambdaCloud) -> None:
    wrong = LambdaCloud(api_key="sk-wrong", base_url=standin.api_url)
    with pytest.raises(
        ProviderError, match=r"lambda GET /instances: HTTP 401 global/invalid-api-key"
    ) as error:
        wrong.instances()
    assert "sk-wrong" not in str(error.value)
    standin.no_capacity = True
    with pytest.raises(NoCapacity, match="insufficient-capacity"):
        cloud.launch(instance_type="gpu_1x_h100_sxm5", region="us-east-1", ssh_key_name="k", name="x")
    with pytest.raises(ProviderError, match="no Lambda Cloud API key: set LAMBDA_API_KEY"):
        LambdaCloud(api_key="", base_url=standin.api_url)


def test_429s_are_retried_then_reported(standin: LambdaStandIn, cloud: LambdaCloud) -> None:
    standin.rate_limit_next = 3
    assert cloud.instances() == [] and cloud.retries == 3
    standin.rate_limit_next = 10
    with pytest.raises(RateLimited, match="HTTP 429 after 6 tries"):
        cloud.instances()


def test_a_launch_that_errors_after_creating_is_unconfirmed(
    standin: LambdaStandIn, cloud: LambdaCloud
) -> None:
    standin.launch_error_after_create = 1
    with pytest.raises(LaunchUnconfirmed, match=r"HTTP 500 .*the instance may exist"):
        cloud.launch(
            instance_type="gpu_1x_a100_sxm4_80gb",
            region="us-east-1",
            ssh_key_name="k",
            name="spotbatch-burst-b",
        )
    assert [i.name for i in cloud.instances()] == ["spotbatch-burst-b"]  # it exists: found by name


@pytest.mark.parametrize(
    "url", ["http://lambda.example.com/api/v1", "http://10.0.0.5:8080/api/v1", "ftp://x/api"]
)
def test_the_api_key_goes_only_over_https_or_to_this_machine(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key is a bearer token that can launch, list and terminate GPU machines: never in clear text to
    another host, whether the URL comes from $LAMBDA_API_URL or the constructor."""
    monkeypatch.setenv("LAMBDA_API_URL", url)
    with pytest.raises(ConfigError, match="LAMBDA_API_URL"):
        LambdaCloud(api_key="secret-key")
    monkeypatch.delenv("LAMBDA_API_URL")
    with pytest.raises(ConfigError):
        LambdaCloud(api_key="secret-key", base_url=url)


def test_https_and_the_local_stand_in_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAMBDA_API_URL", raising=False)
    assert LambdaCloud(api_key="k").base_url == "https://cloud.lambda.ai/api/v1"
    assert (
        LambdaCloud(api_key="k", base_url="http://127.0.0.1:9/api/v1").base_url == "http://127.0.0.1:9/api/v1"
    )
