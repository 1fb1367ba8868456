"""The simulator's processes die with the process that started them.

The emulator (moto server), the instances' boot scripts and the workers run in sessions of their own, so
that a Ctrl-C at the terminal reaches only the coordinator, which stops them in order. A SIGKILL of the
coordinator (or of its whole process group) gives no chance to stop anything: without a lifeline they would
live on with parent 1, moto holding "running" instances and workers writing to it. With one, the kernel
kills each of them the moment its parent dies (Linux `PR_SET_PDEATHSIG`). Elsewhere (no prctl) the
lifeline is a no-op and `stop_leftover` below is the only net.

Note: Linux sends the signal when the *thread* that started the child ends. Children started from a
short-lived thread would die with it; every child here is started from a thread that lives as long as the
child should (the main thread, the runtime's loop, the host agent's connection that waits for the worker).

Usage::

    popen_tied(command, stdout=log)   # its own session, SIGKILLed if this process dies
    stop_leftover(pid_file)     # a previous run's emulator, if a kill left one (checked by command line)
    wait_for_group(pgid, 10.0)  # True once no process of the group runs (its leader may be gone before)
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PR_SET_PDEATHSIG = 1


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def tie_to_parent(parent_pid: int | None = None) -> None:
    """In a child: SIGKILL when the parent (`parent_pid`, or the current one) dies; exit now if it already
    has (the race before prctl)."""
    if _PRCTL is None:
        return
    parent = os.getppid() if parent_pid is None else parent_pid
    _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent or parent == 1:
        os._exit(1)


def die_with_parent(parent_pid: int) -> Callable[[], None]:
    """A `preexec_fn` for `subprocess.Popen` (runs in the child between fork and exec)."""
    return lambda: tie_to_parent(parent_pid)


def popen_tied(command: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """`subprocess.Popen` in a session of its own, tied to this process by the lifeline."""
    return subprocess.Popen(
        command, start_new_session=True, preexec_fn=die_with_parent(os.getpid()), **kwargs
    )


def record_pid(pid_file: Path, pid: int, marker: str) -> None:
    """Remember a child by pid and a marker of its command line, for `stop_leftover`."""
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    pid_file.write_text(f"{pid} {marker}\n", encoding="utf-8")


def stop_leftover(pid_file: Path) -> int | None:
    """Kill (SIGKILL, its process group) a process a previous run recorded, if it is still that process:
    alive, and its command line holds the recorded marker (a pid reused by anything else is left alone).
    Returns the pid stopped, or None."""
    try:
        pid_text, marker = pid_file.read_text(encoding="utf-8").split(maxsplit=1)
        pid = int(pid_text)
    except (FileNotFoundError, ValueError):
        return None
    marker = marker.strip()
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        command = ""
    stopped = None
    if marker and marker in command:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
            stopped = pid
    pid_file.unlink(missing_ok=True)
    return stopped


def _running_in_group(pgid: int) -> bool:
    """Whether a process of the group still runs. Its leader's children outlive it (bash ends at once on
    SIGTERM while the command it waits on finishes); orphans that ended wait as zombies for a reaper that
    may never come (a container's PID 1), so on Linux a group of zombies counts as ended."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for stat in proc.glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            state, _parent, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
            if int(group) == pgid and state != "Z":
                return True
    return False


def wait_for_group(pgid: int, timeout: float, poll: float = 0.05) -> bool:
    """Wait until no process of the group runs; False if one still does after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while _running_in_group(pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll)
    return True
