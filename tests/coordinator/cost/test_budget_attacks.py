"""The budget guard attacked: its lock files deleted, its log replaced, threads in test mode, a full disk,
paths that are not a log, amounts that are not amounts. Each case was a break found on main (issue 15)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy
import pytest

from coordinator.cost.budget import BudgetGuard, parse_amount
from coordinator.errors import BudgetConfigError, BudgetGuardExceeded
from tests.host_load import scaled

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def no_budget_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LYNX_CLOUD_BUDGET_USD", raising=False)
    monkeypatch.delenv("BUDGET_GUARD_TEST_MODE", raising=False)


def spotbatch(*args: str, honour_modes: bool = False) -> subprocess.CompletedProcess[str]:
    """`spotbatch ARGS`; with `honour_modes`, as root without the capability to write where modes forbid."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": "/tmp"}
    env.pop("LYNX_CLOUD_BUDGET_USD", None)
    prefix: list[str] = []
    if honour_modes and os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: a read-only folder cannot stop this process")
        prefix = [setpriv, "--bounding-set=-dac_override", "--inh-caps=-dac_override"]
    return subprocess.run(
        [*prefix, sys.executable, "-m", "coordinator", *args],
        capture_output=True,
        text=True,
        timeout=scaled(60),
        env=env,
        cwd="/",
    )


def authorize_in_threads(guard: BudgetGuard, count: int) -> int:
    passed: list[int] = []
    start = threading.Barrier(count)

    def one(index: int) -> None:
        start.wait()
        try:
            guard.authorize(f"op-{index}", 1.0)
            passed.append(index)
        except BudgetGuardExceeded:
            pass

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return len(passed)


def test_deleting_the_lock_file_in_a_loop_lets_nothing_extra_through(tmp_path: Path) -> None:
    log = tmp_path / "spend_log.jsonl"
    stop = threading.Event()

    def delete_locks() -> None:
        while not stop.is_set():
            for lock in tmp_path.glob("*.lock"):
                lock.unlink(missing_ok=True)

    attacker = threading.Thread(target=delete_locks)
    attacker.start()
    try:
        processes = [
            subprocess.Popen(
                [sys.executable, "-c", AUTHORIZE_ONE, str(log), str(i)],
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                stdout=subprocess.PIPE,
                text=True,
            )
            for i in range(20)
        ]
        outcomes = [p.communicate(timeout=scaled(120))[0].strip() for p in processes]
    finally:
        stop.set()
        attacker.join()
    assert outcomes.count("ok") == 5 and outcomes.count("refused") == 15
    assert BudgetGuard(5.0, log).state().reserved == pytest.approx(5.0)


AUTHORIZE_ONE = """
import sys
from pathlib import Path
from coordinator.cost.budget import BudgetGuard
from coordinator.errors import BudgetGuardExceeded
try:
    BudgetGuard(5.0, Path(sys.argv[1])).authorize(f"op-{sys.argv[2]}", 1.0)
    print("ok")
except BudgetGuardExceeded:
    print("refused")
"""


def test_a_log_replaced_while_a_caller_waits_for_the_lock_is_opened_again(tmp_path: Path) -> None:
    log = tmp_path / "spend_log.jsonl"
    BudgetGuard(5.0, log).authorize("first", 1.0)
    holder = os.open(log, os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX)  # someone holds the log while the caller below waits for it
    outcome: list[str] = []

    def caller() -> None:
        try:
            BudgetGuard(5.0, log).authorize("second", 3.0)
            outcome.append("ok")
        except BudgetGuardExceeded:
            outcome.append("refused")

    waiting = threading.Thread(target=caller)
    waiting.start()
    waiting.join(0.5)
    assert waiting.is_alive()  # it waits on the old file's lock
    replacement = tmp_path / "replacement"
    shutil.copyfile(log, replacement)
    BudgetGuard(5.0, replacement).authorize("meanwhile", 2.0)  # the new file holds $3 reserved
    os.replace(replacement, log)
    fcntl.flock(holder, fcntl.LOCK_UN)
    os.close(holder)
    waiting.join(10)
    assert outcome == ["refused"]  # it counted the new file's $3: 3 + 3 > 5


