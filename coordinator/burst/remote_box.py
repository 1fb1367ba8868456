"""A rented machine over SSH: run a command, send an allow-listed file list, fetch named artifacts.

Plain `ssh` and `rsync -e ssh` with the burst's own key and known-hosts file (a new host key is accepted
once, then pinned for the run), batch mode (never a password prompt), a connect timeout, and no agent or
forwarding. Every call has a timeout; a non-zero exit raises `RemoteError` with the command's tail.

Usage::

    box = RemoteBox(host="203.0.113.7", user="ubuntu", key=Path("~/.ssh/lambda"),
                    known_hosts=run / "known_hosts")
    box.run("nvidia-smi -L")
    box.send(payload, files, "spotbatch-burst/run1/payload")
    box.fetch(["spotbatch-burst/run1/payload/outputs"], run / "artifacts")
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from coordinator.errors import RemoteError

CONNECT_TIMEOUT_SECONDS = 10  # a booted box answers in well under this; a dead one never does
COMMAND_TIMEOUT_SECONDS = 3_600.0  # the real job's ceiling; shorter steps pass their own


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteBox:
    host: str
    user: str
    key: Path
    known_hosts: Path
    port: int = 22

    def ssh_options(self) -> list[str]:
        return [
            "-i",
            str(self.key),
            "-p",
            str(self.port),
            "-o",
            "BatchMode=yes",
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            f"ConnectTimeout={CONNECT_TIMEOUT_SECONDS}",
            "-o",
            "StrictHostKeyChecking=accept-new",
            "-o",
            f"UserKnownHostsFile={self.known_hosts}",
            "-o",
            "ForwardAgent=no",
            "-o",
            "LogLevel=ERROR",
        ]

    @property
    def target(self) -> str:
        return f"{self.user}@{self.host}"

    def run(
        self,
        command: str,
        *,
        stdin: str | None = None,
        timeout: float = COMMAND_TIMEOUT_SECONDS,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        argv = ["ssh", *self.ssh_options(), self.target, command]
        try:
            done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RemoteError(f"ssh {self.target}: {command!r} did not finish within {timeout:g} s") from None
        if check and done.returncode != 0:
            tail = (done.stderr or done.stdout).strip()[-600:]
            raise RemoteError(f"ssh {self.target}: {command!r} exited {done.returncode}: {tail}")
        return done

    def reachable(self) -> bool:
        return self.run("true", timeout=CONNECT_TIMEOUT_SECONDS + 5, check=False).returncode == 0

    def _rsync(self, args: Sequence[str], what: str, timeout: float) -> None:
        shell = "ssh " + " ".join(shlex.quote(o) for o in self.ssh_options())
        argv = ["rsync", "-a", "--protect-args", "-e", shell, *args]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RemoteError(f"rsync {what}: not done within {timeout:g} s") from None
        if done.returncode != 0:
            raise RemoteError(f"rsync {what} exited {done.returncode}: {done.stderr.strip()[-600:]}")

    def send(
        self, local_dir: Path, files: Sequence[str], remote_dir: str, *, timeout: float = 1_800.0
    ) -> None:
        """Exactly `files` (paths relative to `local_dir`), nothing else, into `remote_dir`."""
        self.run(f"mkdir -p {shlex.quote(remote_dir)}", timeout=60)
        listing = "\n".join(files) + "\n"
        list_path = self.known_hosts.parent / "send-files.txt"
        list_path.write_text(listing, encoding="utf-8")
        self._rsync(
            [f"--files-from={list_path}", f"{local_dir}/", f"{self.target}:{remote_dir}/"],
            f"to {self.target}:{remote_dir}",
            timeout,
        )

    def fetch(self, remote_paths: Sequence[str], local_dir: Path, *, timeout: float = 1_800.0) -> None:
        local_dir.mkdir(parents=True, exist_ok=True)
        for path in remote_paths:
            self._rsync([f"{self.target}:{path}", f"{local_dir}/"], f"from {self.target}:{path}", timeout)
