"""A part that runs beside its caller from `start()` to `close()`, so that a `with` block is its lifetime:
an event listener, a server, a simulated machine room.

Usage::

    class Listener(Background):
        def start(self) -> Self: ...            # begin (a thread, a process); return self
        def close(self) -> None: ...            # end it and everything it started

    with Listener() as listener:                # start() ... close(), also on an error
        ...
"""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Background:
    def start(self) -> Self:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
