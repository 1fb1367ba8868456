"""What every policy shares: the two markets, why a segment needs an instance, what a policy may know of it.

Two kinds of policy decide where a segment runs:

- recovery policies (`recovery.py`, SkyPilot's shape): `launch()` picks the market of a segment's first
  attempt, `recover()` decides after an interruption or a failed launch, from the segment's history;
- deadline policies (`deadline.py`): `choose(view)` decides from the clock, the work left and whether spot
  is available, whenever a segment has no instance and while it runs on on-demand.

`registry.py` names them all. The live controller and the what-if engine each pick the driver for a
policy's kind once, and then ask the policy the same questions with the same types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from coordinator.cost.pricing import Market

Cause = Literal["interrupted", "failed-launch"]
MAX_ON_DEMAND_LAUNCH_FAILURES = 3  # on-demand capacity errors are rare and short; past three, a human looks
MAX_WORKER_CRASHES = 2  # a worker that died twice on one segment dies a third time: its log says why
# instances of one segment that ended without their worker's first heartbeat: the boot fails (the image,
# the registry, the script), whatever the market; a fourth boot would fail alike, and bill alike
MAX_SILENT_BOOTS = 3
# attempts of one segment lost after their worker had beaten, on an instance nobody reclaimed (a worker that
# hangs, or cannot reach S3): a coordinator clock that ran ahead relaunched one segment 99 times in 200 s
MAX_WENT_SILENT = 3


@dataclass(frozen=True, slots=True)
class SegmentHistory:
    """What a policy may know of a segment: its attempts so far, by market and outcome."""

    spot_interruptions: int = 0
    spot_launch_failures: int = 0
    on_demand_launch_failures: int = 0
    last_market: Market | None = None  # the market of the attempt that just ended
    worker_crashes: int = 0  # attempts whose worker died (not interruptions: never a reason to retry spot)
    silent_boots: int = 0  # attempts lost or crashed before their worker's first heartbeat
    went_silent: int = 0  # attempts lost after their worker's first heartbeat, not reclaimed by spot


@dataclass(frozen=True, slots=True)
class Decision:
    market: Market | None  # None: give up (the segment fails)
    reason: str

    @property
    def give_up(self) -> bool:
        return self.market is None


def beyond_retry(history: SegmentHistory) -> Decision | None:
    """Give up, whatever the policy, once on-demand launches have failed too often, the worker has crashed
    too often (a bug or a segment it cannot process: another instance will not help), or instances have
    ended too often before their worker ever ran (a boot that fails: on-demand relaunched it forever), or
    workers that had started have gone silent too often (a worker that hangs: the same)."""
    if history.on_demand_launch_failures >= MAX_ON_DEMAND_LAUNCH_FAILURES:
        return Decision(None, f"{history.on_demand_launch_failures} on-demand launch failures")
    if history.worker_crashes >= MAX_WORKER_CRASHES:
        return Decision(None, f"the worker crashed {history.worker_crashes} times: see its log")
    if history.silent_boots >= MAX_SILENT_BOOTS:
        return Decision(
            None,
            f"{history.silent_boots} instances ended before their worker's first heartbeat: the boot fails; "
            "see the boot log (stream <job>/<segment>/<instance>/boot of the stack's log group)",
        )
    if history.went_silent >= MAX_WENT_SILENT:
        return Decision(
            None,
            f"{history.went_silent} attempts went silent after their worker had started (no heartbeat "
            "within the timeout, the instance not reclaimed): the worker hangs or cannot reach S3; see its "
            "log (stream <job>/<segment>/<instance> of the stack's log group)",
        )
    return None
