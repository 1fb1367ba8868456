"""Simulator only: the "rented box" of a burst against the stand-in: a real sshd on 127.0.0.1.

Debian's `openssh-server` (`make test` installs it where apt-get can), started as the current user on a
free loopback port with a throwaway host key and client key made for the occasion, password logins off,
so the burst workflow's ssh, rsync and remote commands run over real SSH. `SshdUnavailable` says why it
cannot start (no sshd binary, cannot bind), and tests skip with that reason.

Usage::

    with LocalSshd(tmp_path / "box") as box:
        box.port, box.user, box.client_key           # what `spotbatch burst` needs to log in
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import BinaryIO, Self

from coordinator.background import Background
from coordinator.errors import SshdUnavailable

READY_TIMEOUT_SECONDS = 10.0  # sshd listens within a few hundred ms; ten seconds means it will not


def find_sshd() -> str:
    found = shutil.which("sshd") or next(
        (p for p in ("/usr/sbin/sshd", "/usr/local/sbin/sshd") if os.path.exists(p)), None
    )
    if not found:
        raise SshdUnavailable("no sshd binary (Debian: apt-get install openssh-server; `make test` does it)")
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalSshd(Background):
    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir
        self.user = getpass.getuser()
        self.port = 0
        self.client_key = work_dir / "client_key"
        self._process: subprocess.Popen[bytes] | None = None
        self._log: BinaryIO | None = None

    def start(self) -> Self:
        sshd = find_sshd()
        if shutil.which("ssh-keygen") is None or shutil.which("ssh") is None:
            raise SshdUnavailable("no ssh / ssh-keygen (Debian: apt-get install openssh-client)")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        host_key = self.work_dir / "host_key"
        for key in (host_key, self.client_key):
            if not key.exists():
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        (self.work_dir / "authorized_keys").write_text(self.client_key.with_suffix(".pub").read_text())
        (self.work_dir / "authorized_keys").chmod(0o600)
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
        self.port = _free_port()
        config = self.work_dir / "sshd_config"
        config.write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {host_key}",
                    f"PidFile {self.work_dir / 'sshd.pid'}",
                    f"AuthorizedKeysFile {self.work_dir / 'authorized_keys'}",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "UsePAM no",
                    "StrictModes no",
                    "PermitRootLogin prohibit-password",
                    "X11Forwarding no",
                    "AllowTcpForwarding no",
                    "LogLevel ERROR",
                ]
            )
            + "\n"
        )
        self._log = open(self.work_dir / "sshd.log", "ab")  # noqa: SIM115 (closed in stop())
        self._process = subprocess.Popen(
            [sshd, "-D", "-e", "-f", str(config)], stdout=self._log, stderr=self._log
        )
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                reason = (self.work_dir / "sshd.log").read_text(errors="replace").strip()[-300:]
                self.close()
                raise SshdUnavailable(f"sshd exited with {self._process.returncode}: {reason}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.close()
        raise SshdUnavailable(
            f"sshd did not listen on 127.0.0.1:{self.port} within {READY_TIMEOUT_SECONDS:g} s"
        )

    def close(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
