"""`exit_after`: a command's code, its output, threads and exit handlers as at a normal exit, and no
interpreter teardown after them (where pyarrow's thread pools sometimes abort: exit -6)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.host_load import scaled

PROGRAM = """
import atexit, sys, threading, time
from inference.process_exit import exit_after

class Global:
    def __del__(self):
        print("torn down", flush=True)  # the interpreter's teardown: skipped

kept = Global()

def main():
    atexit.register(lambda: print("exit handler ran"))
    threading.Thread(target=lambda: (time.sleep(0.3), print("thread finished"))).start()
    print("main done")  # stdout is a pipe: block-buffered, flushed on the way out
    return {code}

exit_after(main)
"""


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROGRAM.format(code=code)], capture_output=True, text=True, timeout=scaled(60)
    )


def test_the_code_output_threads_and_exit_handlers_are_kept_and_the_teardown_skipped() -> None:
    done = run("7")
    assert done.returncode == 7, done.stderr
    assert done.stdout.splitlines() == ["main done", "thread finished", "exit handler ran"]
    assert done.stderr == ""


@pytest.mark.parametrize(
    ("code", "exit_code", "stderr"),
    [
        ("sys.exit(None)", 0, ""),
        ("sys.exit(2)", 2, ""),
        ("sys.exit('usage: bad flag')", 1, "usage: bad flag\n"),
    ],
)
def test_a_system_exit_ends_as_python_ends_it(code: str, exit_code: int, stderr: str) -> None:
    ended = run(code)
    assert (ended.returncode, ended.stderr) == (exit_code, stderr)
    assert ended.stdout.splitlines() == ["main done", "thread finished", "exit handler ran"]


def test_the_command_line_exits_with_its_code_and_says_its_line() -> None:
    version = subprocess.run(
        [sys.executable, "-m", "coordinator", "--version"], capture_output=True, text=True, timeout=scaled(60)
    )
    assert version.returncode == 0 and version.stdout.startswith("spotbatch ")
    refused = subprocess.run(
        [sys.executable, "-m", "coordinator", "plan", "--rows", "0"],
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert (refused.returncode, refused.stderr) == (2, "error: --rows 0: a whole number of at least 1\n")
