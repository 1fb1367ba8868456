"""The simulator's `awslogs` driver keeps what it could not send: a call that fails (the emulator slow beside
a busy host) leaves its lines for the next round, and the container's last lines are tried again when it
ends (a loaded CI host lost two attempts' streams whole when a failed round dropped them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coordinator.sim.awslogs import LogShipper


class FlakyLogs:
    """CloudWatch Logs failing its first `failures` calls, then keeping every event it is sent."""

    def __init__(self, failures: int) -> None:
        self.failures, self.streams, self.events = failures, list[str](), list[str]()

    def _maybe_fail(self) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise ConnectionError("the emulator did not answer in time")

    def create_log_stream(self, **request: Any) -> None:
        self._maybe_fail()
        self.streams.append(request["logStreamName"])

    def put_log_events(self, **request: Any) -> None:
        self._maybe_fail()
        self.events += [event["message"] for event in request["logEvents"]]


def shipper(logs: FlakyLogs, path: Path) -> LogShipper:
    return LogShipper(logs, group="g", stream="job/seg-0000/i-1", path=path, every=0.01)


def test_lines_a_failed_round_could_not_send_go_with_the_next(tmp_path: Path) -> None:
    path = tmp_path / "container.log"
    path.write_text("booted\nfirst batch\n")
    logs = FlakyLogs(failures=1)
    ship = shipper(logs, path)
    assert ship.ship() is False and logs.events == []  # the stream could not be made: nothing sent
    with open(path, "a", encoding="utf-8") as log:
        log.write("second batch\nhalf a li")
    assert ship.ship() is True
    assert logs.streams == ["job/seg-0000/i-1"] and logs.events == ["booted", "first batch", "second batch"]


def test_the_last_lines_are_tried_again_when_the_container_ends(tmp_path: Path) -> None:
    path = tmp_path / "container.log"
    path.write_text("done: 300 rows\n")
    logs = FlakyLogs(failures=3)
    shipper(logs, path).close()  # never started: its one round is the container's end
    assert logs.events == ["done: 300 rows"]
