"""The Lambda Cloud client and its stand-in against Lambda's published API description (transcribed in
tests/fixtures/lambda-cloud-api/contract.json): every request the client sends and every answer the
stand-in gives has the described shape, and the client reads described answers, every status included.
If either drifts from the API, this fails; not only the pair of them agreeing with each other."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import requests

from coordinator.burst.providers import lambda_cloud
from coordinator.burst.providers.lambda_cloud import LambdaCloud
from coordinator.burst.providers.request_pace import RequestPace
from coordinator.errors import NoCapacity, ProviderQuotaExceeded
from coordinator.sim.lambda_standin import LambdaStandIn
from tests.conftest import FIXTURES
from tests.coordinator.burst.conftest import API_KEY

CONTRACT = json.loads((FIXTURES / "lambda-cloud-api" / "contract.json").read_text())


def schema(name: str) -> dict[str, Any]:
    return {"$defs": CONTRACT["$defs"], "$ref": f"#/$defs/{name}"}


def operation_of(method: str, path: str) -> tuple[str, dict[str, Any]]:
    for name, op in CONTRACT["operations"].items():
        pattern = "^" + CONTRACT["base_path"] + re.sub(r"\{[^}]+\}", "[^/]+", op["path"]) + "$"
        if op["method"] == method and re.match(pattern, path):
            return name, op
    raise AssertionError(f"{method} {path} is not an operation of the API description")


class RecordingSession(requests.Session):
    """Every exchange: (method, path, request body, status, response body)."""

    def __init__(self) -> None:
        super().__init__()
        self.exchanges: list[tuple[str, str, Any, int, Any]] = []

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        response = super().request(method, url, *args, **kwargs)
        path = urlsplit(url).path
        self.exchanges.append((method, path, kwargs.get("json"), response.status_code, response.json()))
        return response


def exercise(standin: LambdaStandIn, cloud: LambdaCloud) -> None:
    """Every call the client makes, each answer the client classifies."""
    cloud.instance_types()
    launched = cloud.launch(
        instance_type="gpu_1x_a100_sxm4_80gb", region="us-east-1", ssh_key_name="k", name="spotbatch-burst-c"
    )
    cloud.instance(launched.instance_id)
    cloud.instances()
    cloud.terminate([launched.instance_id])
    cloud.instance(launched.instance_id)
    assert cloud.instance("0920582c7ff041399e34823a0be62549") is None
    standin.quota_exceeded = True
    with pytest.raises(ProviderQuotaExceeded, match="global/quota-exceeded"):
        cloud.launch(instance_type="gpu_1x_h100_sxm5", region="us-east-1", ssh_key_name="k", name="q")
    standin.quota_exceeded, standin.no_capacity = False, True
    with pytest.raises(NoCapacity):
        cloud.launch(instance_type="gpu_1x_h100_sxm5", region="us-east-1", ssh_key_name="k", name="c")


def test_every_request_and_answer_has_the_described_shape(standin: LambdaStandIn) -> None:
    session = RecordingSession()
    cloud = LambdaCloud(
        api_key=API_KEY, base_url=standin.api_url, session=session, pace=RequestPace.scaled(0.02)
    )
    standin.boot_seconds = 0.0
    exercise(standin, cloud)
    seen = set()
    for method, path, body, status, answer in session.exchanges:
        name, op = operation_of(method, path)
        seen.add(name)
        if op["request"] is None:
            assert body is None, (name, body)
        else:
            jsonschema.validate(body, schema(op["request"]))
        if status == 200:
            jsonschema.validate(answer, schema("Success"))
            jsonschema.validate(answer["data"], schema(op["data"]))
        else:
            jsonschema.validate(answer, schema("Error"))
            if name in CONTRACT["error_codes"] and status != 429:  # the rate limiter's code is not described
                assert answer["error"]["code"] in CONTRACT["error_codes"][name], (name, answer)
    assert seen == set(CONTRACT["operations"])  # every operation the client uses was exercised


def spec_instance(status: str, **extra: Any) -> dict[str, Any]:
    """An Instance as the description allows it: required fields only (no ip while it has none)."""
    available = {"available": status == "active"}
    return {
        "id": "0920582c7ff041399e34823a0be62549",
        "status": status,
        "ssh_key_names": ["k"],
        "file_system_names": [],
        "region": {"name": "us-west-1", "description": "California, USA"},
        "instance_type": {
            "name": "gpu_8x_a100",
            "description": "8x A100 (40 GB SXM4)",
            "gpu_description": "A100 (40 GB SXM4)",
            "price_cents_per_hour": 1032,
            "specs": {"vcpus": 124, "memory_gib": 1800, "storage_gib": 6144, "gpus": 8},
        },
        "actions": {k: available for k in ("migrate", "rebuild", "restart", "cold_reboot", "terminate")},
        **extra,
    }


@pytest.mark.parametrize("status", CONTRACT["$defs"]["InstanceStatus"]["enum"])
def test_the_client_reads_every_described_status(status: str) -> None:
    item = spec_instance(status)
    jsonschema.validate(item, schema("Instance"))
    read = lambda_cloud._instance(item)
    assert (read.status, read.ip, read.name, read.region) == (status, None, "", "us-west-1")
    with_address = spec_instance(status, ip="198.51.100.2", name="n")
    assert lambda_cloud._instance(with_address).ip == "198.51.100.2"


def test_the_codes_and_limits_the_client_relies_on_are_the_described_ones() -> None:
    assert lambda_cloud.NO_CAPACITY_CODE in CONTRACT["error_codes"]["launchInstance"]
    assert lambda_cloud.QUOTA_CODE in CONTRACT["error_codes"]["launchInstance"]
    assert lambda_cloud.NOT_FOUND_CODE in CONTRACT["error_codes"]["getInstance"]
    assert lambda_cloud.API_URL.endswith(CONTRACT["base_path"])
    pace = RequestPace()
    assert (pace.every, pace.launch_every) == (
        CONTRACT["rate_limits"]["every_seconds"],
        CONTRACT["rate_limits"]["launch_every_seconds"],
    )


def test_the_stand_ins_statuses_are_described_ones(standin: LambdaStandIn, cloud: LambdaCloud) -> None:
    standin.boot_seconds, standin.boot_unhealthy = 0.0, True
    box = cloud.launch(instance_type="gpu_1x_a100_sxm4_80gb", region="us-east-1", ssh_key_name="k", name="u")
    assert cloud.instance(box.instance_id).status == "unhealthy"  # type: ignore[union-attr]
    standin.boot_unhealthy, standin.preempt = False, True
    other = cloud.launch(
        instance_type="gpu_1x_a100_sxm4_80gb", region="us-east-1", ssh_key_name="k", name="p"
    )
    statuses = {cloud.instance(other.instance_id).status for _ in range(2)}  # type: ignore[union-attr]
    assert statuses <= set(CONTRACT["$defs"]["InstanceStatus"]["enum"]) and "preempted" in statuses


def test_pacing_in_advance_meets_the_limits_without_a_429(standin: LambdaStandIn, cloud: LambdaCloud) -> None:
    for name in ("a", "b", "c"):
        cloud.launch(instance_type="gpu_1x_a100_sxm4_80gb", region="us-east-1", ssh_key_name="k", name=name)
        cloud.instances()
    # the stand-in refuses a launch that comes sooner than the limit by its own clock: none was refused, so
    # the launches were spaced (how long the pace itself waited depends on how busy this host is)
    assert standin.throttled == 0 and cloud.retries == 0
    unpaced = LambdaCloud(
        api_key=API_KEY,
        base_url=standin.api_url,
        backoff_seconds=0.01,
        pace=RequestPace(every=0, launch_every=0),
    )
    for name in ("d", "e"):
        unpaced.launch(instance_type="gpu_1x_a100_sxm4_80gb", region="us-east-1", ssh_key_name="k", name=name)
    assert standin.throttled > 0 and unpaced.retries > 0  # the stand-in enforces what Lambda enforces


class FakeClock:
    """A pace's clock and sleep: sleeping moves the clock on, and each wait is kept."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.waits.append(round(seconds, 6))
        self.now += seconds

    def pace(self) -> RequestPace:
        return RequestPace(clock=lambda: self.now, sleep=self.sleep)


def test_a_fake_clock_pace_waits_exactly_the_limits() -> None:
    clock = FakeClock()
    pace = clock.pace()
    pace.before(launch=True)
    pace.before()
    pace.before(launch=True)
    assert clock.waits == [1.0, 11.0]  # 1 s after any call; 12 s after the previous launch


def test_the_limits_count_from_the_answer_a_slow_request_came_back_with() -> None:
    """The server counts from a request's arrival, which a slow send pushes later: counted from the send
    alone, the next request could arrive sooner than the limit (a 20-ms pace met 429s on a loaded host)."""
    clock = FakeClock()
    pace = clock.pace()
    pace.before(launch=True)
    clock.now = 5.0  # the launch's answer took 5 s
    pace.after(launch=True)
    pace.before(launch=True)
    assert clock.waits == [12.0]  # 12 s after the answer, not 7 s after it
