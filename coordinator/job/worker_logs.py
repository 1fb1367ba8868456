"""The last lines a worker wrote, from the stack's CloudWatch Logs group, for an attempt that did not finish.

Each attempt logs to the stream `<job>/<segment>/<instance id>` (the boot script's awslogs options). When
an attempt ends failed, lost or terminated, the coordinator's log gets the stream's last lines, so that the
reason a worker died is in front of whoever reads the run, not only in the console.

Usage::

    tail = WorkerLogTail(logs_client, "/spotbatch/spotbatch/workers", job_id="job-1")
    controller.book.after_end.append(tail.attempt_ended)    # called with (attempt, end_reason)
"""

from __future__ import annotations

import logging
from typing import Any

from coordinator.job.monitor import ActiveAttempt

LINES = 8
QUIET_ENDS = frozenset({"done", "interrupted", "switched"})  # the worker did what it should
log = logging.getLogger("coordinator.job.worker_logs")


def stream_of(job_id: str, attempt: ActiveAttempt) -> str:
    return f"{job_id}/{attempt.segment_id}/{attempt.instance_id}"


class WorkerLogTail:
    def __init__(self, logs: Any, group: str, *, job_id: str, lines: int = LINES) -> None:
        self.logs, self.group, self.job_id, self.lines = logs, group, job_id, lines

    def last_lines(self, attempt: ActiveAttempt) -> list[str]:
        """The stream's last lines (none if the worker never started, or the logs cannot be read)."""
        try:
            events = self.logs.get_log_events(
                logGroupName=self.group,
                logStreamName=stream_of(self.job_id, attempt),
                limit=self.lines,
                startFromHead=False,
            )["events"]
        except Exception as error:  # no stream yet, no permission: the end is logged without the lines
            log.debug("log of %s not read: %s", attempt.attempt_id, error)
            return []
        return [str(event["message"]).rstrip() for event in events]

    def attempt_ended(self, attempt: ActiveAttempt, end_reason: str) -> None:
        if end_reason in QUIET_ENDS:
            return
        lines = self.last_lines(attempt)
        where = f"{self.group} {stream_of(self.job_id, attempt)}"
        if lines:
            log.warning(
                "%s ended %s; the last lines of its log (%s):\n  %s",
                attempt.attempt_id,
                end_reason,
                where,
                "\n  ".join(lines),
            )
        else:
            log.warning("%s ended %s; its log (%s) has no lines", attempt.attempt_id, end_reason, where)
