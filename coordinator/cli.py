"""`spotbatch`: the one command-line entry point (also `python -m coordinator`).

Each command lives in `coordinator/commands/<name>.py` and adds its own parser; its handler returns an exit
code. This is the one place where errors become exit codes: an error of this project is one line on stderr
and the exit code its class carries (`coordinator/errors.py`, the table in the README); Ctrl-C is 130.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from importlib import metadata

from coordinator.commands import (
    budget,
    burst,
    data,
    image,
    infra,
    model,
    policy,
    preflight,
    report,
    run,
    simulate,
    status,
    whatif,
)
from coordinator.errors import (
    EXIT_INTERRUPTED,
    BudgetGuardExceeded,
    Declined,
    PreflightFailed,
    SpotbatchError,
)
from inference.errors import WorkerError

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
    run,
    status,
    simulate,
    whatif,
    burst,
    report,
)


# commands that write under runs/ (state, spend log, ledger, predictions, Terraform state): their files are
# the user's alone, 0600 in 0700 folders. Builds (data, model, image) keep the usual modes: the worker
# image's own user must read the model.
PRIVATE_COMMANDS = frozenset(
    {"budget", "preflight", "infra", "policy", "run", "status", "simulate", "whatif", "burst", "report"}
)


def version() -> str:
    try:
        return metadata.version("spotbatch")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spotbatch", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument("--version", action="version", version=f"spotbatch {version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    if args.command in PRIVATE_COMMANDS:
        os.umask(0o077)
    try:
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


if __name__ == "__main__":
    sys.exit(main())
