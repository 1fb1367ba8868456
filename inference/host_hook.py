"""Where the machine a worker runs on may step into its loop: before the first batch and after each one.

On a real instance nothing is installed and the worker runs as fast as its hardware goes. A host that
stands in for an instance (the simulator, which runs many workers on a few cores) installs a hook before it
starts the worker, so that the worker keeps the instance's schedule rather than the host's. The worker
itself never builds one, and its configuration knows nothing of it.

Usage::

    install(hook)                       # by the host, before `inference.worker.main`
    hook = installed()                  # by the worker: the host's hook, or one that does nothing
    hook.until_ready(stop.wait)         # before the first row (returns early on a stop)
    hook.after_batch(rows)              # after each batch: rows done since this attempt started
    hook.finished()                     # the attempt ends (drained or done)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class HostHook(Protocol):
    @property
    def ready_at(self) -> float | None:
        """Epoch second the machine is up (no heartbeat and no claim before it); None: now."""
        ...

    def until_ready(self, wait: Callable[[float], object]) -> None: ...

    def after_batch(self, rows: int) -> None: ...

    def finished(self) -> None: ...


class NoHook:
    """A real instance's: the hardware is the instance."""

    ready_at: float | None = None

    def until_ready(self, wait: Callable[[float], object]) -> None:
        return None

    def after_batch(self, rows: int) -> None:
        return None

    def finished(self) -> None:
        return None


_installed: list[HostHook] = [NoHook()]


def install(hook: HostHook) -> None:
    _installed[0] = hook


def installed() -> HostHook:
    return _installed[0]
