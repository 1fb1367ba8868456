"""Billing rules as code: EC2's per second with a 60-s minimum, per minute, per hour."""

from __future__ import annotations

import pytest

from coordinator.cost.billing import EC2_LINUX, PER_HOUR, PER_MINUTE, billed_seconds


@pytest.mark.parametrize(
    ("rule", "start", "end", "seconds"),
    [
        (EC2_LINUX, 0.0, 12.0, 60),  # the 60-second minimum
        (EC2_LINUX, 0.0, 60.0, 60),
        (EC2_LINUX, 0.0, 61.2, 62),  # per second, rounded up
        (EC2_LINUX, 100.0, 161.0000001, 61),  # float noise is not a second
        (EC2_LINUX, 0.0, 3_600.0, 3_600),
        (PER_MINUTE, 0.0, 61.0, 120),
        (PER_HOUR, 0.0, 1.0, 3_600),
        (PER_HOUR, 0.0, 3_601.0, 7_200),
    ],
)
def test_billing_rules(rule: object, start: float, end: float, seconds: int) -> None:
    assert billed_seconds(rule, start, end) == seconds  # type: ignore[arg-type]


def test_billing_refuses_time_travel() -> None:
    with pytest.raises(ValueError, match="ended"):
        billed_seconds(EC2_LINUX, 10.0, 5.0)
