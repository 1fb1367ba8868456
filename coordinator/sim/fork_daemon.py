"""Simulator only, fork mode: what each machine's Docker daemon does for its `docker` stand-in.

`docker pull` fetches the image's manifest from ECR with the instance role's credentials (`machine.py`);
`docker run` starts the worker (`worker_boot.py`: forked from a warm server, or exec'd) with the container's
environment, its output shipped to CloudWatch Logs when the run asks for the awslogs driver (`awslogs.py`),
and answers with its exit code. The stand-ins reach it through the host agent (`host_agent.py`); container
mode has none of this: its `docker` is podman (`podman_docker.py`).

Usage::

    daemon = ForkDaemon(image, WorkerLauncher("fork"), log_dir, runtime.lock)
    daemon.run(instance, {"image": ..., "env": {...}}, started)     # the worker's exit code
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from coordinator.job.core import TAG_SEGMENT
from coordinator.sim.awslogs import shipper_for
from coordinator.sim.host_agent import Reply
from coordinator.sim.machine import MachineImage, SimulatedInstance, container_env, pull_image
from coordinator.sim.worker_boot import WorkerLauncher


class ForkDaemon:
    def __init__(
        self, image: MachineImage, launcher: WorkerLauncher, log_dir: Path, lock: threading.RLock
    ) -> None:
        """`lock`: the runtime's, which guards a machine's power state."""
        self.image, self.launcher, self.log_dir, self.lock = image, launcher, log_dir, lock

    def pull(self, instance: SimulatedInstance, image: str) -> str:
        if instance.role is None:
            raise RuntimeError(f"pull access denied for {image}: no instance profile, no credentials")
        status = pull_image(instance.role, image)
        instance.pulled.add(image)
        return status

    def run(self, instance: SimulatedInstance, request: dict[str, Any], started: Reply) -> int:
        machine, image = instance.instance_id, str(request["image"])
        if image not in instance.pulled:  # docker run pulls what it does not have
            self.pull(instance, image)
        log_path = self.log_dir / f"{instance.tags.get(TAG_SEGMENT, 'segment')}.{machine}.log"
        shipper = shipper_for(request, instance.role, log_path)
        with self.lock:  # a machine powered off meanwhile must not get a worker nobody stops
            if instance.gone:
                raise RuntimeError(f"machine {machine} powered off")
            home = self.log_dir / "machines" / machine
            env = container_env(
                self.image,
                request,
                home=str(home),
                hostname=machine,
                ready_at=instance.ready_at,
                instance_type=instance.instance_type,
            )
            worker = self.launcher.start(env, log_path)
            instance.worker = worker
        started({"status": f"started {worker.pid}"})
        if shipper is not None:
            shipper.start()
        try:
            code = worker.wait(float("inf"))
        finally:
            if shipper is not None:
                shipper.close()
        with self.lock:
            instance.exit_code = code
        return code if code is not None else -9
