"""The Lambda Cloud stand-in (Lambda's published API on 127.0.0.1) and a client of it, for the burst tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from coordinator.burst.providers.lambda_cloud import LambdaCloud
from coordinator.burst.providers.request_pace import RequestPace
from coordinator.sim.lambda_standin import LambdaStandIn

API_KEY = "sk-test-" + "7f3a9c" * 6  # a recognisable value to grep for
PACE = RequestPace.scaled(0.02)


@pytest.fixture
def standin() -> Iterator[LambdaStandIn]:
    # Lambda's rate limits 100x faster, enforced by the stand-in; the client's pace keeps twice that distance
    # (a request's trip to the server varies on a busy machine; against Lambda the 429 retry covers it)
    with LambdaStandIn(
        api_key=API_KEY, boot_seconds=0.2, limits=(PACE.every / 2, PACE.launch_every / 2)
    ) as server:
        yield server


@pytest.fixture
def cloud(standin: LambdaStandIn) -> LambdaCloud:
    return LambdaCloud(
        api_key=API_KEY, base_url=standin.api_url, backoff_seconds=0.01, pace=RequestPace.scaled(0.02)
    )
