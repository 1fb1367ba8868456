"""The monitor's rules: what an attempt is doing, from its heartbeat and its instance's state."""

from __future__ import annotations

import pytest

from coordinator.job.loop.monitor import judge
from inference.heartbeat import Heartbeat
from tests.coordinator.job.rows import launched_attempt

ATTEMPT = launched_attempt("seg-0000", job_id="job")


def beat(state: str, attempt: str = "job/seg-0000/1") -> Heartbeat:
    return Heartbeat("seg-0000", "i-1", "spot", attempt, 100, state=state)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("heartbeat", "instance", "watched_for", "silent_for", "expected"),
    [
        (beat("done"), "terminated", 11, 1, "done"),  # done wins even once the instance is gone
        (beat("failed"), "running", 11, 1, "failed"),
        (beat("draining"), "shutting-down", 11, 1, "draining"),
        (beat("running"), "terminated", 11, 1, "lost"),
        (beat("running"), None, 11, 1, "lost"),  # not listed at all
        (beat("running"), "running", 31, 21, "lost"),  # 21 s without a beat, timeout 20
        (beat("running"), "running", 29, 19, "running"),
        (None, "pending", 50, None, "booting"),
        (None, None, 10, None, "booting"),  # EC2's listing lags a launch by seconds
        (None, None, 31, None, "lost"),  # not listed 31 s after the launch: gone
        (None, "running", 101, None, "lost"),  # boot timeout 100 s
    ],
)
def test_monitor_rules(
    heartbeat: Heartbeat | None, instance: str | None, watched_for: float, silent_for: float, expected: str
) -> None:
    verdict, reason = judge(
        ATTEMPT,
        heartbeat,
        instance,
        watched_for=watched_for,
        silent_for=silent_for,
        heartbeat_timeout=20,
        boot_timeout=100,
    )
    assert verdict == expected, reason
    assert reason
