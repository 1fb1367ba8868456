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
3. no beat of this attempt heard for `heartbeat_timeout` -> lost;
4. no heartbeat of this attempt yet: lost once `boot_timeout` has passed since it was first watched, else
   booting;
5. otherwise running.

Every age is the monitor's own: seconds on this process's monotonic clock since it first watched the attempt
(its launch, or the restart that adopted it) and since it last heard a beat of the attempt change (a new
object under the heartbeat key). The worker's `ts` is its own clock's: it is never compared with this one (a
coordinator clock 60-90 s ahead took every worker for lost at its first beat, and relaunched it 99 times).

Only heartbeats of the attempt the coordinator launched count: the object may still hold an older
attempt's last words. A heartbeat is untrusted input (any worker of the job may write it): one that does not
parse is no beat (`heartbeats.parse_heartbeat`), and a `done` beat counts only when the segment's checkpoint
proves it (done by this attempt, every row of the segment's range, every part it lists present);
otherwise it is ignored, and the attempt goes stale as a silent one would.

Usage::

    monitor = Monitor(store, fleet, job_id, clock=clock, heartbeat_timeout=20, boot_timeout=600)
    for view in monitor.observe(attempts):      # the state file's rows of open attempts
        view.verdict, view.reason, view.heartbeat, view.heard_at   # heard_at: cloud time the last beat came
"""

from __future__ import annotations

import logging
import time
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
    heard_at: float | None = None  # cloud time it was heard (None: already there at the first look)


def judge(
    attempt: AttemptRow,
    heartbeat: Heartbeat | None,
    instance_state: str | None,
    *,
    watched_for: float,
    silent_for: float | None,
    heartbeat_timeout: float,
    boot_timeout: float,
    state_reason: str = "",
) -> tuple[Verdict, str]:
    """The rules of the module docstring, as one pure function. `watched_for`: seconds since the monitor
    first watched the attempt; `silent_for`: seconds since it last heard a beat of it (None: none yet); both
    on the monitor's own clock."""
    if heartbeat is not None and heartbeat.state == "done":
        return "done", f"heartbeat done ({heartbeat.rows_done}/{heartbeat.rows_total} rows)"
    if heartbeat is not None and heartbeat.state == "failed":
        return "failed", f"worker failed: {heartbeat.message}"
    if heartbeat is not None and heartbeat.state == "draining":
        return "draining", f"heartbeat draining ({heartbeat.message or 'stop requested'})"
    if instance_state is None and heartbeat is None and watched_for < LISTING_LAG_SECONDS:
        return "booting", f"{attempt.instance_id} not listed by EC2 yet (watched {watched_for:.1f} s)"
    if instance_state is None or instance_state in GONE_STATES:
        why = f" ({state_reason})" if state_reason else ""
        return "lost", f"instance {attempt.instance_id} is {instance_state or 'not listed'}{why}"
    if heartbeat is not None and silent_for is not None:
        if silent_for > heartbeat_timeout:
            return "lost", f"no heartbeat for {silent_for:.1f} s (timeout {heartbeat_timeout:g} s)"
        return "running", "heartbeat fresh"
    if watched_for > boot_timeout:
        return "lost", f"no heartbeat {watched_for:.1f} s after launch (boot timeout {boot_timeout:g} s)"
    return "booting", f"waiting for the first heartbeat ({watched_for:.1f} s)"


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
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """`full_look_seconds`: with an events queue, how often the whole job is listed (`instance_watch.py`);
        None lists it every cycle. `segment_range`: a segment's rows (start, stop), that a `done` beat's
        checkpoint must cover (None: the checkpoint's own). `monotonic`: the clock every age is read on."""
        self.monotonic = monotonic
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
        self._heard: dict[str, tuple[float, float | None]] = {}  # attempt id -> (monotonic, cloud) time heard
        self._watched: dict[str, float] = {}  # attempt id -> monotonic time it was first watched

    def latest_heartbeat(self, attempt_id: str) -> Heartbeat | None:
        return self._latest.get(attempt_id)

    def forget(self, attempt_id: str) -> None:
        self._latest.pop(attempt_id, None)
        self._heard.pop(attempt_id, None)
        self._watched.pop(attempt_id, None)

    def observe(self, open_attempts: Iterable[AttemptRow]) -> list[AttemptView]:
        """A view of each launched attempt (one without an instance yet is not watched)."""
        attempts = [a for a in open_attempts if a.instance_id is not None and a.launched_at is not None]
        if not attempts:
            return []
        now = self.monotonic()
        for attempt in attempts:
            self._watched.setdefault(attempt.attempt_id, now)
        beats = self.heartbeats.changed(a.segment_id for a in attempts)
        for attempt in attempts:
            beat = beats.get(attempt.segment_id)
            if beat is not None and beat.attempt == attempt.attempt_id and self._takes(beat):
                self._latest[attempt.attempt_id] = beat
                live = self._watched[attempt.attempt_id] < now  # else written before this process looked
                self._heard[attempt.attempt_id] = (now, self.clock.now() if live else None)
        heard = {a: mono for a, (mono, _) in self._heard.items()}
        instances = self.instances.look(attempts, heard, now)
        views = []
        for attempt in attempts:
            heartbeat = self._latest.get(attempt.attempt_id)
            info = instances.get(attempt.instance_id or "")
            state, state_reason = (info.state, info.state_reason) if info else (None, "")
            heard_mono, heard_cloud = self._heard.get(attempt.attempt_id, (None, None))
            verdict, reason = judge(
                attempt,
                heartbeat,
                state,
                watched_for=now - self._watched[attempt.attempt_id],
                silent_for=None if heard_mono is None else now - heard_mono,
                heartbeat_timeout=self.heartbeat_timeout,
                boot_timeout=self.boot_timeout,
                state_reason=state_reason,
            )
            views.append(AttemptView(attempt, verdict, reason, state, heartbeat, state_reason, heard_cloud))
        return views

    def _takes(self, beat: Heartbeat) -> bool:
        """A changed beat of the attempt is its newest (the object was rewritten), but a final word stays
        final, and a `done` counts only with its checkpoint's proof."""
        seen = self._latest.get(beat.attempt)
        if seen is not None and seen.state in ("done", "failed"):
            return False
        if self.segment_range is not None:
            start, stop = self.segment_range(beat.segment_id)
            if beat.rows_total != stop - start:
                log.warning(
                    "heartbeat of %s counts %d rows, the segment has %d: ignored",
                    beat.segment_id,
                    beat.rows_total,
                    stop - start,
                )
                return False
        return beat.state != "done" or self._done_proven(beat)

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
