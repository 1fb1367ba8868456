"""A worker process whose log the test can watch: wait for batch N, then signal it.

Each worker is forked from a server that has already imported torch and transformers (the simulator's
`fork` boot, `coordinator/sim/worker_boot.py`): the same `inference.worker.main`, its own process and
session, real signals and exit codes, but a boot of a fraction of a second instead of the 4-5 s of imports
that a test restarting a worker twenty times would otherwise spend on every restart."""

from __future__ import annotations

import os
import re
import tempfile
import threading
import time
from pathlib import Path

from coordinator.sim.worker_boot import WorkerHandle, WorkerLauncher

BATCH_LINE = re.compile(r"batch (\d+)/(\d+) ")
_LAUNCHER: WorkerLauncher | None = None


def launcher() -> WorkerLauncher:
    global _LAUNCHER
    if _LAUNCHER is None:
        _LAUNCHER = WorkerLauncher("fork")
    return _LAUNCHER


class WorkerProcess:
    def __init__(self, args: list[str]) -> None:
        handle, name = tempfile.mkstemp(prefix="worker-", suffix=".log")
        os.close(handle)
        self.log_path = Path(name)
        # the test's environment (SPOTBATCH_TORCH_THREADS, AWS_ENDPOINT_URL, the metadata endpoint, ...)
        self.process: WorkerHandle = launcher().start(dict(os.environ), self.log_path, tuple(args))
        self.lines: list[str] = []
        self.last_batch = 0
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        with open(self.log_path, encoding="utf-8", errors="replace") as log:
            pending = ""
            while True:
                chunk = log.read()
                if not chunk:
                    if self.process.exit_code() is not None:
                        chunk = log.read()  # what was written just before the exit
                        if not chunk:
                            break
                    else:
                        time.sleep(0.02)
                        continue
                pending += chunk
                *complete, pending = pending.split("\n")
                with self._changed:
                    for line in complete:
                        self.lines.append(line)
                        match = BATCH_LINE.search(line)
                        if match:
                            self.last_batch = int(match.group(1))
                    self._changed.notify_all()
        with self._changed:
            if pending:
                self.lines.append(pending)
            self._changed.notify_all()

    def wait_for_batch(self, batch: int, timeout: float = 60.0) -> bool:
        """True once the log shows batch `batch` (1-based) done; False if the worker ended first."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self.last_batch < batch:
                if self.process.exit_code() is not None and not self._reader.is_alive():
                    return False
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"worker did not reach batch {batch}: {self.lines[-5:]}")
                self._changed.wait(min(remaining, 0.2))
        return True

    def signal(self, signum: int) -> None:
        self.process.signal(signum)

    def wait(self, timeout: float = 120.0) -> int:
        code = self.process.wait(timeout)
        if code is None:
            raise TimeoutError(f"worker still running after {timeout} s: {self.lines[-5:]}")
        self._reader.join(timeout)
        self.log_path.unlink(missing_ok=True)
        return code

    @property
    def log(self) -> str:
        return "\n".join(self.lines)
