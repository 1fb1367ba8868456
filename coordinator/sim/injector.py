"""Simulator only: the interruption injector, AWS's part in a spot interruption.

Two models of when spot capacity goes away:

- `RandomInterruptions(probability, interval)`: each spot instance is interrupted with `probability` per
  `interval` cloud seconds (the brief: 30% per 5 minutes). Each attempt's time to interruption is drawn
  once, from a generator seeded with the run's seed and the attempt id, so a run's interruption schedule
  does not depend on how fast the machine is.
- `TraceReplay(trace, offset)`: an availability trace (`{metadata.gap_seconds, data[]}`) replayed from a
  start offset (one zone per run): while the trace says unavailable, every spot instance is interrupted and
  spot launches fail for lack of capacity (the fault proxy asks `spot_available()`).

An interruption: the 2-minute notice is served on the instance's metadata path and, as EC2 does, published
as an "EC2 Spot Instance Interruption Warning" through the emulator's EventBridge (the stack's rule delivers
it to the coordinator's queue); after the grace period (cloud seconds, scaled) the instance is terminated
in moto as a spot reclaim (StateReason `Server.SpotInstanceTermination`) and its worker gets SIGTERM,
then SIGKILL. A hard kill skips the notice (SIGKILL and terminate at once, the same reason).

Usage::

    injector = InterruptionInjector(ec2, runtime, imds, clock, RandomInterruptions(0.3, 300), seed=7,
                                    aws=target)    # reclaims and EventBridge warnings through `target`
    with injector:                       # a thread; every interruption lands in injector.records
        ...
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from coordinator.background import Background
from coordinator.job.core import TAG_ATTEMPT, TAG_MARKET, TAG_SEGMENT, CloudClock
from coordinator.sim.ec2_events import (
    SPOT_TERMINATION,
    interruption_warning,
    rebalance_recommendation,
    with_state_reason,
)
from coordinator.sim.instance_runtime import InstanceRuntime
from coordinator.sim.metadata_server import MetadataServer
from coordinator.stack.target import AwsTarget
from coordinator.whatif.traces import AvailabilityTrace

NOTICE_SECONDS = 120.0  # AWS gives two minutes between the notice and the reclaim
TICK_SECONDS = 0.05  # wall: how often the injector looks at the clock
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RandomInterruptions:
    probability: float  # per interval
    interval: float = 300.0  # cloud seconds
    name: str = "random"

    def __post_init__(self) -> None:
        if not 0.0 <= self.probability <= 1.0:
            raise ValueError(f"interruption probability must be in [0, 1], got {self.probability}")
        if not self.interval > 0:
            raise ValueError(f"interruption interval must be positive, got {self.interval}")

    def time_to_interruption(self, rng: random.Random) -> float:
        """Cloud seconds until the reclaim, from the constant hazard that gives `probability` per interval."""
        if self.probability == 0.0:
            return math.inf
        if self.probability == 1.0:
            return 0.0
        return self.interval * math.log(1.0 - rng.random()) / math.log(1.0 - self.probability)

    def describe(self) -> str:
        return f"random: {self.probability:.0%} per {self.interval:g} cloud s per spot instance"


@dataclass(frozen=True, slots=True)
class TraceReplay:
    trace: AvailabilityTrace
    offset: int  # index into the trace where the run starts
    name: str = "trace"

    @classmethod
    def at_random_offset(cls, trace: AvailabilityTrace, rng: random.Random) -> TraceReplay:
        return cls(trace, rng.randrange(len(trace.available)))

    def available_at(self, elapsed: float) -> bool:
        index = (self.offset + int(max(0.0, elapsed) // self.trace.gap_seconds)) % len(self.trace.available)
        return self.trace.available[index]

    def describe(self) -> str:
        return f"trace {self.trace.name} from tick {self.offset} ({self.trace.gap_seconds:g} s per tick)"


@dataclass(frozen=True, slots=True)
class Interruption:
    instance_id: str
    segment_id: str
    attempt_id: str
    kind: str  # "notice", "hard-kill" or "crash" (not AWS's doing: the worker died)
    notice_wall: float
    notice_cloud: float
    reclaim_cloud: float


def _account_of(ec2: Any, instance_id: str) -> str:
    reservations = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
    return str(reservations[0]["OwnerId"])


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class InterruptionInjector(Background):
    def __init__(
        self,
        ec2: Any,
        runtime: InstanceRuntime,
        imds: MetadataServer,
        clock: CloudClock,
        model: RandomInterruptions | TraceReplay | None,
        *,
        seed: int = 0,
        folder_prefix: str = "",
        notice_seconds: float = NOTICE_SECONDS,
        aws: AwsTarget | None = None,
    ) -> None:
        self.ec2 = ec2
        self.folder_prefix = folder_prefix  # the job ids' runs-folder part, left out of the draws
        # an EC2 client of its own, whose terminations say "spot reclaim"; EventBridge for the warnings
        self.reclaimer = with_state_reason(aws.client("ec2"), SPOT_TERMINATION) if aws else ec2
        self.events = aws.client("events") if aws else None
        self.warnings_published = 0
        self.runtime = runtime
        self.imds = imds
        self.clock = clock
        self.model = model
        self.seed = seed
        self.notice_seconds = notice_seconds
        self.started_cloud = clock.now()
        self.records: list[Interruption] = []
        self._due: dict[str, float] = {}  # instance id -> cloud time of its random interruption
        self.handled: set[str] = set()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="injector", daemon=True)
        self._timers: list[threading.Timer] = []

    def spot_available(self) -> bool:
        if isinstance(self.model, TraceReplay):
            return self.model.available_at(self.clock.now() - self.started_cloud)
        return True

    def start(self) -> InterruptionInjector:
        self._thread.start()
        return self

    def close(self) -> None:
        self._closed.set()
        if self._thread.is_alive():
            self._thread.join()
        for timer in self._timers:
            timer.cancel()

    def _loop(self) -> None:
        while not self._closed.wait(TICK_SECONDS):
            self.tick()

    def schedule_key(self, attempt: str) -> str:
        """What an attempt's reclaim is drawn from with the seed: its id without the runs folder's part
        (`simulate-<time>-hybrid-01/seg-0003/2` -> `hybrid-01/seg-0003/2`), so that the same seed draws the
        same schedule in every runs folder."""
        return attempt.removeprefix(self.folder_prefix)

    def tick(self) -> None:
        now = self.clock.now()
        for instance_id, instance in self.runtime.running().items():
            if instance.tags.get(TAG_MARKET) != "spot" or instance_id in self.handled:
                continue
            if isinstance(self.model, RandomInterruptions):
                due = self._due.get(instance_id)
                if due is None:
                    attempt = instance.tags.get(TAG_ATTEMPT, instance_id)
                    rng = random.Random(f"{self.seed}/{self.schedule_key(attempt)}")
                    due = self._due[instance_id] = self.clock.at(
                        instance.booted_at
                    ) + self.model.time_to_interruption(rng)
                if now >= due:
                    self.interrupt(instance_id)
            elif isinstance(self.model, TraceReplay) and not self.spot_available():
                self.interrupt(instance_id)

    def interrupt(self, instance_id: str, *, hard: bool = False) -> Interruption | None:
        """Serve the notice and schedule the reclaim; or, `hard`, kill and terminate now."""
        with self._lock:
            if instance_id in self.handled:
                return None
            self.handled.add(instance_id)
        instance = self.runtime.running().get(instance_id)
        tags = instance.tags if instance else {}
        now = self.clock.now()
        record = Interruption(
            instance_id,
            tags.get(TAG_SEGMENT, ""),
            tags.get(TAG_ATTEMPT, ""),
            "hard-kill" if hard else "notice",
            time.time(),
            now,
            now if hard else now + self.notice_seconds,
        )
        self.records.append(record)
        if hard:
            self.runtime.kill(instance_id, hard=True)
            self._terminate(instance_id)
            return record
        self.imds.issue_notice(instance_id, action_time=_iso(record.reclaim_cloud))
        self._publish_warning(instance_id)
        timer = threading.Timer(self.clock.wall(self.notice_seconds), self._reclaim, args=(instance_id,))
        timer.daemon = True
        self._timers.append(timer)
        timer.start()
        return record

    def crash(self, instance_id: str) -> Interruption | None:
        """Not AWS's doing: the worker dies (SIGKILL) and its machine powers itself off (the boot script's
        trap), as after an out-of-memory kill. Recorded with kind "crash"; not an interruption."""
        with self._lock:
            if instance_id in self.handled:
                return None
            self.handled.add(instance_id)
        instance = self.runtime.running().get(instance_id)
        if instance is None or instance.worker is None:
            return None
        now = self.clock.now()
        tags = instance.tags
        record = Interruption(
            instance_id, tags.get(TAG_SEGMENT, ""), tags.get(TAG_ATTEMPT, ""), "crash", time.time(), now, now
        )
        self.records.append(record)
        instance.worker.signal(signal.SIGKILL)
        return record

    def recommend_rebalance(self, instance_id: str) -> bool:
        """EC2's rebalance recommendation for the instance, through EventBridge; no notice, no reclaim."""
        with self._lock:
            if instance_id in self.handled:
                return False
            self.handled.add(instance_id)
        return self._publish(instance_id, rebalance_recommendation)

    def _publish_warning(self, instance_id: str) -> None:
        if self._publish(instance_id, interruption_warning):
            self.warnings_published += 1

    def _publish(self, instance_id: str, document: Callable[[str, str, str], dict[str, Any]]) -> bool:
        if self.events is None:
            return False
        region = self.events.meta.region_name
        try:
            account = self._account = getattr(self, "_account", None) or _account_of(self.ec2, instance_id)
            self.events.put_events(Entries=[document(instance_id, region, account)])
        except (
            Exception
        ) as error:  # a warning: the worker still has its notice, the heartbeat path carries on
            log.warning("%s for %s not published: %s", document.__name__, instance_id, error)
            return False
        return True

    def _reclaim(self, instance_id: str) -> None:
        self._terminate(instance_id)
        self.runtime.kill(instance_id, hard=False)

    def _terminate(self, instance_id: str) -> None:
        with contextlib.suppress(Exception):  # already gone: the coordinator got there first
            self.reclaimer.terminate_instances(InstanceIds=[instance_id])

    def save(self, path: Path) -> None:
        path.write_text("".join(json.dumps(asdict(r)) + "\n" for r in self.records), encoding="utf-8")
