"""Cloud time (`CloudClock`): wall-clock seconds on real AWS, scaled seconds in the simulator, which runs
cloud time `scale` times faster than the wall clock, so that "30% chance of an interruption every 5
minutes" over an hour of billing fits in a minute. Inference stays real; billing, injector intervals and
status lines use cloud seconds. The origin is stored with the job, so a coordinator restarted after a crash
reads the same clock.

Every conversion between the two is one of its methods: times (`at`, `wall_at`), durations (`cloud`,
`wall`) and rates (`per_cloud_second`, `per_wall_second`); nothing else multiplies or divides by `scale`.

Usage::

    clock = CloudClock(scale=60.0, origin=time.time())
    clock.now()                      # epoch-like cloud seconds: origin + (wall elapsed) * scale
    clock.at(heartbeat.ts)           # the cloud time of a wall timestamp; clock.wall_at(...) the other way
    clock.wall(120.0)                # a 2-minute cloud grace period is 2 wall seconds at scale 60
    clock.per_cloud_second(600.0)    # 600 rows per wall second are 10 per cloud second at scale 60
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class CloudClock:
    scale: float = 1.0
    origin: float = field(default_factory=time.time)
    # where wall time comes from: the system clock (a test moves one of its own)
    wall_time: Callable[[], float] = field(default=time.time, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.scale > 0:
            raise ValueError(f"time scale must be positive, got {self.scale}")

    def now(self) -> float:
        return self.origin + (self.wall_time() - self.origin) * self.scale

    def at(self, wall_time: float) -> float:
        """The cloud time of a wall-clock timestamp (a heartbeat's `ts`, an event's time)."""
        return self.origin + (wall_time - self.origin) * self.scale

    def wall_at(self, cloud_time: float) -> float:
        """The wall-clock timestamp of a cloud time (`at` undone: a launch time read back from the state)."""
        return self.origin + (cloud_time - self.origin) / self.scale

    def wall(self, cloud_seconds: float) -> float:
        """How many wall seconds a cloud duration takes."""
        return cloud_seconds / self.scale

    def cloud(self, wall_seconds: float) -> float:
        """How many cloud seconds a wall duration stands for."""
        return wall_seconds * self.scale

    def per_cloud_second(self, per_wall_second: float) -> float:
        """A rate measured on the wall clock (a heartbeat's rows/s) per cloud second."""
        return per_wall_second / self.scale

    def per_wall_second(self, per_cloud_second: float) -> float:
        """A rate per cloud second (a type's rows/s) as this host must deliver it per wall second."""
        return per_cloud_second * self.scale
