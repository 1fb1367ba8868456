"""Simulator only: Docker's `awslogs` log driver: a container's output shipped to CloudWatch Logs.

On EC2 the Docker daemon does this with the instance role's credentials; here the instance runtime does it
with the same role's credentials, so a worker role without `logs:CreateLogStream`/`PutLogEvents` on the
group loses its logs here as it would there. The stream (`awslogs-stream`) is created on the first lines;
lines are sent every `every` seconds and once more when the container ends. A call that fails (the
emulator slow beside a busy host, a credential fetch that timed out) keeps its lines for the next round, as
Docker's driver buffers them; the last round is tried `FINAL_TRIES` times (a loaded CI host lost two
attempts' streams whole when a failed first round dropped its lines).

Usage::

    shipper = LogShipper(logs_client, group="/spotbatch/x/workers", stream="job/seg/i-1", path=log_file)
    shipper.start(); ...; shipper.close()
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from coordinator.sim.machine import RoleSession

SHIP_EVERY_SECONDS = 2.0
FINAL_TRIES = 5  # the container has ended: its last lines are tried this many times, `every` apart
MAX_BATCH_EVENTS = 5_000  # under PutLogEvents' 10,000 events and 1 MiB per call for a worker's lines
log = logging.getLogger(__name__)


class LogShipper(threading.Thread):
    def __init__(
        self, client: Any, *, group: str, stream: str, path: Path, every: float = SHIP_EVERY_SECONDS
    ) -> None:
        super().__init__(name=f"awslogs {stream}", daemon=True)
        self.client, self.group, self.stream, self.path, self.every = client, group, stream, path, every
        self._offset = 0
        self._pending: list[str] = []  # lines read, not shipped yet
        self._created = False
        self._closed = threading.Event()
        self.shipped = 0
        self.errors: list[str] = []

    def _new_lines(self) -> list[str]:
        if not self.path.is_file():
            return []
        with open(self.path, "rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        complete = data[: data.rfind(b"\n") + 1]  # a line still being written waits for the next round
        self._offset += len(complete)
        return complete.decode("utf-8", errors="replace").splitlines()

    def ship(self) -> bool:
        """Send what is new (and what a failed round kept); False if a call failed (the lines are kept)."""
        self._pending += self._new_lines()
        lines = self._pending
        if not lines:
            return True
        try:
            if not self._created:
                try:
                    self.client.create_log_stream(logGroupName=self.group, logStreamName=self.stream)
                except ClientError as error:
                    if error.response["Error"]["Code"] != "ResourceAlreadyExistsException":
                        raise
                self._created = True
            now = int(time.time() * 1000)
            for first in range(0, len(lines), MAX_BATCH_EVENTS):
                batch = lines[first : first + MAX_BATCH_EVENTS]
                events = [{"timestamp": now, "message": line or " "} for line in batch]
                self.client.put_log_events(
                    logGroupName=self.group, logStreamName=self.stream, logEvents=events
                )
                self.shipped += len(batch)
                self._pending = lines[first + len(batch) :]
        except Exception as error:  # kept for the next round; said in the daemon's (the shim's) log
            self.errors.append(f"{type(error).__name__}: {error}")
            log.warning("awslogs %s: %s", self.stream, error)
            return False
        return True

    def run(self) -> None:
        while not self._closed.wait(self.every):
            self.ship()

    def close(self) -> None:
        self._closed.set()
        if self.is_alive():
            self.join()
        for attempt in range(FINAL_TRIES):
            if self.ship():
                return
            if attempt + 1 < FINAL_TRIES:
                time.sleep(self.every)


def shipper_for(request: dict[str, Any], role: RoleSession | None, path: Path) -> LogShipper | None:
    """The `awslogs` driver of a `docker run` request, shipping with the instance role; None without."""
    if request.get("log_driver") != "awslogs" or role is None:
        return None
    options = request.get("log_opts", {})
    return LogShipper(
        role.client("logs", options.get("awslogs-region")),
        group=str(options["awslogs-group"]),
        stream=str(options["awslogs-stream"]),
        path=path,
    )
