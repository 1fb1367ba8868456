"""`spotbatch`: the one command-line entry point (also `python -m coordinator`).

Each command lives in `coordinator/commands/<name>.py` and adds its own parser; its handler returns an exit
code. This is the one place where errors become exit codes: an error of this project is one line on stderr
and the exit code its class carries (`coordinator/errors.py`, the table in the README); Ctrl-C is 130.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from importlib import metadata
from types import FrameType
from typing import NoReturn

from coordinator.commands import (
    budget,
    burst,
    data,
    fetch,
    image,
    infra,
    model,
    plan,
    policy,
    preflight,
    report,
    run,
    simulate,
    status,
    whatif,
)
from coordinator.errors import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    BudgetGuardExceeded,
    Declined,
    PreflightFailed,
    SpotbatchError,
)
from inference.errors import WorkerError
from inference.process_exit import exit_after

Handler = Callable[[argparse.Namespace], int]
# in the order `spotbatch --help` lists them: the flow of a job, then the tools around it
COMMANDS = (
    data,
    model,
    budget,
    preflight,
    infra,
    image,
    policy,
    plan,
    run,
    status,
    fetch,
    simulate,
    whatif,
    burst,
    report,
)


# commands that write under runs/ (state, spend log, ledger, predictions, Terraform state): their files are
# the user's alone, 0600 in 0700 folders. Builds (data, model, image) keep the usual modes: the worker
# image's own user must read the model.
PRIVATE_COMMANDS = frozenset(
    {
        "budget",
        "preflight",
        "infra",
        "policy",
        "run",
        "status",
        "fetch",
        "simulate",
        "whatif",
        "burst",
        "report",
    }
)


def version() -> str:
    try:
        return metadata.version("spotbatch")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a refused argument is one line naming the option and its value (`--rows 0: a whole
    number of at least 1`) and exit 2, as every other bad input; `--help` still shows the usage."""

    def error(self, message: str) -> NoReturn:
        named = re.fullmatch(r"argument ([^:]+): (.*)", message, re.DOTALL)
        if named:
            options = named.group(1).split("/")
            message = f"{next((o for o in options if o.startswith('--')), options[0])} {named.group(2)}"
        self.exit(EXIT_BAD_INPUT, f"error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="spotbatch", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--version", action="version", version=f"spotbatch {version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM stops a command as Ctrl-C does: through its clean stop (instances terminated, the cut job's
    records written, exit 130); Python's default would end the process at once, with nothing cleaned."""
    if threading.current_thread() is not threading.main_thread():  # signals go to the main thread only
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    if args.command in PRIVATE_COMMANDS:
        os.umask(0o077)
    try:
        with sigterm_as_interrupt():
            return handler(args)
    except (BudgetGuardExceeded, PreflightFailed, Declined) as refusal:
        print(f"refused: {refusal}", file=sys.stderr)
        return refusal.exit_code
    except (SpotbatchError, WorkerError) as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as error:
        why = credentials_problem(error) or service_problem(error)
        if why is None:
            raise  # a bug: its traceback
        print(f"error: {why}", file=sys.stderr)
        return EXIT_BAD_INPUT


def credentials_problem(error: Exception) -> str | None:
    """botocore's word when it has no usable AWS credentials, as one line saying where they come from."""
    from botocore.exceptions import (
        CredentialRetrievalError,
        NoCredentialsError,
        PartialCredentialsError,
        ProfileNotFound,
        SSOError,
        TokenRetrievalError,
    )

    known = (NoCredentialsError, PartialCredentialsError, ProfileNotFound, CredentialRetrievalError)
    if not isinstance(error, (*known, SSOError, TokenRetrievalError)):
        return None
    return (
        f"AWS credentials: {error}. Set AWS_PROFILE (after `aws sso login` or `aws configure`), or "
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
    )


def service_problem(error: Exception) -> str | None:
    """An AWS endpoint (or an emulator's) that failed past botocore's retries, as one line: answered 5xx,
    or not reached at all. A 4xx is the command's to explain; one that reaches here is a bug."""
    from botocore.exceptions import ClientError, ConnectionError, HTTPClientError

    if isinstance(error, ClientError):
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        if not isinstance(status, int) or status < 500:
            return None
        message = " ".join(str(error.response.get("Error", {}).get("Message", "")).split())[:200]
        said = f": {message}" if message else ""
        return (
            f"the endpoint answered {status} to {error.operation_name} after botocore's retries{said}; an "
            "emulator: is it running and healthy? AWS: try again later"
        )
    if isinstance(error, ConnectionError | HTTPClientError):
        return f"the endpoint did not answer: {' '.join(str(error).split())[:300]}"
    return None


def entry_point() -> NoReturn:
    """The `spotbatch` command (`python -m coordinator` too): `main`, then out without the interpreter's
    teardown (`inference/process_exit.py`)."""
    exit_after(main)


if __name__ == "__main__":
    entry_point()