def test_an_in_memory_guard_serialises_threads_that_share_it() -> None:
    for _ in range(30):
        guard = BudgetGuard(5.0, Path("unused"), in_memory=True)
        assert authorize_in_threads(guard, 20) == 5


def test_threads_sharing_a_file_guard_never_pass_the_ceiling(tmp_path: Path) -> None:
    guard = BudgetGuard(5.0, tmp_path / "spend_log.jsonl")
    assert authorize_in_threads(guard, 20) == 5


FULL_DISK = """
import os, resource, signal, sys
from pathlib import Path
from coordinator.cost.budget import BudgetGuard
from coordinator.errors import BudgetConfigError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
log = Path(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (log.stat().st_size + 20, resource.RLIM_INFINITY))
try:
    BudgetGuard(5.0, log).authorize("after-the-disk-filled", 1.0)
except BudgetConfigError as error:
    print(error)
"""


def test_a_full_disk_writes_no_half_line_and_the_guard_works_once_there_is_room(tmp_path: Path) -> None:
    log = tmp_path / "spend_log.jsonl"
    guard = BudgetGuard(5.0, log)
    guard.authorize("before", 1.0)
    before = log.read_bytes()
    child = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(log)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=scaled(60),
    )
    assert "could not record 'after-the-disk-filled' (nothing was written)" in child.stdout, child.stderr
    assert log.read_bytes() == before  # the short write was cut back: no torn line
    guard.authorize("after", 1.0)  # and the next call works
    assert guard.state().reserved == pytest.approx(2.0)


def test_repair_removes_only_a_torn_line_the_guard_began_and_keeps_a_copy(tmp_path: Path) -> None:
    log = tmp_path / "spend_log.jsonl"
    BudgetGuard(5.0, log).authorize("whole", 1.0)
    whole = log.read_bytes()
    torn = whole + b'{"ts": "2026-12-03T10:00:00+00:00", "op_la'
    log.write_bytes(torn)
    refused = spotbatch("budget", "status", "--spend-log", str(log))
    assert refused.returncode == 2 and "spotbatch budget repair" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    repaired = spotbatch("budget", "repair", "--spend-log", str(log))
    assert repaired.returncode == 0, repaired.stderr
    assert log.read_bytes() == whole
    copies = list(tmp_path.glob("spend_log.jsonl.before-repair-*"))
    assert len(copies) == 1 and copies[0].read_bytes() == torn
    assert spotbatch("budget", "status", "--spend-log", str(log)).returncode == 0
    log.write_bytes(whole + b"edited by hand")  # not a record the guard began: left for a person
    hand = spotbatch("budget", "repair", "--spend-log", str(log))
    assert hand.returncode == 2 and "left for you to read" in hand.stderr
    assert log.read_bytes() == whole + b"edited by hand"


def test_paths_that_are_not_a_log_give_one_line_and_exit_2(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    read_only = tmp_path / "read-only"
    read_only.mkdir()
    read_only.chmod(0o555)
    tmp_path.chmod(0o755)
    cases = {
        str(folder): "must be a regular file, and this is a folder",
        "/dev/null": "must be a regular file, and this is not a regular file",
        str(read_only / "spend_log.jsonl"): "cannot open the spend log: Permission denied",
    }
    for path, message in cases.items():
        for action in ("status", "check", "repair"):
            extra = ["--estimate", "1"] if action == "check" else []
            result = spotbatch("budget", action, *extra, "--spend-log", path, honour_modes=True)
            assert result.returncode == 2, (path, action, result.stderr)
            assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr
            assert "Traceback" not in result.stderr and "$5.00" not in result.stdout


@pytest.mark.parametrize(
    "amount", [b"1", bytearray(b"1"), numpy.bool_(True), True, 10**400, "1e400", float("inf")]
)
def test_things_that_are_not_amounts_are_refused(amount: object) -> None:
    with pytest.raises(BudgetConfigError, match="estimate must be a"):
        parse_amount(amount, "estimate")


def test_numbers_of_every_kind_are_amounts() -> None:
    assert [parse_amount(v, "x") for v in (1, 1.5, "2.25", numpy.float64(3.0), numpy.int64(4))] == [
        1.0,
        1.5,
        2.25,
        3.0,
        4.0,
    ]
