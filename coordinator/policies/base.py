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

Market = Literal["spot", "on-demand"]
Cause = Literal["interrupted", "failed-launch"]
MAX_ON_DEMAND_LAUNCH_FAILURES = 3  # on-demand capacity errors are rare and short; past three, a human looks


@dataclass(frozen=True, slots=True)
class SegmentHistory:
    """What a policy may know of a segment: its attempts so far, by market and outcome."""

    spot_interruptions: int = 0
    spot_launch_failures: int = 0
    on_demand_launch_failures: int = 0
    last_market: Market | None = None  # the market of the attempt that just ended


@dataclass(frozen=True, slots=True)
class Decision:
    market: Market | None  # None: give up (the segment fails)
    reason: str

    @property
    def give_up(self) -> bool:
        return self.market is None


def on_demand_exhausted(history: SegmentHistory) -> Decision | None:
    """Give up once on-demand launches have failed too often, whatever the policy."""
    if history.on_demand_launch_failures >= MAX_ON_DEMAND_LAUNCH_FAILURES:
        return Decision(None, f"{history.on_demand_launch_failures} on-demand launch failures")
    return None
