"""The monitor: what each running attempt is doing, from its heartbeat and its instance's state.

One cycle lists the job's heartbeat objects once and fetches only the heartbeats that changed since the last
cycle (`heartbeats.py`), then asks EC2 about the instances (all of the job's, or with an events queue only
those without a fresh heartbeat: `instance_watch.py`). A segment's attempt is judged by the first rule that
matches:

1. heartbeat `done` -> done; `failed` -> failed (the worker says why); `draining` -> draining
   (it saw a notice or SIGTERM, wrote its checkpoint and is stopping);
2. the instance is gone (terminated, shutting down, or not listed `LISTING_LAG_SECONDS` after its launch)
   -> lost, with EC2's reason
   (`StateReason`): the controller tells a spot reclaim from a crashed worker by it (`lost_end_reason`);
3. heartbeat older than `heartbeat_timeout` -> lost;
4. no heartbeat of this attempt yet: lost once `boot_timeout` has passed since the launch, else booting;
5. otherwise running.

Only heartbeats of the attempt the coordinator launched count: the object may still hold an older
attempt's last words. A heartbeat is untrusted input (any worker of the job may write it): one that does not
parse is no beat (`heartbeats.parse_heartbeat`), and a `done` beat counts only when the segment's checkpoint
proves it (done by this attempt, every row of the segment's range, every part it lists present);
otherwise it is ignored, and the attempt goes stale as a silent one would. Times are wall-clock seconds
(heartbeat timestamps are the worker's clock; an attempt's launch is read back from its cloud time).

Usage::

    monitor = Monitor(store, fleet, job_id, clock=clock, heartbeat_timeout=20, boot_timeout=600)
    for view in monitor.observe(attempts, now=time.time()):      # the state file's rows of open attempts
        view.verdict, view.reason, view.heartbeat
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from coordinator.job.aws import GONE_STATES, Fleet
from coordinator.job.core import AttemptRow, CloudClock
from coordinator.job.loop.heartbeats import HeartbeatReader
from coordinator.job.loop.instance_watch import InstanceWatch
from inference.checkpoint import Checkpoint, load_checkpoint
from inference.errors import CheckpointError
from inference.heartbeat import Heartbeat
from inference.layout import parts_prefix
from inference.storage import ObjectStore

# EC2's listings are eventually consistent: an instance RunInstances just returned may be missing from a
# DescribeInstances for a few seconds; missing this long after its launch, it is gone
LISTING_LAG_SECONDS = 30.0
log = logging.getLogger("coordinator.monitor")
Verdict = Literal["booting", "running", "draining", "done", "failed", "lost"]


@dataclass(frozen=True, slots=True)
class AttemptView:
    """What the monitor saw of one open attempt this cycle."""

    attempt: AttemptRow
    verdict: Verdict
    reason: str
    instance_state: str | None  # None: EC2 does not list it
    heartbeat: Heartbeat | None  # the latest heartbeat of this attempt seen so far
    state_reason: str = ""  # EC2's StateReason code of a gone instance


def judge(
    attempt: AttemptRow,
    heartbeat: Heartbeat | None,
    instance_state: str | None,
    *,
    launched_wall: float,
    now: float,
    heartbeat_timeout: float,
    boot_timeout: float,
    state_reason: str = "",
) -> tuple[Verdict, str]:
    """The rules of the module docstring, as one pure function (`launched_wall`: the attempt's launch as a
    wall-clock time)."""
    if heartbeat is not None and heartbeat.state == "done":
        return "done", f"heartbeat done ({heartbeat.rows_done}/{heartbeat.rows_total} rows)"
    if heartbeat is not None and heartbeat.state == "failed":
        return "failed", f"worker failed: {heartbeat.message}"
    if heartbeat is not None and heartbeat.state == "draining":
        return "draining", f"heartbeat draining ({heartbeat.message or 'stop requested'})"
    if instance_state is None and heartbeat is None and now - launched_wall < LISTING_LAG_SECONDS:
        return (
            "booting",
            f"{attempt.instance_id} not listed by EC2 yet (launched {now - launched_wall:.1f} s ago)",
        )
    if instance_state is None or instance_state in GONE_STATES:
        why = f" ({state_reason})" if state_reason else ""
        return "lost", f"instance {attempt.instance_id} is {instance_state or 'not listed'}{why}"
    if heartbeat is not None:
        age = now - heartbeat.ts
        if age > heartbeat_timeout:
            return "lost", f"no heartbeat for {age:.1f} s (timeout {heartbeat_timeout:g} s)"
        return "running", "heartbeat fresh"
    waited = now - launched_wall
    if waited > boot_timeout:
        return "lost", f"no heartbeat {waited:.1f} s after launch (boot timeout {boot_timeout:g} s)"
    return "booting", f"waiting for the first heartbeat ({waited:.1f} s)"


class Monitor:
    def __init__(
        self,
        store: ObjectStore,
        fleet: Fleet,
        job_id: str,
        *,
        clock: CloudClock,
        heartbeat_timeout: float,
        boot_timeout: float,
        full_look_seconds: float | None = None,
        segment_range: Callable[[str], tuple[int, int]] | None = None,
    ) -> None:
        """`full_look_seconds`: with an events queue, how often the whole job is listed (`instance_watch.py`);
        None lists it every cycle. `segment_range`: a segment's rows (start, stop), that a `done` beat's
        checkpoint must cover (None: the checkpoint's own)."""
        self.segment_range = segment_range
        self.store = store
        self.clock = clock
        self.heartbeats = HeartbeatReader(store)
        self.fleet = fleet
        self.job_id = job_id
        self.instances = InstanceWatch(
            fleet, job_id, full_look_seconds=full_look_seconds, quiet_seconds=heartbeat_timeout / 2
        )
        self.heartbeat_timeout = heartbeat_timeout
        self.boot_timeout = boot_timeout
        self._latest: dict[str, Heartbeat] = {}  # attempt id -> its newest heartbeat seen

    def latest_heartbeat(self, attempt_id: str) -> Heartbeat | None:
        return self._latest.get(attempt_id)

    def forget(self, attempt_id: str) -> None:
        self._latest.pop(attempt_id, None)

    def observe(self, open_attempts: Iterable[AttemptRow], *, now: float) -> list[AttemptView]:
        """A view of each launched attempt (one without an instance yet is not watched)."""
        attempts = [a for a in open_attempts if a.instance_id is not None and a.launched_at is not None]
        if not attempts:
            return []
        beats = self.heartbeats.changed(a.segment_id for a in attempts)
        for attempt in attempts:
            beat = beats.get(attempt.segment_id)
            if beat is not None and beat.attempt == attempt.attempt_id:
                seen = self._latest.get(attempt.attempt_id)
                if (seen is None or beat.ts >= seen.ts) and (beat.state != "done" or self._done_proven(beat)):
                    self._latest[attempt.attempt_id] = beat
        heartbeat_ts = {a: beat.ts for a, beat in self._latest.items()}
        instances = self.instances.look(attempts, heartbeat_ts, now)
        views = []
        for attempt in attempts:
            heartbeat = self._latest.get(attempt.attempt_id)
            info = instances.get(attempt.instance_id or "")
            state, state_reason = (info.state, info.state_reason) if info else (None, "")
            assert attempt.launched_at is not None  # watched because it was launched
            verdict, reason = judge(
                attempt,
                heartbeat,
                state,
                launched_wall=self.clock.wall_at(attempt.launched_at),
                now=now,
                heartbeat_timeout=self.heartbeat_timeout,
                boot_timeout=self.boot_timeout,
                state_reason=state_reason,
            )
            views.append(AttemptView(attempt, verdict, reason, state, heartbeat, state_reason))
        return views

    def _done_proven(self, beat: Heartbeat) -> bool:
        segment = beat.segment_id
        expected = self.segment_range(segment) if self.segment_range else None
        try:
            why = unproven_done(load_checkpoint(self.store, segment), beat, expected, self.store)
        except CheckpointError as error:
            why = str(error)
        if why:
            log.warning("heartbeat of %s says done, but %s: ignored", segment, why)
        return not why


def unproven_done(
    checkpoint: Checkpoint | None, beat: Heartbeat, expected: tuple[int, int] | None, store: ObjectStore
) -> str:
    """Why the checkpoint does not prove the `done` beat ("" when it does)."""
    if checkpoint is None or not checkpoint.done:
        return "its checkpoint is not done"
    if checkpoint.attempt != beat.attempt:
        return f"its checkpoint was written by {checkpoint.attempt!r:.60}"
    rows = (checkpoint.start, checkpoint.stop)
    if expected is not None and rows != expected:
        return (
            f"its checkpoint covers rows {rows[0]}-{rows[1]}, not the segment's {expected[0]}-{expected[1]}"
        )
    if checkpoint.rows_done != checkpoint.stop - checkpoint.start:
        return f"its checkpoint holds {checkpoint.rows_done} of {checkpoint.stop - checkpoint.start} rows"
    present = set(store.list(parts_prefix(beat.segment_id)))
    missing = [part for part in checkpoint.parts if part not in present]
    return f"{len(missing)} part(s) its checkpoint lists are missing ({missing[0]:.80})" if missing else ""


# -- why a lost attempt ended ----------------------------------------------------------------------------
# Why an attempt whose instance is gone ended, from EC2's `StateReason` (the monitor's `lost` verdict).
#
# - `Server.SpotInstanceTermination` -> "interrupted": spot took the instance back (its drain was not
#   seen: a hard reclaim, or the coordinator was away);
# - `Client.InstanceInitiatedShutdown` -> "crashed": the machine powered itself off without its worker's
#   last word, so the worker died (the boot script powers off however it ends);
# - anything else, or an instance still running -> "lost": terminated by someone else, an EC2 failure, or
#   a stale heartbeat on a live instance.
#
# An interrupted or lost spot attempt counts towards the policy's spot retries; a crashed one does not (it
# is no reason to leave spot), and a segment whose worker crashed `MAX_WORKER_CRASHES` times fails with a
# pointer to its log (`policies/base.beyond_retry`) instead of being relaunched forever.
#
# Usage::
#
#     book.end(attempt, lost_end_reason(view), view)        # "interrupted", "crashed" or "lost"

SPOT_TERMINATION = "Server.SpotInstanceTermination"
INSTANCE_SHUTDOWN = "Client.InstanceInitiatedShutdown"
# an attempt that ended so without a single heartbeat never ran its worker: its boot failed
SILENT_ENDS = frozenset({"lost", "crashed"})


def lost_end_reason(view: AttemptView) -> str:
    if view.state_reason == SPOT_TERMINATION:
        return "interrupted"
    if view.state_reason == INSTANCE_SHUTDOWN:
        return "crashed"
    return "lost"
