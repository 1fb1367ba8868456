"""A worker subprocess whose log the test can watch: wait for batch N, then signal it."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path

BATCH_LINE = re.compile(r"batch (\d+)/(\d+) ")


class WorkerProcess:
    def __init__(self, args: list[str], cwd: Path | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "inference.worker", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
        )
        self.lines: list[str] = []
        self.last_batch = 0
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                match = BATCH_LINE.search(line)
                if match:
                    self.last_batch = int(match.group(1))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for_batch(self, batch: int, timeout: float = 60.0) -> bool:
        """True once the log shows batch `batch` (1-based) done; False if the worker ended first."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self.last_batch < batch:
                if self.process.poll() is not None and not self._reader.is_alive():
                    return False
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"worker did not reach batch {batch}: {self.lines[-5:]}")
                self._changed.wait(min(remaining, 0.2))
        return True

    def signal(self, signum: int) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signum)

    def wait(self, timeout: float = 120.0) -> int:
        code = self.process.wait(timeout)
        self._reader.join(timeout)
        assert self.process.stderr is not None
        self.process.stderr.close()
        return code

    @property
    def log(self) -> str:
        return "\n".join(self.lines)
