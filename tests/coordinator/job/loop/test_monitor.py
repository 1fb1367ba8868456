"""The monitor's rules: what an attempt is doing, from its heartbeat and its instance's state."""

from __future__ import annotations

import pytest

from coordinator.job.loop.monitor import judge
from inference.heartbeat import Heartbeat
from tests.coordinator.job.rows import launched_attempt

ATTEMPT = launched_attempt("seg-0000", job_id="job")
LAUNCHED = 1_000.0  # wall


def beat(state: str, ts: float, attempt: str = "job/seg-0000/1") -> Heartbeat:
    return Heartbeat("seg-0000", "i-1", "spot", attempt, 100, state=state, ts=ts)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("heartbeat", "instance", "now", "expected"),
    [
        (beat("done", 1_010), "terminated", 1_011, "done"),  # done wins even once the instance is gone
        (beat("failed", 1_010), "running", 1_011, "failed"),
        (beat("draining", 1_010), "shutting-down", 1_011, "draining"),
        (beat("running", 1_010), "terminated", 1_011, "lost"),
        (beat("running", 1_010), None, 1_011, "lost"),  # not listed at all
        (beat("running", 1_010), "running", 1_031, "lost"),  # 21 s without a beat, timeout 20
        (beat("running", 1_010), "running", 1_029, "running"),
        (None, "pending", 1_050, "booting"),
        (None, None, 1_010, "booting"),  # EC2's listing lags a launch by seconds
        (None, None, 1_031, "lost"),  # not listed 31 s after the launch: gone
        (None, "running", 1_101, "lost"),  # boot timeout 100 s
    ],
)
def test_monitor_rules(heartbeat: Heartbeat | None, instance: str | None, now: float, expected: str) -> None:
    verdict, reason = judge(
        ATTEMPT, heartbeat, instance, launched_wall=LAUNCHED, now=now, heartbeat_timeout=20, boot_timeout=100
    )
    assert verdict == expected, reason
    assert reason
