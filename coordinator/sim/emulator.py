"""The embedded AWS: a moto server on 127.0.0.1, in its own process, always stopped.

The process is `coordinator.sim.moto_main`: moto, plus EC2's forgetting of terminated instances after
`terminated_visible_seconds` (an hour; the simulator passes an hour of its scaled clock) and a direct
lookup of a resource's own tags (moto's scans every tag in the region).

Usage::

    with MotoServer() as aws:          # free port, health-checked
        target = aws.target()          # AwsTarget: loopback endpoint, the emulator's own credentials
        set_iam_enforcement(aws.endpoint, True)   # moto checks IAM policies from now on
        ...                            # stopped on exit, on an exception and on Ctrl-C
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

from coordinator.background import Background
from coordinator.errors import EmulatorError
from coordinator.paths import checkout_first
from coordinator.sim.lifeline import popen_tied, record_pid, stop_leftover
from coordinator.sim.moto_main import EC2_TERMINATED_VISIBLE_SECONDS
from coordinator.stack.target import AwsTarget, require_loopback

READY_TIMEOUT_SECONDS = 30.0  # moto is ready in about 1 s; a cold import on a busy machine takes longer
STOP_GRACE_SECONDS = 5.0


def set_iam_enforcement(endpoint: str, enforced: bool) -> None:
    """moto checks every request against the caller's IAM policies from now on (`enforced`), or none.
    (moto's `INITIAL_NO_AUTH_ACTION_COUNT`, reset through its API: 0 = from the next request.)"""
    count = "0" if enforced else "inf"
    answer = requests.post(f"{require_loopback(endpoint)}/moto-api/reset-auth", data=count, timeout=10)
    if answer.status_code != 200:
        what = "enforce" if enforced else "stop enforcing"
        raise EmulatorError(f"moto refused to {what} IAM: {answer.text}")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


class MotoServer(Background):
    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        region: str = "us-east-1",
        log_path: Path | None = None,
        pid_file: Path | None = None,
        terminated_visible_seconds: float = EC2_TERMINATED_VISIBLE_SECONDS,
    ) -> None:
        self.host = host
        self.terminated_visible_seconds = terminated_visible_seconds  # wall s (`moto_main`)
        self.port = port or free_port(host)
        require_loopback(self.endpoint)
        self.region = region
        self.log_path = log_path
        self.pid_file = pid_file  # where its pid is kept, so that the next start stops a leftover
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def target(self) -> AwsTarget:
        return AwsTarget.emulator(self.endpoint, self.region)

    def start(self) -> MotoServer:
        if self.log_path:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        command = [
            *(sys.executable, "-m", "coordinator.sim.moto_main"),
            *("--terminated-visible-seconds", f"{self.terminated_visible_seconds:g}"),
            *("-H", self.host, "-p", str(self.port)),
        ]
        if self.pid_file is not None and (leftover := stop_leftover(self.pid_file)) is not None:
            print(f"stopped a leftover emulator of an earlier run (pid {leftover})", file=sys.stderr)
        # its own session: a Ctrl-C at the terminal reaches us, and we stop it in order; and it dies with
        # us if we are killed outright
        try:
            self.process = popen_tied(command, stdout=log, stderr=log, env=checkout_first(os.environ))
            if self.pid_file is not None:
                record_pid(self.pid_file, self.process.pid, " ".join(command[2:]))
        finally:
            if log is not subprocess.DEVNULL:
                log.close()  # type: ignore[union-attr]  # the server has its own copy of the descriptor
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise EmulatorError(
                    f"moto server exited with code {self.process.returncode} before it was ready"
                )
            try:
                if requests.get(f"{self.endpoint}/moto-api/", timeout=1).status_code < 500:
                    return self
            except requests.ConnectionError:
                pass
            time.sleep(0.1)
        self.close()
        raise EmulatorError(f"moto server on {self.endpoint} not ready after {READY_TIMEOUT_SECONDS:.0f} s")

    def close(self) -> None:
        if self.pid_file is not None:
            self.pid_file.unlink(missing_ok=True)
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
