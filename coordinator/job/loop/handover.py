"""Acting on EC2's events at once: a warned spot attempt hands its segment over to a replacement.

Karpenter and EC2 Capacity Rebalancing launch the replacement when the warning comes, not when the old
instance is gone. On an interruption warning for a segment's running spot attempt, the segment moves DRAINING
-> INTERRUPTED at once, the attempt becomes the segment's leaving one (`segment_table.warn`), and the same
cycle's launch pass starts the replacement from the segment's checkpoint, on the market the policy picks (the
warning counts as the segment's interruption). The leaving worker drains as it would anyway (the metadata
service gives it the same notice): it finishes its batch, writes its checkpoint and heartbeats `draining`,
within seconds. The replacement's worker claims the checkpoint when it starts, a boot (a minute or more)
later; were it sooner, the fencing of `inference/segment_run.py` would stop the warned worker before it wrote
again (its last chunk redone, nothing written twice).

A leaving attempt ends when the monitor sees its final heartbeat or its instance gone: terminated, priced
and recorded as interrupted (or done, if it finished the segment within its notice: the replacement then
finds the checkpoint complete and ends at once). A warning for an attempt still booting stops its instance
at once (there is nothing to drain) and hands over the same way: the replacement does not wait for EC2 to
confirm the termination; the attempt is closed as interrupted once its instance is gone. The controller
runs its launch pass as soon as a segment is handed over, before it looks at the fleet (closing an attempt,
with its usage read, is most of the time from a warning to the replacement's launch). A rebalance
recommendation for a booting attempt only sends the next launches to other pools. A state-change event
needs nothing here: it wakes the loop, whose monitor sees the instance gone in the same cycle.

A rebalance recommendation (the instance's capacity is at elevated risk, often before any warning) is
acted on only with the job's `replace_on_rebalance`, as EC2 Capacity Rebalancing does: the same hand-over,
with the instance's pool (its type in its zone) tried last for spot, but the old worker is not stopped: it
works on while the replacement boots, until the replacement's first heartbeat (its claim of the checkpoint
fences the old worker's writes); then its instance is terminated, and its attempt ends as `switched` (left
on purpose, not reclaimed; `interrupted` if the reclaim came first).

Usage::

    handover = Handover(table, launcher, replace_on_rebalance=spec.replace_on_rebalance)
    handover.take(events, look_again)   # the queue's events: True if a segment was handed over
    handover.act(event)                 # one InstanceEvent of the job's instances
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from coordinator.job.aws import EventQueue, InstanceEvent
from coordinator.job.core import SegmentState
from coordinator.job.loop.launcher import Launcher
from coordinator.job.loop.segment_table import SegmentTable

log = logging.getLogger("coordinator")


class Handover:
    def __init__(self, table: SegmentTable, launcher: Launcher, *, replace_on_rebalance: bool) -> None:
        self._table, self._launcher = table, launcher
        self.replace_on_rebalance = replace_on_rebalance

    def take(self, events: EventQueue, look_again: Callable[[str], None]) -> bool:
        """Act on the events that came (after watching the job's active instances); whether any handed a
        segment over. `look_again`: each event asks for a look at the instance it names."""
        for attempt in self._table.active_attempts():
            if attempt.instance_id is not None:
                events.watch(attempt.instance_id)
        handed_over = False
        for event in events.take():
            look_again(event.instance_id)
            handed_over |= self.act(event)
            events.handled(event)
        return handed_over

    def act(self, event: InstanceEvent) -> bool:
        """Whether the event handed a segment over (its replacement is for the launch pass to start)."""
        rebalance = event.kind == "rebalance"
        if not (event.kind == "interruption-warning" or (rebalance and self.replace_on_rebalance)):
            return False
        table = self._table
        segment = table.segment_of(event.instance_id)
        attempt = table.active(segment) if segment is not None else None
        if segment is None or attempt is None or attempt.market != "spot":
            return False  # an attempt already ended or leaving, or not on spot
        what = "rebalance recommendation" if rebalance else "interruption warning"
        why = f"EC2 {what} for {event.instance_id} (EventBridge)"
        if rebalance:
            self._launcher.avoid_pool_of(attempt)
            if table.segment(segment).state == SegmentState.LAUNCHING:
                log.info("%s: %s while it boots: kept (its pool is tried last from now)", segment, why)
                return False  # at risk, not reclaimed: the boot goes on; a warning, if one comes, replaces it
        if not table.warn(segment, why, rebalance=rebalance):
            return False
        log.info("%s: %s; replacing it now", segment, why)
        return True
