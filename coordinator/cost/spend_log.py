"""The budget guard's append-only log on disk (or in memory): locked, read, appended whole, repaired.

One job: bytes. What the lines mean is `budget.py`'s. Every read-check-append of the guard runs inside
`with log.locked():`, which holds an exclusive `flock` on the log file itself (opened 0600 in a 0700
folder) and, for threads of one process, a thread lock. A log deleted or replaced while a caller waited for
the lock is noticed (the locked file is no longer the one at the path) and opened again. `append` writes a
line whole or not at all: one checked `write`; a short write (a full disk) is cut back to where it began.
A torn last line (no newline) stops every read with an error naming `spotbatch budget repair`, which
removes it only if it is a prefix of a record the guard writes, after copying the whole log aside.

With `in_memory=True` (`BUDGET_GUARD_TEST_MODE=1`) nothing touches the disk; the thread lock still holds.

Usage::

    log = SpendLog(Path("runs/budget/spend_log.jsonl"))
    with log.locked():
        lines = log.lines()
        log.append('{"ts": ...}')
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from coordinator.errors import BudgetConfigError

RECORD_START = b'{"ts": "'  # how every record the guard writes begins (`SpendEntry.to_json`)


TAIL_BYTES = 64  # a mark keeps the bytes before it: a log changed there since is read whole again


@dataclass(frozen=True, slots=True)
class Mark:
    """How far a reader has read the log: its file (inode), the byte offset and line count after the last
    line read, the bytes just before that offset, and whether that read began again from the start."""

    inode: int = 0
    offset: int = 0
    lines: int = 0
    tail: bytes = b""
    restart: bool = True


@dataclass(frozen=True, slots=True)
class RepairResult:
    copy: Path | None  # the whole log before the repair; None: nothing to repair
    removed: bytes


class SpendLog:
    def __init__(self, path: Path, *, in_memory: bool = False) -> None:
        self.path = Path(path)
        self.in_memory = in_memory
        self._memory: list[str] = []
        self._threads = threading.Lock()  # threads of one process share a guard (and its memory log)
        self._fd: int | None = None  # the locked file, inside `locked()`

    @property
    def where(self) -> str:
        return "memory" if self.in_memory else str(self.path)

    def _refuse(self, what: str, error: OSError | None = None) -> BudgetConfigError:
        why = f": {error.strerror or error}" if error is not None else ""
        return BudgetConfigError(f"{self.path}: {what}{why}")

    @contextmanager
    def locked(self) -> Iterator[None]:
        with self._threads:
            if self.in_memory:
                yield
                return
            self._fd = self._open_locked()
            try:
                yield
            finally:
                os.close(self._fd)  # closing releases the flock
                self._fd = None

    def _open_locked(self) -> int:
        """The log, opened (created 0600) and locked; opened again if it was replaced while we waited."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as error:
            raise self._refuse("cannot create the spend log's folder", error) from None
        for _ in range(100):
            self._check_regular_file()
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError as error:
                raise self._refuse("cannot open the spend log", error) from None
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return fd
            os.close(fd)  # deleted or replaced while we waited: the lock we hold guards nothing
        raise self._refuse("the spend log keeps being replaced while the guard locks it")

    def _check_regular_file(self) -> None:
        try:
            mode = os.stat(self.path).st_mode
        except FileNotFoundError:
            return
        except OSError as error:
            raise self._refuse("cannot read the spend log", error) from None
        if not stat.S_ISREG(mode):
            kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
            raise self._refuse(f"the spend log must be a regular file, and this is {kind}")

    def _fd_held(self) -> int:
        if self._fd is None:
            raise RuntimeError("the spend log is read and written only inside `locked()`")
        return self._fd

    def _read_bytes(self, offset: int = 0) -> bytes:
        fd = self._fd_held()
        size = os.fstat(fd).st_size
        chunks: list[bytes] = []
        while offset < size:
            chunk = os.pread(fd, min(1 << 20, size - offset), offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks)

    def lines(self) -> list[str]:
        return self.appended(Mark())[0]

    def appended(self, since: Mark) -> tuple[list[str], Mark]:
        """Inside `locked()`: the lines written after `since`, and the mark after them. A log replaced,
        cut (`repair`) or changed just before the mark is read whole again (the mark's `restart`), so a
        reader that keeps what it read (the guard's tally) reads each line once, not the log every time."""
        if self.in_memory:
            fresh = since.inode != -1 or since.offset > len(self._memory)
            start = 0 if fresh else since.offset
            return list(self._memory[start:]), Mark(-1, len(self._memory), len(self._memory), b"", fresh)
        try:
            fd = self._fd_held()
            status = os.fstat(fd)
            before = os.pread(fd, len(since.tail), since.offset - len(since.tail)) if since.tail else b""
            whole = status.st_ino != since.inode or status.st_size < since.offset or before != since.tail
            start = 0 if whole else since.offset
            raw = self._read_bytes(start)
        except OSError as error:
            raise self._refuse("cannot read the spend log", error) from None
        lines = self._decode(raw, 0 if whole else since.lines)
        end = start + len(raw)
        tail = os.pread(fd, min(TAIL_BYTES, end), end - min(TAIL_BYTES, end)) if end else b""
        return lines, Mark(status.st_ino, end, (0 if whole else since.lines) + len(lines), tail, whole)

    def _decode(self, raw: bytes, lines_before: int) -> list[str]:
        if raw and not raw.endswith(b"\n"):
            last, tail = lines_before + raw.count(b"\n") + 1, raw.rsplit(b"\n", 1)[-1][:120]
            raise BudgetConfigError(
                f"{self.path}:{last}: truncated line (no newline: a crash or a full disk mid-write?): "
                f"{tail!r}. The guard never rewrites the log by itself: `spotbatch budget repair` removes a "
                "torn line it began (keeping a copy of the log), or fix that line by hand"
            )
        try:
            return raw.decode("utf-8").splitlines()
        except UnicodeDecodeError as error:
            line = lines_before + raw.count(b"\n", 0, error.start) + 1
            raise BudgetConfigError(f"{self.path}:{line}: not UTF-8") from None

    def append(self, line: str, what: str) -> None:
        """`line` and a newline, whole or not at all; `what` names the record in an error."""
        if self.in_memory:
            self._memory.append(line)
            return
        fd = self._fd_held()
        data = (line + "\n").encode("utf-8")
        before = os.fstat(fd).st_size
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(errno.ENOSPC, f"only {written} of {len(data)} bytes written (disk full?)")
            os.fsync(fd)
        except OSError as error:
            try:
                os.ftruncate(fd, before)
            except OSError:
                raise self._refuse(
                    "could not write the record and could not cut the torn line back (run `spotbatch budget "
                    "repair` once the disk has room)",
                    error,
                ) from None
            raise self._refuse(f"could not record {what} (nothing was written)", error) from None

    def repair(self) -> RepairResult:
        """Inside `locked()`: cut a torn last line the guard began, after copying the log aside."""
        if self.in_memory:
            return RepairResult(None, b"")
        raw = self._read_bytes()
        if not raw or raw.endswith(b"\n"):
            return RepairResult(None, b"")
        keep = raw.rfind(b"\n") + 1
        torn = raw[keep:]
        if not torn.startswith(RECORD_START):
            raise BudgetConfigError(
                f"{self.path}: the last line {torn[:120]!r} has no newline and is not a record the guard "
                "began; it is left for you to read and fix by hand"
            )
        copy = self.path.with_name(f"{self.path.name}.before-repair-{datetime.now(UTC):%Y%m%dT%H%M%S%fZ}")
        try:
            shutil.copyfile(self.path, copy)
            copy.chmod(0o600)
            os.ftruncate(self._fd_held(), keep)
            os.fsync(self._fd_held())
        except OSError as error:
            raise self._refuse("could not repair the spend log", error) from None
        return RepairResult(copy, torn)
