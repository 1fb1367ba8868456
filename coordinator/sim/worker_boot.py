"""Simulator only: how a simulated instance's `docker run` starts its worker, as a real process.

The worker gets the container's environment and nothing else of this host's, and runs as a simulated
instance runs it: `inference.worker.main` with the instance type's pace installed (`paced_worker.py`). `exec`
runs `python -m coordinator.sim.paced_worker` (the image's entrypoint runs `inference.worker`). `fork` forks
the worker from a
server process that has already imported torch and transformers (multiprocessing's forkserver with this
module preloaded), like booting from a warm image: the same `inference.worker.main`, the same signals, but
without paying seconds of imports per boot, which on 2 cores would dominate a simulation that boots
hundreds of workers. The server never runs a torch op, so no thread pool exists before the fork.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.context
import multiprocessing.forkserver
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Literal, Protocol

# transformers imports a model's module on first use, seconds for BERT's: the server imports it now, once
from transformers import BertForSequenceClassification, BertTokenizer  # noqa: F401

from coordinator.paths import checkout_first
from coordinator.sim import paced_worker
from coordinator.sim.lifeline import popen_tied, tie_to_parent

BootMode = Literal["fork", "exec"]
# On a cloud the coordinator has its own machine; here ten workers share 2 cores with it, moto and the
# metadata server. Workers run at a lower priority so that the control plane is not starved (without it,
# the coordinator took seconds to act on a draining heartbeat in the middle of a loaded run).
WORKER_NICENESS = 10
WAIT_POLL_SECONDS = 0.05


class WorkerHandle(Protocol):
    pid: int | None

    def exit_code(self) -> int | None: ...

    def signal(self, number: int) -> None: ...

    def wait(self, timeout: float) -> int | None: ...


def _run_worker_child(env: dict[str, str], log_path: str, argv: tuple[str, ...] = ()) -> None:
    os.setsid()  # its own session, like a process on another machine: signals reach it alone
    tie_to_parent()  # the fork server, which itself ends when the simulator does
    os.nice(WORKER_NICENESS)
    os.environ.clear()  # the container's environment only: nothing of this host's (no credentials)
    os.environ.update(env)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the coordinator's; the runtime stops workers
    sys.exit(paced_worker.run(argv))


class ForkedWorker:
    """A forked worker. Several threads ask after it (the `docker run` call waits, a power-off signals):
    a fork server's child reports its exit code through a pipe that only one reader may drain, so every
    look goes through one lock and none of them blocks."""

    def __init__(
        self,
        context: multiprocessing.context.ForkServerContext,
        env: dict[str, str],
        log_path: Path,
        argv: tuple[str, ...] = (),
    ) -> None:
        self._process = context.Process(
            target=_run_worker_child, args=(env, str(log_path), argv), daemon=False
        )
        self._process.start()
        self._lock = threading.Lock()
        self.pid = self._process.pid

    def exit_code(self) -> int | None:
        with self._lock:
            return self._process.exitcode

    def signal(self, number: int) -> None:
        if self.exit_code() is None and self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, number)

    def wait(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while (code := self.exit_code()) is None and time.monotonic() < deadline:
            time.sleep(WAIT_POLL_SECONDS)
        return code


class ExecWorker:
    def __init__(self, env: dict[str, str], log_path: Path, argv: tuple[str, ...] = ()) -> None:
        with open(log_path, "ab") as log:
            self._process = popen_tied(
                [
                    shutil.which("nice") or "nice",
                    "-n",
                    str(WORKER_NICENESS),
                    sys.executable,
                    "-m",
                    "coordinator.sim.paced_worker",
                    *argv,
                ],
                # the container's environment only: nothing of this host's (no credentials); the checkout
                # on PYTHONPATH stands for the image's code in its WORKDIR
                env=checkout_first(env),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.pid: int | None = self._process.pid

    def exit_code(self) -> int | None:
        return self._process.poll()

    def signal(self, number: int) -> None:
        if self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.send_signal(number)

    def wait(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while (code := self._process.poll()) is None and time.monotonic() < deadline:
            time.sleep(WAIT_POLL_SECONDS)
        return code


class WorkerLauncher:
    """Starts workers in the chosen boot mode; `close()` stops the fork server."""

    def __init__(self, mode: BootMode = "fork") -> None:
        if mode not in ("fork", "exec"):
            raise ValueError(f"boot mode must be fork or exec, got {mode!r}")
        self.mode = mode
        self._context: multiprocessing.context.ForkServerContext | None = None
        if mode == "fork":
            self._context = multiprocessing.get_context("forkserver")
            self._context.set_forkserver_preload([__name__])
            # started now, before any instance boots: its imports (several CPU-seconds) would otherwise
            # delay the first workers of a run past their modelled launch
            multiprocessing.forkserver.ensure_running()

    def start(self, env: dict[str, str], log_path: Path, argv: tuple[str, ...] = ()) -> WorkerHandle:
        """A worker with `env` as its whole environment (and `argv`, the worker's own options, if any)."""
        if self._context is not None:
            return ForkedWorker(self._context, env, log_path, argv)
        return ExecWorker(env, log_path, argv)
