"""Simulator only: the machines behind moto's instances, booted by the user-data Terraform rendered.

moto keeps instance records but runs nothing. This runtime watches them and plays each instance's machine:

- an instance of the project that moto reports `running` boots (in its own thread): the runtime reads its
  user-data back from EC2 (`DescribeInstanceAttribute`: the launch template's rendered boot script) and
  runs it under bash, the stand-ins of `standins.py` first on its PATH (docker, shutdown, dnf), the
  metadata service at `AWS_EC2_METADATA_SERVICE_ENDPOINT` serving its tags and its role's credentials;
- `docker pull` fetches the image's manifest from ECR with the role's credentials; `docker run` starts the
  worker with the container's environment, output shipped to CloudWatch (`fork_daemon.py`);
- `shutdown -h +N` (N cloud minutes; `now`) terminates the instance; an instance terminated by someone
  else loses its processes: SIGTERM, as an OS shutdown does, then SIGKILL after `kill_grace`. The emulator
  shows it shutting-down until its machine has powered off, then terminated, as EC2 does (`moto_main`).

Container mode (`containers=ContainerMode.start(podman)`, `container_machine.py`): `docker` is a shim over
podman that runs the real worker image; no fork server, no pacing: the image boots as it boots here.

Usage::

    with InstanceRuntime(admin, image, imds=imds, log_dir=run_dir / "workers", clock=clock) as runtime:
        runtime.kill("i-0abc", hard=True)    # what the injector does at the end of a notice's grace
"""

from __future__ import annotations

import base64
import json
import logging
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from coordinator.background import Background
from coordinator.job.aws import list_instances
from coordinator.job.core import TAG_SEGMENT, CloudClock
from coordinator.sim.container_machine import ContainerMode, ContainerWorker
from coordinator.sim.ec2_events import INSTANCE_SHUTDOWN, telling_machine, with_state_reason
from coordinator.sim.fork_daemon import ForkDaemon
from coordinator.sim.host_agent import HostAgent, Reply
from coordinator.sim.lifeline import popen_tied
from coordinator.sim.machine import (
    LAUNCH_REPORT,
    MachineImage,
    RoleSession,
    SimulatedInstance,
    script_env,
    stop_processes,
)
from coordinator.sim.metadata_server import MetadataServer
from coordinator.sim.standins import install as install_standins
from coordinator.sim.worker_boot import BootMode, WorkerLauncher
from coordinator.stack.target import AwsTarget

POLL_SECONDS = 0.5  # how often the runtime looks at moto: boots and kills lag by at most this (wall)
KILL_GRACE_SECONDS = 2.0  # SIGTERM, then SIGKILL: a worker drains one batch in well under this
log = logging.getLogger(__name__)


