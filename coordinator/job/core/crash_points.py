"""Named points where the coordinator can be made to die, to prove a restart finishes what it left half done.

`SPOTBATCH_CRASH_AT=after-authorize` (one of `POINTS`) makes the coordinator kill itself with SIGKILL the
first time it passes that point: no `finally`, no handler, as a power cut or the OOM killer would. The
tests run `spotbatch run` with each point and then again without, and check that every row is predicted
once, no instance is left and no budget reservation stays open. Unset (always, outside tests), a point
costs one dictionary lookup.

    after-authorize        the budget guard reserved the launch; the state does not know the attempt yet
    after-run-instances    EC2 answered the launch; the state does not know its instance yet
    after-state-draining   the segment is DRAINING; its attempt is still open
    after-state-done       the segment is DONE; its attempt is still open
    after-terminate        the instance is terminated; the attempt is not closed in the state
    before-record-actual   the attempt is closed in the state; the guard has not been told its cost
"""

from __future__ import annotations

import os
import signal

from coordinator.errors import ConfigError

CRASH_ENV = "SPOTBATCH_CRASH_AT"
POINTS = (
    "after-authorize",
    "after-run-instances",
    "after-state-draining",
    "after-state-done",
    "after-terminate",
    "before-record-actual",
)


def check_crash_setting() -> None:
    """A misspelt point would silently never fire: name it."""
    chosen = os.environ.get(CRASH_ENV)
    if chosen and chosen not in POINTS:
        raise ConfigError(f"${CRASH_ENV}={chosen!r} is not a crash point (one of: {', '.join(POINTS)})")


def crash_point(name: str) -> None:
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
