"""`spotbatch budget status|check|estimate|repair`: what the guard has spent and reserved (each open
reservation by label and age), whether more fits, and the one repair the guard allows: cutting a torn last
line it began itself, after copying the log aside."""

from __future__ import annotations

import argparse

from coordinator.commands.options import (
    Subcommands,
    add_budget_options,
    add_target_options,
    budget_guard,
    region_of,
)


def add_parser(commands: Subcommands) -> None:
    budget = commands.add_parser("budget", help="the budget guard: status and checks").add_subparsers(
        dest="budget_command", required=True, metavar="ACTION"
    )
    status = budget.add_parser("status", help="ceiling, spent, reserved, remaining, per label")
    add_budget_options(status)
    status.set_defaults(handler=status_command)

    repair = budget.add_parser(
        "repair", help="remove a torn last line the guard began (a full disk, a crash); keeps a copy"
    )
    add_budget_options(repair)
    repair.set_defaults(handler=repair_command)

    check = budget.add_parser("check", help="would an estimate fit? (exit 3 if not; writes nothing)")
    check.add_argument("--estimate", required=True, help="dollars")
    check.add_argument("--label", default="budget-check", help="operation label for the message")
    add_budget_options(check)
    check.set_defaults(handler=check_command)

    estimate = budget.add_parser(
        "estimate", help="cost of a job before launch: hours x rate x instances + margin"
    )
    estimate.add_argument("--hours", required=True, help="expected hours of work per instance")
    estimate.add_argument("--instances", type=int, default=1)
    estimate.add_argument("--provider", default="aws")
    estimate.add_argument("--market", choices=("spot", "on-demand"), default="spot")
    add_target_options(estimate)
    add_budget_options(estimate)
    estimate.set_defaults(handler=estimate_command)


def status_command(args: argparse.Namespace) -> int:
    guard = budget_guard(args)
    state = guard.state()
    print(f"spend log {guard.log_path}")
    print(f"ceiling   ${guard.ceiling_usd:.2f}")
    print(f"spent     ${state.spent:.2f}")
    print(f"reserved  ${state.reserved:.2f}  (authorized, no actual recorded yet)")
    print(f"remaining ${guard.ceiling_usd - state.spent - state.reserved:.2f}")
    if state.by_label:
        width = max(len(label) for label in state.by_label)
        print(f"{'label':<{width}}  {'spent':>9}  {'reserved':>9}")
        for label, totals in state.by_label.items():
            print(f"{label:<{width}}  ${totals.spent:>8.2f}  ${totals.reserved:>8.2f}")
    if state.reservations:
        print("open reservations (authorized, no actual yet: an operation running, or one that died)")
        for label, reservations in state.reservations.items():
            for reservation in reservations:
                age = reservation.age_seconds()
                shown = "age unknown" if age is None else f"{_duration(age)} old"
                print(f"  {label}  ${reservation.estimate:.2f}  since {reservation.ts} ({shown})")
    return 0


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds / 3600:.1f} h"


def repair_command(args: argparse.Namespace) -> int:
    guard = budget_guard(args)
    result = guard.repair()
    if result.copy is None:
        print(f"{guard.log_path}: nothing to repair (every line is whole)")
        return 0
    print(
        f"{guard.log_path}: removed the torn last line {result.removed[:80]!r}; the log before: {result.copy}"
    )
    return 0


def check_command(args: argparse.Namespace) -> int:
    from coordinator.cost.budget import parse_amount

    estimate = parse_amount(args.estimate, "estimate")
    guard = budget_guard(args)
    guard.check(args.label, estimate)  # a refusal raises BudgetGuardExceeded: exit 3
    print(f"fits: ${estimate:.2f} leaves ${guard.remaining - estimate:.2f} of ${guard.ceiling_usd:.2f}")
    return 0


def estimate_command(args: argparse.Namespace) -> int:
    from coordinator.cost.budget import parse_amount
    from coordinator.cost.pricing import PriceTable, estimate_job_cost

    region = region_of(args, offline=True)
    quote = PriceTable.load().quote(args.provider, region, args.instance_type, args.market)
    estimate = estimate_job_cost(
        work_hours=parse_amount(args.hours, "hours"),
        instances=args.instances,
        rate_usd_per_hour=quote.rate_usd_per_hour,
    )
    print(f"estimate: {estimate.describe()}")
    where = f"{args.market} {args.instance_type} in {region}"
    print(f"price: {where}, {quote.source} ({quote.billing.name})")
    guard = budget_guard(args)
    guard.check("estimate", estimate.total_usd)  # a refusal raises BudgetGuardExceeded: exit 3
    print(f"fits the budget: ${guard.remaining:.2f} of ${guard.ceiling_usd:.2f} remaining")
    return 0
