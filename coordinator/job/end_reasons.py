"""Why an attempt whose instance is gone ended, from EC2's `StateReason` (the monitor's `lost` verdict).

- `Server.SpotInstanceTermination` -> "interrupted": spot took the instance back (its drain was not
  seen: a hard reclaim, or the coordinator was away);
- `Client.InstanceInitiatedShutdown` -> "crashed": the machine powered itself off without its worker's
  last word, so the worker died (the boot script powers off however it ends);
- anything else, or an instance still running -> "lost": terminated by someone else, an EC2 failure, or
  a stale heartbeat on a live instance.

An interrupted or lost spot attempt counts towards the policy's spot retries; a crashed one does not (it
is no reason to leave spot), and a segment whose worker crashed `MAX_WORKER_CRASHES` times fails with a
pointer to its log (`policies/base.beyond_retry`) instead of being relaunched forever.

Usage::

    book.end(segment, lost_end_reason(view), view)        # "interrupted", "crashed" or "lost"
"""

from __future__ import annotations

from coordinator.job.monitor import AttemptView

SPOT_TERMINATION = "Server.SpotInstanceTermination"
INSTANCE_SHUTDOWN = "Client.InstanceInitiatedShutdown"


def lost_end_reason(view: AttemptView) -> str:
    if view.state_reason == SPOT_TERMINATION:
        return "interrupted"
    if view.state_reason == INSTANCE_SHUTDOWN:
        return "crashed"
    return "lost"
