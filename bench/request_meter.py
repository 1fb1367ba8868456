"""Bench only: a process's AWS requests by operation, the wall spent inside them and the bytes its
GetObjects returned, taken phase by phase (thread-safe: the coordinator fetches heartbeats in threads).

Usage::

    meter = RequestMeter().install()  # every botocore client of this process
    meter = RequestMeter(); ec2 = meter.attach(target.client("ec2"))  # or only the clients handed to it
    taken = meter.take()  # Taken(calls, seconds, bytes_read) since the last take
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Taken:
    calls: Counter[str] = field(default_factory=Counter)  # by operation: GetObject, DescribeInstances...
    seconds: float = 0.0  # wall inside the calls, summed over threads (the emulator's and botocore's work)
    bytes_read: int = 0  # GetObject bodies' ContentLength


class RequestMeter:
    def __init__(self) -> None:
        self._taken, self._lock = Taken(), threading.Lock()

    def install(self) -> RequestMeter:
        from botocore.client import BaseClient

        original = BaseClient._make_api_call  # type: ignore[attr-defined]
        BaseClient._make_api_call = lambda client, operation, params: self._count(  # type: ignore[attr-defined]
            lambda: original(client, operation, params), operation
        )
        return self

    def attach(self, client: Any) -> Any:
        original = client._make_api_call
        client._make_api_call = lambda operation, params: self._count(
            lambda: original(operation, params), operation
        )
        return client

    def take(self) -> Taken:
        with self._lock:
            taken, self._taken = self._taken, Taken()
        return taken

    def _count(self, call: Callable[[], Any], operation: str) -> Any:
        started, response = time.perf_counter(), None
        try:
            response = call()
            return response
        finally:
            with self._lock:
                self._taken.calls[operation] += 1
                self._taken.seconds += time.perf_counter() - started
                if operation == "GetObject" and isinstance(response, dict):
                    self._taken.bytes_read += int(response.get("ContentLength", 0))
