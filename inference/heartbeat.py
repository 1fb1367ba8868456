"""The heartbeat: a small JSON object per segment, rewritten by a background thread.

    heartbeats/<segment>.json  {segment_id, instance_id, market, attempt, state, rows_done, rows_total,
                                rows_per_s, next_batch, ts, message, beats}

`state` is `running`, `draining` (stopping after a notice or SIGTERM), `done` or `failed`. The coordinator
calls a segment lost when its heartbeat is older than its timeout.

The interval adapts, as watching costs money (an S3 PUT is $0.005 per 1,000: a beat every 2 s is 1,800
PUTs, $0.009, an hour, 13% of a c7i.xlarge spot hour): every `every` seconds for the first `WARMUP_BEATS`
(the coordinator sees the worker start and its speed) and whenever the state is not `running` (draining),
every `steady_every` seconds otherwise (30 s: 120 PUTs, $0.0006, an hour). A change of state is written at
once (`beat()`), and EC2's own events, not the heartbeat, tell the coordinator of a reclaim. `beats` counts
the PUTs of this attempt's heartbeats, this one included: the ledger prices them.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import asdict, dataclass
from typing import Literal

from inference.layout import heartbeat_key
from inference.storage import ObjectStore

HEARTBEAT_SECONDS = 2.0  # while starting and draining
STEADY_HEARTBEAT_SECONDS = 30.0  # while running: 3 beats fit in the coordinator's 90-s loss timeout
WARMUP_BEATS = 3  # beats at the short interval after the first
MAX_MESSAGE_CHARS = 2_000  # a failure's message is cut here: the coordinator refuses oversized heartbeats
HEARTBEAT_TAGS = {"spotbatch:kind": "heartbeat"}  # the bucket's lifecycle rule expires objects with this tag

HeartbeatState = Literal["running", "draining", "done", "failed"]
log = logging.getLogger(__name__)


@dataclass(slots=True)
class Heartbeat:
    segment_id: str
    instance_id: str
    market: str
    attempt: str
    rows_total: int
    state: HeartbeatState = "running"
    rows_done: int = 0
    rows_per_s: float = 0.0
    next_batch: int = 0
    ts: float = 0.0
    message: str = ""
    beats: int = 0


class HeartbeatWriter(threading.Thread):
    """Writes the shared `Heartbeat` until closed, at the intervals of the module docstring; `beat()` writes
    one at once."""

    def __init__(
        self,
        store: ObjectStore,
        heartbeat: Heartbeat,
        every: float = HEARTBEAT_SECONDS,
        first_at: float | None = None,
        steady_every: float | None = None,
    ) -> None:
        """`first_at` (epoch seconds): no beat before then (a simulated instance still in its modelled
        launch: on EC2 the worker, and its first beat, start only after the boot and the image pull).
        `steady_every`: the interval while running after the warm-up (None: `every` throughout)."""
        super().__init__(name="heartbeat", daemon=True)
        self.store, self.heartbeat, self.every, self.first_at = store, heartbeat, every, first_at
        self.steady_every = every if steady_every is None else max(every, steady_every)
        self.lock = threading.Lock()
        self._closed = threading.Event()

    def update(self, **fields: object) -> None:
        with self.lock:
            for name, value in fields.items():
                setattr(self.heartbeat, name, value)

    def beat(self) -> None:
        with self.lock:
            self.heartbeat.ts = time.time()
            self.heartbeat.beats += 1
            payload = json.dumps(asdict(self.heartbeat)).encode()
        try:
            self.store.put(heartbeat_key(self.heartbeat.segment_id), payload, tags=HEARTBEAT_TAGS)
        except Exception as error:  # a missed beat must never kill the batch loop
            log.warning("heartbeat write failed: %s", error)

    def run(self) -> None:
        if self.first_at is not None:
            if self._closed.wait(max(0.0, self.first_at - time.time())):
                return
            self.beat()
        while not self._closed.wait(self.interval()):
            self.beat()

    def interval(self) -> float:
        with self.lock:
            warming = self.heartbeat.beats <= WARMUP_BEATS
            return self.every if warming or self.heartbeat.state != "running" else self.steady_every

    def close(self, state: HeartbeatState | None, message: str = "") -> None:
        """Stop the thread and write the final state (None: stop without a last write)."""
        self._closed.set()
        if self.is_alive():
            self.join()
        if state is not None:
            self.update(state=state, message=message[:MAX_MESSAGE_CHARS])
            self.beat()
