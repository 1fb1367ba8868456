"""Which AWS a command talks to, with which keys, and how many times a call is tried."""

from __future__ import annotations

import pytest

from coordinator.errors import ConfigError, EmulatorError
from coordinator.stack.target import EMULATOR_CREDENTIALS, AwsTarget


def test_an_attempt_count_is_every_call_the_first_included() -> None:
    """`max_attempts=1` is one call and no retry (the fleet retries EC2 calls itself, and counts them)."""
    target = AwsTarget.emulator("http://127.0.0.1:1")
    assert target.client("ec2", max_attempts=1).meta.config.retries["total_max_attempts"] == 1
    assert target.client("s3").meta.config.retries == {"mode": "adaptive", "total_max_attempts": 8}


def test_an_endpoint_gets_the_emulator_keys_never_the_aws_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAREAL")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "real-secret")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.delenv("SPOTBATCH_EMULATOR_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("SPOTBATCH_EMULATOR_SECRET_ACCESS_KEY", raising=False)
    fake = AwsTarget.chosen(None, "http://127.0.0.1:5000")
    assert fake.credentials == (
        EMULATOR_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        EMULATOR_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )
    assert fake.region == "eu-west-1" and fake.is_emulator
    assert "AKIAREAL" not in fake.process_env().values()  # a child process gets no real key either
    monkeypatch.setenv("SPOTBATCH_EMULATOR_ACCESS_KEY_ID", "AKIAMOTOUSER")
    monkeypatch.setenv("SPOTBATCH_EMULATOR_SECRET_ACCESS_KEY", "moto-secret")
    assert AwsTarget.chosen("us-east-1", "http://127.0.0.1:5000").credentials == (
        "AKIAMOTOUSER",
        "moto-secret",
    )
    real = AwsTarget.chosen("us-west-2", None)
    assert (real.region, real.endpoint) == ("us-west-2", None)
    with pytest.raises(EmulatorError, match="refusing emulator endpoint"):
        AwsTarget.chosen(None, "https://ec2.us-east-1.amazonaws.com")


@pytest.mark.parametrize(
    "endpoint",
    [
        "http://192.0.2.10\\@127.0.0.1:5000",  # urllib.parse says 127.0.0.1; urllib3 (botocore) 192.0.2.10
        "http://192.0.2.10#@127.0.0.1:5000",
        "http://user:pw@127.0.0.1:5000",
        "http://127.0.0.1.nip.io:5000",
        "http://127.0.0.1:5000/path",
        "http://127.0.0.1:5000?x=1",
        "http://127.0.0.1",  # no port: a plain scheme://host:port only
        "ftp://127.0.0.1:21",
        " http://127.0.0.1:5000",
        "http://[::ffff:192.0.2.10]:5000",
        "http://0x7f000001.example:5000",
    ],
)
def test_an_endpoint_that_could_reach_another_host_is_refused(endpoint: str) -> None:
    with pytest.raises(EmulatorError, match="refusing emulator endpoint"):
        AwsTarget.chosen("us-east-1", endpoint)


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:5000", "http://localhost:4566", "http://[::1]:5000"])
def test_an_accepted_endpoint_is_the_loopback_host_botocore_connects_to(endpoint: str) -> None:
    from urllib3.util import parse_url

    client = AwsTarget.chosen("us-east-1", endpoint).client("s3")
    host = (parse_url(client.meta.endpoint_url).host or "").strip("[]")
    assert host in ("127.0.0.1", "localhost", "::1")


@pytest.mark.parametrize(
    "variable", ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_STS"]
)
def test_credentials_are_never_sent_in_clear_to_another_host(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """botocore follows $AWS_ENDPOINT_URL (and the per-service ones) with the real keys and session token:
    plain HTTP to a host that is not this machine is refused before any client is made."""
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv(variable, "http://aws.example.internal:4566")
    with pytest.raises(ConfigError, match=rf"\${variable}=http://aws.example.internal:4566: plain HTTP"):
        AwsTarget.real()


def test_an_https_or_loopback_endpoint_is_honoured_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    assert AwsTarget.real().describe == "AWS us-east-1"
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://gateway.example.com")
    assert AwsTarget.real().describe == "endpoint https://gateway.example.com (us-east-1)"  # not "AWS"
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")
    assert AwsTarget.real().describe == "endpoint http://127.0.0.1:5000 (us-east-1)"
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://user:secret@gateway.example.com")
    with pytest.raises(ConfigError, match="user information"):
        AwsTarget.real()
