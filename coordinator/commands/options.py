"""Argument groups that several commands share, declared once: the budget, the target (where the
instances run), and the job's shape (its rows and segments).

Every command that can spend money takes `--ceiling` and `--spend-log` through `add_budget_options` and
builds its guard with `budget_guard(args)`, so the options are spelled the same way everywhere. Every
command that sizes a job takes `--rows`, `--segments` and `--segment-minutes` through the shape options: one
spelling, one type each, and one validation (a count below 1 or minutes not above 0 is refused by the parser,
naming the option and the value).

Usage::

    add_budget_options(parser)
    add_target_options(parser)                 # --instance-type, --region (more on request)
    add_rows_option(parser, "rows of the job, without a file")
    add_segment_options(parser, segments="instances per run", minutes=None)   # --segments only
    guard = budget_guard(args)                 # --ceiling (or $LYNX_CLOUD_BUDGET_USD), --spend-log
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path
from typing import Any, TypeAlias

from coordinator.cost.budget import (
    CEILING_ENV,
    DEFAULT_CEILING_USD,
    TEST_MODE_ENV,
    BudgetGuard,
    test_mode_requested,
)
from coordinator.errors import BudgetConfigError
from coordinator.paths import spend_log_path
from coordinator.stack.defaults import DEFAULT_INSTANCE_TYPE
from coordinator.stack.target import region_or_emulators, resolve_region
from inference.layout import DATA_PREFIX

# what `add_subparsers()` returns; a string, since argparse's class is not subscriptable at run time
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Options: TypeAlias = Any  # a parser, an argument group or a mutually exclusive group: all add_argument()


MAX_SEGMENTS = 10_000  # a job's segments, an instance each: AWS Batch's array jobs stop at 10,000 children
JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,47}$")  # an S3 prefix, a role name, a tag: all fit
JOB_ID_RULE = "1-48 letters, digits, '.', '_' or '-', starting alphanumeric"


def valid_job_id(text: str) -> str:
    """argparse's type for a job's id (`run --job-id`, `fetch JOB`): it names an S3 prefix and a local
    folder, so `../x` or `a/b` is refused, not followed."""
    if not JOB_ID.match(text):
        raise argparse.ArgumentTypeError(f"{text!r}: {JOB_ID_RULE}")
    return text


def input_key(text: str) -> str:
    """argparse's type for `--input-key`: under data/ of the bucket, the one prefix the workers may read."""
    if not text.startswith(DATA_PREFIX) or text == DATA_PREFIX:
        raise argparse.ArgumentTypeError(
            f"{text}: the job's workers may read only {DATA_PREFIX}... of the stack's bucket: put the "
            "dataset there (spotbatch run --input FILE uploads it so)"
        )
    return text


def positive_int(text: str) -> int:
    """argparse's type for a count: a whole number, at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: a whole number of at least 1")
    return value


def positive_float(text: str) -> float:
    """argparse's type for a length or a rate: a finite number above 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text}: a finite number above 0")
    return value


def add_rows_option(options: Options, help: str, *, default: int | None = None) -> None:
    """`--rows`: the job's row count (a whole number, at least 1)."""
    options.add_argument("--rows", type=positive_int, default=default, help=help)


def segment_count(text: str) -> int:
    """argparse's type for `--segments`: a whole number from 1 to `MAX_SEGMENTS` (an instance each)."""
    value = positive_int(text)
    if value > MAX_SEGMENTS:
        raise argparse.ArgumentTypeError(f"{text}: at most {MAX_SEGMENTS:,} segments (an instance each)")
    return value


def add_segment_options(
    options: Options, *, segments: str | None, minutes: str | None = None, instances: str | None = None
) -> None:
    """`--segments` (a count, 1 to `MAX_SEGMENTS`), `--segment-minutes` (segments sized by work: minutes
    above 0) and `--max-instances` (a count, as `--segments`), each offered when its help is given."""
    if segments is not None:
        options.add_argument("--segments", type=segment_count, help=segments)
    if instances is not None:
        options.add_argument("--max-instances", type=segment_count, help=instances)
    if minutes is not None:
        options.add_argument("--segment-minutes", type=positive_float, help=minutes)


def add_budget_options(
    parser: argparse.ArgumentParser, *, ceiling: float = DEFAULT_CEILING_USD, spend_log: str | None = None
) -> None:
    """`--ceiling` (checked by the guard, so a bad value is named) and `--spend-log`."""
    group = parser.add_argument_group("budget")
    group.add_argument(
        "--ceiling",
        default=None,
        help=f"budget ceiling in USD (default {ceiling:g}; ${CEILING_ENV} overrides both)",
    )
    group.add_argument(
        "--spend-log",
        type=Path,
        default=None,
        help=f"the budget guard's append-only log (default {spend_log or 'runs/budget/spend_log.jsonl'})",
    )
    parser.set_defaults(default_ceiling=ceiling)


def budget_guard(args: argparse.Namespace, *, spend_log: Path | None = None) -> BudgetGuard:
    """The guard the options name; `spend_log` is the command's own default log, if it has one. Never in
    test mode: a command that can spend money keeps its spend log on disk."""
    if test_mode_requested():
        raise BudgetConfigError(
            f"{TEST_MODE_ENV}=1 is set: it would keep the spend log in memory only, and this command can "
            f"spend money; unset it (it is for the test suite and `spotbatch simulate`)"
        )
    ceiling = args.ceiling if args.ceiling is not None else args.default_ceiling
    return BudgetGuard(ceiling, args.spend_log or spend_log or spend_log_path())


REGION_HELP = "AWS region (default $AWS_REGION, $AWS_DEFAULT_REGION, the profile's)"
TYPE_HELP = f"EC2 instance type, priced from the price table (default {DEFAULT_INSTANCE_TYPE})"


def add_target_options(
    parser: argparse.ArgumentParser,
    *,
    instance_type: str | None = TYPE_HELP,
    default_type: str | None = DEFAULT_INSTANCE_TYPE,
    many_types: str | None = None,
    region: str | None = REGION_HELP,
    default_region: str | None = None,
    endpoint: str | None = None,
    override: bool = False,
    title: str = "AWS target",
) -> None:
    """Where the instances run (AWS, or the burst's Lambda Cloud), declared once for every command: each
    option is offered when its help is given (the help says what its default is for that command).

    `--instance-type` (one type) or `--instance-types` (`many_types`: a comma-separated pool), `--region`,
    `--endpoint` (an emulator's URL, loopback only) and `--override NAME=REASON` (a pre-flight check)."""
    group = parser.add_argument_group(title)
    if instance_type is not None:
        group.add_argument("--instance-type", default=default_type, help=instance_type)
    if many_types is not None:
        group.add_argument("--instance-types", help=many_types)
    if region is not None:
        group.add_argument("--region", default=default_region, help=region)
    if endpoint is not None:
        group.add_argument("--endpoint", help=endpoint)
    if override:
        group.add_argument(
            "--override", action="append", default=[], metavar="NAME=REASON", help="go on despite this check"
        )


def region_of(args: argparse.Namespace, *, offline: bool = False) -> str:
    """`--region`, else the environment's or the profile's. `offline` (price look-ups, the emulator):
    without any, the emulator's region, so that nothing offline needs an AWS configuration."""
    return region_or_emulators(args.region) if offline else resolve_region(args.region)
