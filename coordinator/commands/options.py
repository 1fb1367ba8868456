"""Argument groups that several commands share, declared once: the budget and the AWS target.

Every command that can spend money takes `--ceiling` and `--spend-log` through `add_budget_options` and
builds its guard with `budget_guard(args)`, so the options are spelled the same way everywhere.

Usage::

    add_budget_options(parser)
    add_aws_options(parser)
    guard = budget_guard(args)                 # --ceiling (or $LYNX_CLOUD_BUDGET_USD), --spend-log
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TypeAlias

from coordinator.cost.budget import CEILING_ENV, DEFAULT_CEILING_USD, BudgetGuard
from coordinator.paths import spend_log_path
from coordinator.stack.defaults import DEFAULT_INSTANCE_TYPE
from coordinator.stack.target import region_or_emulators, resolve_region

# what `add_subparsers()` returns; a string, since argparse's class is not subscriptable at run time
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


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
    """The guard the options name; `spend_log` is the command's own default log, if it has one."""
    ceiling = args.ceiling if args.ceiling is not None else args.default_ceiling
    return BudgetGuard(ceiling, args.spend_log or spend_log or spend_log_path())


def add_aws_options(parser: argparse.ArgumentParser) -> None:
    """Where the instances run and of which type (priced from the price table)."""
    group = parser.add_argument_group("AWS target")
    group.add_argument(
        "--region", default=None, help="AWS region (default $AWS_REGION, $AWS_DEFAULT_REGION, the profile's)"
    )
    group.add_argument(
        "--instance-type",
        default=DEFAULT_INSTANCE_TYPE,
        help=f"EC2 instance type, priced from the price table (default {DEFAULT_INSTANCE_TYPE})",
    )


def region_of(args: argparse.Namespace, *, offline: bool = False) -> str:
    """`--region`, else the environment's or the profile's. `offline` (price look-ups, the emulator):
    without any, the emulator's region, so that nothing offline needs an AWS configuration."""
    return region_or_emulators(args.region) if offline else resolve_region(args.region)
