"""The embedded AWS: a moto server on 127.0.0.1, in its own process, always stopped.

Usage::

    with MotoServer() as aws:          # free port, health-checked
        env = aws.client_env()         # endpoint + fake credentials for terraform, boto3 and workers
        ...                            # stopped on exit, on an exception and on Ctrl-C

`require_loopback` refuses an endpoint that is not on this machine: the emulator stack and its fake
credentials never talk to anything else.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlparse

import requests

from coordinator.errors import EmulatorError

READY_TIMEOUT_SECONDS = 30.0  # moto is ready in about 1 s; a cold import on a busy machine takes longer
STOP_GRACE_SECONDS = 5.0
FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
}


def emulator_session(env: Mapping[str, str]) -> Any:
    """A boto3 session on an emulator's credentials from `env` (fake ones: never the user's own)."""
    import boto3

    return boto3.session.Session(
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=env.get("AWS_SESSION_TOKEN"),
        region_name=env.get("AWS_DEFAULT_REGION", "us-east-1"),
    )


def require_loopback(endpoint: str) -> None:
    host = urlparse(endpoint).hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise EmulatorError(f"refusing emulator endpoint {endpoint!r}: only 127.0.0.0/8, ::1 or localhost")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


class MotoServer:
    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        region: str = "us-east-1",
        log_path: Path | None = None,
    ) -> None:
        require_loopback(f"http://{host}")
        self.host = host
        self.port = port or free_port(host)
        self.region = region
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def client_env(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
            **FAKE_CREDENTIALS,
        }

    def start(self) -> MotoServer:
        if self.log_path:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        command = [sys.executable, "-m", "moto.server", "-H", self.host, "-p", str(self.port)]
        # its own session: a Ctrl-C at the terminal reaches us, and we stop it in order
        try:
            self.process = subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True)
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
        self.stop()
        raise EmulatorError(f"moto server on {self.endpoint} not ready after {READY_TIMEOUT_SECONDS:.0f} s")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def __enter__(self) -> MotoServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
