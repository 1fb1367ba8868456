"""Which AWS a command talks to, with which keys, and how many times a call is tried."""

from __future__ import annotations

import pytest

from coordinator.errors import EmulatorError
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
