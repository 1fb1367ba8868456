"""Cloud time (`CloudClock`): wall-clock seconds on real AWS, scaled seconds in the simulator, which runs
cloud time `scale` times faster than the wall clock, so that "30% chance of an interruption every 5
minutes" over an hour of billing fits in a minute. Inference stays real; billing, injector intervals and
status lines use cloud seconds. The origin is stored with the job, so a coordinator restarted after a crash
reads the same clock.

Usage::

    clock = CloudClock(scale=60.0, origin=time.time())
    clock.now()              # epoch-like cloud seconds: origin + (wall elapsed) * scale
    clock.wall(120.0)        # a 2-minute cloud grace period is 2 wall seconds at scale 60
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class CloudClock:
    scale: float = 1.0
    origin: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        if not self.scale > 0:
            raise ValueError(f"time scale must be positive, got {self.scale}")

    def now(self) -> float:
        return self.origin + (time.time() - self.origin) * self.scale

    def at(self, wall_time: float) -> float:
        """The cloud time of a wall-clock timestamp (a heartbeat's `ts`, an event's time)."""
        return self.origin + (wall_time - self.origin) * self.scale

    def wall(self, cloud_seconds: float) -> float:
        """How many wall seconds a cloud duration takes."""
        return cloud_seconds / self.scale

    def cloud(self, wall_seconds: float) -> float:
        return wall_seconds * self.scale
