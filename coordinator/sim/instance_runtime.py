"""Simulator only: the machines behind moto's instances.

moto keeps instance records but runs nothing. This runtime watches `describe_instances` and plays the part
of each instance's operating system, as the launch template's user-data describes it:

- an instance of the project that moto reports `running` boots a local worker process, with the env that
  user-data builds from the instance's tags (input, row range, segment, attempt, market, bucket, model);
- when the worker exits (done, drained, failed), the instance shuts itself down, which terminates it
  (`instance_initiated_shutdown_behavior = terminate`): the runtime terminates it in moto;
- an instance terminated by someone else (the coordinator, the injector) loses its process: SIGTERM, as an
  OS shutdown does, then SIGKILL after `kill_grace` wall seconds.

Usage::

    with InstanceRuntime(ec2, settings, imds=imds, log_dir=run_dir / "workers") as runtime:
        ...                                  # the coordinator launches instances; workers appear
        runtime.kill("i-0abc", hard=True)    # what the injector does at the end of a notice's grace
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from coordinator.job.instances import list_instances
from coordinator.job.launch_contract import TAG_ATTEMPT, TAG_SEGMENT, worker_env
from coordinator.sim.metadata_server import MetadataServer
from coordinator.sim.worker_boot import BootMode, WorkerHandle, WorkerLauncher
from inference.interruption import METADATA_ENDPOINT_ENV

POLL_SECONDS = 0.5  # how often the runtime looks at moto: boots and kills lag by at most this (wall)
KILL_GRACE_SECONDS = 2.0  # SIGTERM, then SIGKILL: a worker drains one batch in well under this
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerSettings:
    """What the launch template's user-data passes to every worker (see worker_templates/user_data.sh)."""

    bucket: str
    model: str
    aws_env: dict[str, str]  # endpoint and credentials of the emulator, region
    batch_size: int = 64
    checkpoint_every: int = 50
    heartbeat_every: float = 1.0
    notice_poll_every: float = 0.25
    threads: int = 1  # each simulated instance gets a share of the host's cores, not all of them
    extra_env: dict[str, str] = field(default_factory=dict)

    def env_for(self, instance_id: str, tags: dict[str, str]) -> dict[str, str]:
        return {
            **self.aws_env,
            **worker_env(tags, bucket=self.bucket, instance_id=instance_id),
            "SPOTBATCH_MODEL": self.model,
            "SPOTBATCH_BATCH_SIZE": str(self.batch_size),
            "SPOTBATCH_CHECKPOINT_EVERY": str(self.checkpoint_every),
            "SPOTBATCH_HEARTBEAT_EVERY": str(self.heartbeat_every),
            "SPOTBATCH_NOTICE_POLL_EVERY": str(self.notice_poll_every),
            "SPOTBATCH_THREADS": str(self.threads),
            **self.extra_env,
        }


@dataclass(slots=True)
class SimulatedInstance:
    instance_id: str
    tags: dict[str, str]
    worker: WorkerHandle
    booted_at: float  # wall clock
    exit_code: int | None = None
    killed: str = ""  # "", "SIGTERM", "SIGKILL"


class InstanceRuntime:
    def __init__(
        self,
        ec2: Any,
        settings: WorkerSettings,
        *,
        imds: MetadataServer,
        log_dir: Path,
        boot: BootMode = "fork",
        kill_grace: float = KILL_GRACE_SECONDS,
        poll_every: float = POLL_SECONDS,
        job_id: str | None = None,
    ) -> None:
        self.ec2 = ec2
        self.settings = settings
        self.imds = imds
        self.log_dir = log_dir
        self.kill_grace = kill_grace
        self.poll_every = poll_every
        self.job_id = job_id
        self.launcher = WorkerLauncher(boot)
        self.instances: dict[str, SimulatedInstance] = {}
        self.lock = threading.RLock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="instance-runtime", daemon=True)
        self.errors: list[str] = []

    # -- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> InstanceRuntime:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop watching, then stop every worker still running (SIGTERM, SIGKILL after the grace)."""
        self._closed.set()
        if self._thread.is_alive():
            self._thread.join()
        with self.lock:
            running = [i for i in self.instances.values() if i.exit_code is None]
        for instance in running:
            self._stop_worker(instance, hard=False)

    def __enter__(self) -> InstanceRuntime:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    # -- what the injector and tests use ---------------------------------------------------------------------

    def running(self) -> dict[str, SimulatedInstance]:
        with self.lock:
            return {k: v for k, v in self.instances.items() if v.exit_code is None}

    def kill(self, instance_id: str, *, hard: bool) -> None:
        """Signal an instance's worker: SIGKILL now (`hard`), or SIGTERM then SIGKILL after the grace."""
        with self.lock:
            instance = self.instances.get(instance_id)
        if instance is not None:
            self._stop_worker(instance, hard=hard)

    # -- the loop --------------------------------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._closed.wait(self.poll_every):
            try:
                self.step()
            except Exception as error:  # moto hiccup: log it and look again next time
                self.errors.append(f"{type(error).__name__}: {error}")
                log.warning("instance runtime: %s", error)

    def step(self) -> None:
        """One look at moto: boot new instances, stop the processes of gone ones, shut down finished ones."""
        listed = list_instances(self.ec2.describe_instances, job_id=self.job_id)
        for instance_id, info in listed.items():
            with self.lock:
                known = self.instances.get(instance_id)
            if known is None and info.state == "running" and info.segment:
                self._boot(instance_id, info.tags)
            elif known is not None and known.exit_code is None and not info.alive:
                threading.Thread(target=self._stop_worker, args=(known, False), daemon=True).start()
        with self.lock:
            instances = list(self.instances.values())
        for instance in instances:
            if instance.exit_code is None:
                code = instance.worker.exit_code()
                if code is not None:
                    instance.exit_code = code
                    still = listed.get(instance.instance_id)
                    if still is not None and still.alive:  # user-data's last line: shutdown -h now
                        self.ec2.terminate_instances(InstanceIds=[instance.instance_id])

    def _boot(self, instance_id: str, tags: dict[str, str]) -> None:
        env = self.settings.env_for(instance_id, tags)
        env[METADATA_ENDPOINT_ENV] = self.imds.endpoint_for(instance_id)
        log_path = self.log_dir / f"{tags[TAG_SEGMENT]}.{instance_id}.log"
        worker = self.launcher.start(env, log_path)
        with self.lock:
            self.instances[instance_id] = SimulatedInstance(instance_id, tags, worker, time.time())
        log.debug("booted %s for %s (pid %s)", instance_id, tags.get(TAG_ATTEMPT), worker.pid)

    def _stop_worker(self, instance: SimulatedInstance, hard: bool) -> None:
        if hard:
            instance.worker.signal(signal.SIGKILL)
            instance.killed = "SIGKILL"
        else:
            instance.worker.signal(signal.SIGTERM)
            instance.killed = instance.killed or "SIGTERM"
            if instance.worker.wait(self.kill_grace) is None:
                instance.worker.signal(signal.SIGKILL)
                instance.killed = "SIGKILL"
        code = instance.worker.wait(self.kill_grace)
        with self.lock:
            instance.exit_code = code if code is not None else -9
