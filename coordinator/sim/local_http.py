"""Simulator only: the part every local HTTP stand-in shares: a threaded server on a loopback port, served
from a daemon thread, usable as a context manager.

Usage::

    class MyServer(LocalHttpServer):
        def _handler_class(self) -> type[BaseHTTPRequestHandler]: ...

    with MyServer(name="mine") as server:
        requests.get(server.base_url + "/path")
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

from coordinator.background import Background


class LocalHttpServer(Background):
    def __init__(self, *, name: str, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = ThreadingHTTPServer((host, port), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name=name, daemon=True)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