class InstanceRuntime(Background):
    def __init__(
        self,
        target: AwsTarget,
        image: MachineImage,
        *,
        imds: MetadataServer,
        log_dir: Path,
        clock: CloudClock,
        boot: BootMode = "fork",
        kill_grace: float = KILL_GRACE_SECONDS,
        poll_every: float = POLL_SECONDS,
        job_id: str | None = None,
        launch_seconds: Callable[[dict[str, str]], float] | None = None,
        launched_at: Callable[[str], float | None] | None = None,
        containers: ContainerMode | None = None,
    ) -> None:
        """`launch_seconds(tags)`: the drawn launch (cloud s); the worker is held that long after the launch
        call's answer (`launched_at(id)`, wall; else when seen here). None: it starts as soon as it can.
        `containers`: container mode (the real image through podman) instead of forked workers."""
        self.launch_seconds, self.launched_at = launch_seconds, launched_at
        # absolute: each machine's boot script runs with its own folder as the working directory
        log_dir = log_dir.absolute()
        self.target, self.image, self.imds, self.log_dir, self.clock = target, image, imds, log_dir, clock
        self.kill_grace, self.poll_every, self.job_id = kill_grace, poll_every, job_id
        self.ec2, self.iam, self.sts = target.client("ec2"), target.client("iam"), target.client("sts")
        self._powered_off = with_state_reason(target.client("ec2"), INSTANCE_SHUTDOWN)  # EC2's reason
        # the emulator holds a terminated instance in shutting-down while its machine powers off
        self._telling = {word: telling_machine(target.client("ec2"), word) for word in ("up", "off")}
        self.containers = containers
        self.instances: dict[str, SimulatedInstance] = {}
        self.lock = threading.RLock()
        self.daemon = None if containers else ForkDaemon(image, WorkerLauncher(boot), log_dir, self.lock)
        self.errors: list[str] = []
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="instance-runtime", daemon=True)
        self._home = Path(tempfile.mkdtemp(prefix="spotbatch-sim-"))  # short: a unix socket path is < 108
        self._agent = HostAgent(self._home / "agent.sock", self)
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="machine-spawner")

    # -- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> InstanceRuntime:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        install_standins(
            self._home / "bin", docker_module=self.containers.DOCKER if self.containers else None
        )
        self._agent.__enter__()
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop watching, then power off every machine still up (workers: SIGTERM, SIGKILL after grace)."""
        self._closed.set()
        if self._thread.is_alive():
            self._thread.join()
        with self.lock:
            up = [i for i in self.instances.values() if not i.gone]
        for instance in up:
            self._power_off(instance, hard=False)
        self._agent.__exit__(None, None, None)
        self._spawner.shutdown(wait=True)
        if self.containers is not None:
            self.containers.sweep()
        self.errors += self._agent.errors
        shutil.rmtree(self._home, ignore_errors=True)

    # -- what the injector and tests use ---------------------------------------------------------------------

    def running(self) -> dict[str, SimulatedInstance]:
        """Machines that are up (booting, or running their worker)."""
        with self.lock:
            return {k: v for k, v in self.instances.items() if not v.gone}

    def kill(self, instance_id: str, *, hard: bool) -> None:
        """Power a machine off: its worker gets SIGKILL now (`hard`), or SIGTERM then SIGKILL after grace."""
        with self.lock:
            instance = self.instances.get(instance_id)
        if instance is not None:
            self._power_off(instance, hard=hard)

    # -- the loop --------------------------------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._closed.wait(self.poll_every):
            try:
                self.step()
            except Exception as error:  # moto hiccup: log it and look again next time
                self.errors.append(f"{type(error).__name__}: {error}")
                log.warning("instance runtime: %s", error)

    def step(self) -> None:
        """One look at moto: boot the new instances, power off the machines of terminated ones."""
        listed = list_instances(self.ec2.describe_instances, job_id=self.job_id)
        for instance_id, info in listed.items():
            with self.lock:
                known = self.instances.get(instance_id)
            if known is None and info.state == "running":  # EC2 boots whatever was launched
                self._start(instance_id, info.tags, info.instance_type)
            elif known is not None and not known.gone and not info.alive:
                threading.Thread(target=self._power_off, args=(known, False), daemon=True).start()

    def _start(self, instance_id: str, tags: dict[str, str], instance_type: str = "") -> None:
        """Known at once (never booted twice), booted in its own thread: machines boot side by side."""
        instance = SimulatedInstance(instance_id, tags, time.time(), None, instance_type=instance_type)
        if self.launch_seconds is not None:
            launched = (self.launched_at(instance_id) if self.launched_at else None) or instance.booted_at
            instance.launch_seconds = self.launch_seconds(tags)
            instance.ready_at = launched + self.clock.wall(instance.launch_seconds)
        with self.lock:
            self.instances[instance_id] = instance
        self._tell(instance_id, "up")
        threading.Thread(target=self._boot_safely, args=(instance,), daemon=True).start()

    def _tell(self, instance_id: str, word: str) -> None:
        """The emulator hears that a machine runs the instance ("up") or has powered off ("off")."""
        try:
            self._telling[word].describe_instances(InstanceIds=[instance_id])
        except Exception as error:  # forgotten already: nothing of it is left to end
            log.debug("machine %s %s: %s", instance_id, word, error)

    def _boot_safely(self, instance: SimulatedInstance) -> None:
        try:  # a moto hiccup leaves the machine down: the coordinator sees a boot that never beats
            self._boot(instance, instance.instance_id, instance.tags)
        except Exception as error:
            self.errors.append(f"boot {instance.instance_id}: {type(error).__name__}: {error}")

    def _boot(self, instance: SimulatedInstance, instance_id: str, tags: dict[str, str]) -> None:
        attribute = self.ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
        script = base64.b64decode(attribute.get("UserData", {}).get("Value", "")).decode("utf-8")
        role = RoleSession.of_instance(self.target, self.ec2, instance_id, iam=self.iam, sts=self.sts)
        instance.role = role
        self.imds.register(
            instance_id,
            tags,
            role_name=role.name if role else "",
            role_credentials=role.credentials if role else None,
        )
        home = self.log_dir / "machines" / instance_id
        home.mkdir(parents=True, exist_ok=True)
        (home / "user-data.sh").write_text(script, encoding="utf-8")
        if instance.launch_seconds is not None:  # the pace summary weighs its bill against the model's
            (home / LAUNCH_REPORT).write_text(json.dumps({"launch_seconds": instance.launch_seconds}))
        env = script_env(
            self._home / "bin",
            home,
            imds=self.imds.endpoint_for(instance_id),
            agent=self._agent.path,
            machine=instance_id,
            endpoint=self.target.endpoint,
        )
        if self.containers is not None:  # its worker is the container the shim will run
            env |= self.containers.prepare(
                instance, home, self.log_dir / f"{tags.get(TAG_SEGMENT)}.{instance_id}.log"
            )
        # started from the one long-lived spawner thread: a tied child dies with the thread that started it
        self._spawner.submit(self._spawn, instance, home, env).result()

    def _spawn(self, instance: SimulatedInstance, home: Path, env: dict[str, str]) -> None:
        with self.lock, open(home / "cloud-init-output.log", "ab") as output:
            if not instance.gone:  # not terminated while it booted
                instance.script = popen_tied(
                    ["bash", str(home / "user-data.sh")],
                    env=env,
                    cwd=home,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )

    # -- what the stand-ins ask (host agent threads) ---------------------------------------------------------

    def _machine(self, machine: str) -> SimulatedInstance:
        with self.lock:
            instance = self.instances.get(machine)
        if instance is None or instance.gone:
            raise RuntimeError(f"machine {machine} is not up")
        return instance

    def pull(self, machine: str, image: str) -> str:
        return self._daemon().pull(self._machine(machine), image)

    def run(self, machine: str, request: dict[str, Any], started: Reply) -> int:
        return self._daemon().run(self._machine(machine), request, started)

    def _daemon(self) -> ForkDaemon:
        if self.daemon is None:  # container mode: docker is the podman shim, never the host agent
            raise RuntimeError("docker pull/run go to podman on a container-mode machine")
        return self.daemon

    def shutdown(self, machine: str, minutes: float | None) -> None:
        with self.lock:
            known = self.instances.get(machine)
        if known is not None and known.gone:  # asked while powering off (the boot script's EXIT trap)
            return
        instance = self._machine(machine)
        if minutes is not None:
            instance.shutdowns.append(minutes)
        if instance.power_off is not None:
            instance.power_off.cancel()
            instance.power_off = None
        if minutes is None:
            return
        if minutes <= 0:
            self._terminate(machine)
            return
        timer = threading.Timer(self.clock.wall(minutes * 60), self._terminate, args=(machine,))
        timer.daemon = True
        instance.power_off = timer
        timer.start()

    def _terminate(self, machine: str) -> None:
        """The machine powered itself off: EC2 terminates the instance (the loop stops its processes)."""
        try:
            self._powered_off.terminate_instances(InstanceIds=[machine])
        except Exception as error:  # already gone: the coordinator got there first
            log.debug("terminate %s: %s", machine, error)

    # -- powering off ----------------------------------------------------------------------------------------

    def _power_off(self, instance: SimulatedInstance, hard: bool) -> None:
        with self.lock:
            if instance.gone:
                return
            instance.gone = True
        stop_processes(instance, hard=hard, grace=self.kill_grace)
        if isinstance(instance.worker, ContainerWorker):  # one its killed shim was still starting
            instance.worker.remove()
        self._tell(instance.instance_id, "off")  # EC2 ends its shutting-down: it shows terminated
