"""Calls paced to a provider's published rate limits in advance, so that a 429 is the exception.

Lambda Cloud's API description (v1.8.3): "Requests to the API are generally limited to one request per
second. Requests to the `/instance-operations/launch` endpoint are limited to one request per 12 seconds".
`RequestPace()` keeps to those limits; the simulator's stand-in enforces a scaled copy of the same limits
and its client uses the same scaled copy (`RequestPace.scaled`).

Usage::

    pace = RequestPace()
    pace.before(launch=True)      # sleeps until both limits allow the call, then counts it
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

EVERY_SECONDS = 1.0  # any request
LAUNCH_EVERY_SECONDS = 12.0  # POST /instance-operations/launch


@dataclass
class RequestPace:
    every: float = EVERY_SECONDS
    launch_every: float = LAUNCH_EVERY_SECONDS
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    waited: float = 0.0  # seconds spent waiting for the limits, for the run's record
    _last: float | None = field(default=None, repr=False)
    _last_launch: float | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def scaled(cls, factor: float) -> RequestPace:
        """The published limits times `factor` (the simulator's stand-in runs time faster)."""
        return cls(every=EVERY_SECONDS * factor, launch_every=LAUNCH_EVERY_SECONDS * factor)

    def before(self, *, launch: bool = False) -> None:
        with self._lock:
            now = self.clock()
            ready = now
            if self._last is not None:
                ready = max(ready, self._last + self.every)
            if launch and self._last_launch is not None:
                ready = max(ready, self._last_launch + self.launch_every)
            if ready > now:
                self.sleep(ready - now)
                self.waited += ready - now
            self._last = max(now, ready)
            if launch:
                self._last_launch = self._last

    def after(self, *, launch: bool = False) -> None:
        """The request's answer (or its failure) is in: the limits count from now. The server counts from
        the request's arrival, which a slow send can push later than `before` saw; counting from the answer,
        which comes after the arrival, keeps the next request a whole interval behind it whatever the
        network did (paced from the send alone, a 20-ms pace met 429s on a loaded host)."""
        with self._lock:
            now = self.clock()
            self._last = max(self._last or now, now)
            if launch:
                self._last_launch = max(self._last_launch or now, now)
