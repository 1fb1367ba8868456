"""Simulator only, container mode: a simulated machine whose worker is the real image, run by podman.

The instance runtime's machines normally fork their worker from a warm server (`worker_boot.py`). In
container mode the boot script's `docker` is `podman_docker.py`, which runs the real worker image; the
runtime then sees the worker as a container named after the machine, and powers it off as an OS shutdown
stops Docker's containers: SIGTERM, then SIGKILL after the grace (`podman kill`). A container a killed shim
left behind is removed by name, and every container of a runtime by its label when the runtime closes.

Usage::

    mode = ContainerMode.start(engine)                   # podman, with the project's containers.conf
    instance.worker = ContainerWorker(mode, machine_id, home)
    mode.sweep()                                         # at the end: nothing of the runtime is left
"""

from __future__ import annotations

import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from coordinator.build.container_engine import Engine
from coordinator.sim.machine import SimulatedInstance
from coordinator.sim.podman_docker import CONTAINER_ENV, EXIT_FILE, LABEL_ENV, WORKER_LOG_ENV

LABEL_KEY = "spotbatch.sim-runtime"
WAIT_POLL_SECONDS = 0.2
EXIT_FILE_GRACE_SECONDS = 1.0  # a removed container's shim records its exit code well within this
PODMAN_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class ContainerMode:
    engine: Engine  # podman: the shim calls it by name, with the engine's environment
    runtime_id: str
    DOCKER = "coordinator.sim.podman_docker"  # the module behind a container-mode machine's `docker`

    @classmethod
    def start(cls, engine: Engine) -> ContainerMode:
        return cls(engine, uuid.uuid4().hex[:12])

    @property
    def label(self) -> str:
        return f"{LABEL_KEY}={self.runtime_id}"

    def prepare(self, instance: SimulatedInstance, home: Path, worker_log: Path) -> dict[str, str]:
        """A booting machine's worker (the container its shim will run); what its boot script's environment
        adds for the shim."""
        instance.worker = ContainerWorker(self, instance.instance_id, home)
        return {
            **self.engine.env,
            CONTAINER_ENV: container_name(instance.instance_id),
            LABEL_ENV: self.label,
            WORKER_LOG_ENV: str(worker_log),
        }

    def podman(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.engine.command(*args),
            env=self.engine.environment(),
            capture_output=True,
            text=True,
            timeout=PODMAN_TIMEOUT_SECONDS,
            check=False,
        )

    def sweep(self) -> list[str]:
        """Remove every container of this runtime still there; their ids."""
        listed = self.podman("ps", "-a", "-q", "--filter", f"label={self.label}").stdout.split()
        if listed:
            self.podman("rm", "-f", "--time", "0", *listed)
        return listed


def container_name(machine: str) -> str:
    return f"spotbatch-sim-{machine}"


class ContainerWorker:
    """The worker of a container-mode machine, as the runtime's `WorkerHandle`: signals go to the
    container; its exit code is what the shim recorded."""

    pid: int | None = None

    def __init__(self, mode: ContainerMode, machine: str, home: Path) -> None:
        self.mode, self.name, self._exit_file = mode, container_name(machine), home / EXIT_FILE

    def exit_code(self) -> int | None:
        try:
            return int(self._exit_file.read_text().strip())
        except (OSError, ValueError):
            return None

    def signal(self, number: int) -> None:
        if self.exit_code() is None:
            self.mode.podman("kill", "--signal", signal.Signals(number).name, self.name)

    def running(self) -> bool:
        return self.mode.podman("container", "exists", self.name).returncode == 0

    def wait(self, timeout: float) -> int | None:
        """The exit code once the shim recorded it; None after `timeout`, or at once when no container of
        the machine exists (it never started, or the machine's shim was killed)."""
        deadline = time.monotonic() + timeout
        while (code := self.exit_code()) is None and time.monotonic() < deadline:
            if not self.running():  # gone: its shim writes the code as it returns, if it still runs
                deadline = min(deadline, time.monotonic() + EXIT_FILE_GRACE_SECONDS)
            time.sleep(WAIT_POLL_SECONDS)
        return code

    def remove(self) -> None:
        """What a killed shim cannot do: the container goes, whatever state it is in."""
        self.mode.podman("rm", "-f", "--ignore", "--time", "0", self.name)
