"""The last lines of an attempt that did not finish, from the stack's CloudWatch Logs group.

Each attempt logs to two streams: the worker's `<job>/<segment>/<instance id>` (the boot script's awslogs
options) and the boot script's own `<job>/<segment>/<instance id>/boot`, shipped when the script ends (what
went wrong before the worker ran: the package install, the registry, the pull). When an attempt ends failed,
lost, crashed or terminated, the coordinator's log gets the worker's last lines, then the boot script's, so
that the reason a machine died is in front of whoever reads the run, not only in the console;
`reasons[segment]` keeps the last line that says it.

Usage::

    tail = WorkerLogTail(logs_client, "/spotbatch/spotbatch/workers", job_id="job-1")
    controller.on_attempt_end(tail.attempt_ended)    # called with (attempt, end_reason)
"""

from __future__ import annotations

import logging
from typing import Any

from coordinator.job.core import AttemptRow

LINES = 8
QUIET_ENDS = frozenset({"done", "interrupted", "switched"})  # the worker did what it should
log = logging.getLogger("coordinator.job.aws.worker_logs")


def stream_of(job_id: str, attempt: AttemptRow) -> str:
    return f"{job_id}/{attempt.segment_id}/{attempt.instance_id}"


class WorkerLogTail:
    def __init__(self, logs: Any, group: str, *, job_id: str, lines: int = LINES) -> None:
        self.logs, self.group, self.job_id, self.lines = logs, group, job_id, lines
        self.reasons: dict[str, str] = {}  # segment -> the last line of its last attempt that ended badly

    def last_lines(self, stream: str) -> list[str]:
        """The stream's last lines (none if it was never written, or the logs cannot be read)."""
        try:
            events = self.logs.get_log_events(
                logGroupName=self.group, logStreamName=stream, limit=self.lines, startFromHead=False
            )["events"]
        except Exception as error:  # no stream yet, no permission: the end is logged without the lines
            log.debug("log %s not read: %s", stream, error)
            return []
        return [str(event["message"]).rstrip() for event in events]

    def attempt_ended(self, attempt: AttemptRow, end_reason: str) -> None:
        if end_reason in QUIET_ENDS:
            return
        worker = stream_of(self.job_id, attempt)
        found = [(stream, self.last_lines(stream)) for stream in (worker, f"{worker}/boot")]
        told = [(stream, lines) for stream, lines in found if lines]
        if not told:
            log.warning(
                "%s ended %s; its logs (%s %s, and /boot) have no lines",
                attempt.attempt_id,
                end_reason,
                self.group,
                worker,
            )
            return
        for stream, lines in told:
            what = "boot script" if stream.endswith("/boot") else "worker"
            log.warning(
                "%s ended %s; the last lines of its %s's log (%s %s):\n  %s",
                attempt.attempt_id,
                end_reason,
                what,
                self.group,
                stream,
                "\n  ".join(lines),
            )
        self.reasons[attempt.segment_id] = next(line for line in reversed(told[0][1]) if line.strip())
