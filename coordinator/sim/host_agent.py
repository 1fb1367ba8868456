"""Simulator only: what answers the stand-ins' calls, like each machine's Docker daemon and init would.

A unix socket in the run's folder (mode 0600), one JSON line in per call and JSON lines back, the last of
which ends the call: `{"error": "..."}` fails it. The machine is named by the stand-in; the agent hands the
call to its `Machines` (the instance runtime), which knows the instance, its role and its worker.

Usage::

    with HostAgent(socket_path, machines) as agent:     # machines: pull / run / shutdown
        env["SPOTBATCH_SIM_SOCKET"] = str(agent.path)
"""

from __future__ import annotations

import contextlib
import json
import os
import socketserver
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

Reply = Callable[[dict[str, Any]], None]


class Machines(Protocol):
    def pull(self, machine: str, image: str) -> str: ...

    def run(self, machine: str, request: dict[str, Any], started: Reply) -> int: ...

    def shutdown(self, machine: str, minutes: float | None) -> None: ...


class HostAgent:
    def __init__(self, path: Path, machines: Machines) -> None:
        self.path = path
        self.machines = machines
        self.errors: list[str] = []
        agent = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                def reply(answer: dict[str, Any]) -> None:
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # caller killed
                        self.wfile.write(json.dumps(answer).encode() + b"\n")
                        self.wfile.flush()

                line = self.rfile.readline()
                if not line.strip():  # the caller died before it asked (its machine powered off): no call
                    return
                try:
                    request = json.loads(line)
                    for answer in agent.dispatch(request, reply):
                        reply(answer)
                except Exception as error:  # the stand-in prints it and fails, as docker would
                    agent.errors.append(f"{type(error).__name__}: {error}")
                    reply({"error": str(error)})

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True

        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        self._server = Server(str(path), Handler)
        os.chmod(path, 0o600)
        self._thread = threading.Thread(target=self._server.serve_forever, name="host-agent", daemon=True)

    def dispatch(self, request: dict[str, Any], reply: Reply) -> Iterator[dict[str, Any]]:
        machine, op = str(request["machine"]), request.get("op")
        if op == "pull":
            yield {"status": self.machines.pull(machine, str(request["image"]))}
        elif op == "run":
            yield {"exit": self.machines.run(machine, request, reply)}
        elif op == "shutdown":
            self.machines.shutdown(machine, None if request.get("cancel") else float(request["minutes"]))
            yield {"status": "ok"}
        else:
            raise ValueError(f"unknown call {op!r}")

    def __enter__(self) -> HostAgent:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self.path.unlink(missing_ok=True)
