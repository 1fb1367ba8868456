"""Which of the job's instances a cycle asks EC2 about, and what EC2 last said of each.

Without the stack's events queue, every cycle lists the whole job: the listing is the only quick way to
see an instance gone. So does a job of at most `SMALL_JOB` watched attempts: one call a cycle, and the
fastest way to see a killed instance (its state-change event takes a moment longer to arrive). With the
queue, EC2 itself says when one of the job's instances stops or ends
(state-change events) or is about to be reclaimed (warnings), and a fresh heartbeat is proof that an
instance runs (as a node's lease is for Kubernetes). A cycle then describes only the instances that have
no such proof:

- attempts without a heartbeat yet (booting: did the instance die before its worker started?);
- attempts whose heartbeat has not changed for `quiet_seconds` (a steady worker beats more often than that:
  a silent one may be gone, and EC2's word tells a reclaim from a hung worker);
- instances it has never seen;

- the instances an event named since the last look (`look_again(instance_id)`);

and lists the whole job at the first look and every `FULL_LOOK_SECONDS` (the safety net for an event lost
on its way). An instance neither described nor listed this cycle keeps what EC2 said last. At 1,000
steady instances a cycle describes a few instead of ten pages of 100 (`bench/scale`): each listing of the
whole job parses about 2.6 ms of XML per instance, so a big job under interruptions, whose events come
every few cycles, describes the instances they name and not the whole job after each.

Usage::

    watch = InstanceWatch(fleet, job_id, full_look_seconds=FULL_LOOK_SECONDS, quiet_seconds=45, small_job=100)
    watch.look_again("i-0abc")                          # an event named this instance
    instances = watch.look(attempts, heard_at, now)  # {instance id: InstanceInfo}; times on one clock
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from coordinator.job.aws import InstanceInfo

# A lost state-change event leaves a gone instance unseen until its heartbeat goes quiet (`quiet_seconds`,
# then it is described), or this long at most for an instance no heartbeat vouches for: five minutes are 60
# cycles of 5 s, so at 1,000 instances the listing's 2.6 s of parsing is 43 ms a cycle, not 217 at one minute
FULL_LOOK_SECONDS = 300.0
# a job this small is listed whole every cycle: one DescribeInstances page (moto's, and well under AWS's)
SMALL_JOB = 100


class Watched(Protocol):
    """An attempt as the monitor has it (`core.tables.AttemptRow`; one without an instance is passed over)."""

    @property
    def attempt_id(self) -> str: ...

    @property
    def instance_id(self) -> str | None: ...


class Describes(Protocol):
    """The two lookups of the fleet this needs."""

    def job_instances(self, job_id: str) -> dict[str, InstanceInfo]: ...

    def instances(self, instance_ids: list[str]) -> dict[str, InstanceInfo]: ...


class InstanceWatch:
    def __init__(
        self,
        fleet: Describes,
        job_id: str,
        *,
        full_look_seconds: float | None,
        quiet_seconds: float,
        small_job: int = SMALL_JOB,
    ) -> None:
        """`full_look_seconds` None: no events queue, the whole job is listed every cycle."""
        self.fleet = fleet
        self.job_id = job_id
        self.full_look_seconds = full_look_seconds
        self.quiet_seconds = quiet_seconds
        self.small_job = small_job
        self.known: dict[str, InstanceInfo] = {}
        self._last_full: float | None = None  # when the whole job was last listed (`now` of `look`)
        self._again = True
        self._named: set[str] = set()  # instances an event named since the last look

    def look_again(self, instance_id: str | None = None) -> None:
        """Describe this instance at the next look (an event named it); None: list the whole job."""
        if instance_id is None:
            self._again = True
        else:
            self._named.add(instance_id)

    def look(
        self, attempts: Iterable[Watched], heard_at: Mapping[str, float], now: float
    ) -> dict[str, InstanceInfo]:
        """EC2's word on the instances of `attempts`; `heard_at` is when each attempt's heartbeat last
        changed (absent: none yet), on the clock `now` is read on (the monitor's monotonic one)."""
        attempts = list(attempts)
        named, self._named = self._named, set()
        if len(attempts) <= self.small_job or self._full_look_due(now):
            self.known = self.fleet.job_instances(self.job_id)
            self._last_full, self._again = now, False
            return self.known
        unproven = sorted(
            named
            | {
                a.instance_id
                for a in attempts
                if a.instance_id is not None
                and (
                    a.instance_id not in self.known
                    or now - heard_at.get(a.attempt_id, float("-inf")) > self.quiet_seconds
                )
            }
        )
        if unproven:
            described = self.fleet.instances(unproven)
            for instance_id in unproven:
                if instance_id in described:
                    self.known[instance_id] = described[instance_id]
                else:
                    self.known.pop(instance_id, None)  # not listed: as gone as terminated
        return self.known

    def _full_look_due(self, now: float) -> bool:
        if self.full_look_seconds is None or self._again or self._last_full is None:
            return True
        return now - self._last_full >= self.full_look_seconds
