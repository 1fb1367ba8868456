"""Leave the process once a command is done, without the interpreter's teardown.

When a command's `main` returns, its work is finished: files closed, state committed, instances ended.
What CPython does after that, its finalization, destroys every object left and the modules, and native
libraries' thread pools with them; pyarrow's sometimes abort there ("terminate called without an active
exception", exit -6 after the command's last line: apache/arrow#34314; this project's CI saw it twice in
the coordinator, once after a finished job and once after a full disk's one-line error). So a command
leaves the way a normal exit does up to that point (Python's threads joined, its exit handlers run:
logging flushed; stdout and stderr flushed) and then ends with `os._exit` and the command's code.

Usage (an entry point)::

    if __name__ == "__main__":
        exit_after(main)
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Callable
from typing import NoReturn


def exit_after(main: Callable[[], int]) -> NoReturn:
    """`main()`'s code as the exit code. A SystemExit (argparse's usage error, --version) ends as Python
    would end it; an exception `main` lets out is printed and ends the process through Python's own exit,
    as before (a defect: the teardown does not matter then)."""
    try:
        code = main()
    except SystemExit as stop:
        code = _code_of(stop)
    _leave(code)


def _code_of(stop: SystemExit) -> int:
    if stop.code is None or isinstance(stop.code, int):
        return stop.code or 0
    print(stop.code, file=sys.stderr)  # sys.exit("message"): printed, exit 1
    return 1


def _leave(code: int) -> NoReturn:
    getattr(threading, "_shutdown", lambda: None)()  # non-daemon threads joined, executors' workers woken
    atexit._run_exitfuncs()  # logging.shutdown() and the rest, in the order Python runs them
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing more to say on it
            stream.flush()
    os._exit(code)
