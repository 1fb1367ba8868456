"""`spotbatch preflight`: the pre-launch checklist, run mechanically (PASS/FAIL with reasons; exit 4)."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

from coordinator.commands.options import Subcommands, add_budget_options, add_target_options, budget_guard


def add_parser(commands: Subcommands) -> None:
    check = commands.add_parser(
        "preflight",
        help="the pre-launch checklist, run mechanically (PASS/FAIL with reasons)",
        description="Checks: no stray instances, budget headroom, auto-termination, teardown dry run, price "
        "of the day, sync allow-list. Exit 4 if a check fails and is not overridden.",
    )
    check.add_argument("--estimate", required=True, help="estimated cost of the launch, dollars")
    check.add_argument("--job-id", default="preflight")
    check.add_argument("--market", choices=("spot", "on-demand"), default="spot")
    check.add_argument(
        "--live-prices", action="store_true", help="read the spot price from EC2 when possible"
    )
    check.add_argument("--shutdown-behavior", choices=("terminate", "stop"), default="terminate")
    check.add_argument("--max-lifetime-seconds", type=int, default=6 * 3_600)
    check.add_argument("--sync-dir", help="payload folder for a burst run")
    check.add_argument(
        "--instances", type=int, default=1, help="instances that will run at once (vCPU quota check)"
    )
    check.add_argument("--preflight-log", help="default runs/preflight.jsonl")
    add_target_options(check, override=True)
    add_budget_options(check)
    check.set_defaults(handler=preflight_command)


def preflight_command(args: argparse.Namespace) -> int:
    from coordinator.cost.budget import parse_amount
    from coordinator.cost.live_prices import PRICING_REGION, live_quotes, zone_names
    from coordinator.cost.pricing import PriceTable
    from coordinator.paths import preflight_log_path
    from coordinator.preflight import checks as preflight
    from coordinator.preflight.quotas import check_vcpu_quotas
    from coordinator.stack.target import AwsTarget

    target = AwsTarget.real(args.region)
    ec2 = target.client("ec2")
    table = PriceTable.load()
    quote = table.quote("aws", target.region, args.instance_type, args.market)
    if args.live_prices:
        zones = zone_names(ec2)
        pricing = target.in_region(PRICING_REGION).client("pricing")
        quotes = live_quotes(
            table,
            region=target.region,
            instance_type=args.instance_type,
            zones=zones,
            ec2=ec2,
            pricing=pricing,
        )
        quote = quotes[args.market]
    plan = preflight.LaunchPlan(
        job_id=args.job_id,
        estimate_usd=parse_amount(args.estimate, "estimate"),
        price=quote,
        shutdown_behavior=args.shutdown_behavior,
        max_lifetime_seconds=args.max_lifetime_seconds,
        sync_dir=Path(args.sync_dir) if args.sync_dir else None,
    )
    log_path = Path(args.preflight_log) if args.preflight_log else preflight_log_path()
    results = preflight.run_preflight(plan, ec2=ec2, guard=budget_guard(args))
    results.append(
        check_vcpu_quotas(
            target.client("service-quotas"),
            ec2,
            instance_type=args.instance_type,
            vcpus=table.vcpus(args.instance_type),
            instances=args.instances,
            markets=(args.market,),
        )
    )
    results = preflight.apply_overrides(results, preflight.parse_overrides(args.override), log_path)
    print(preflight.format_results(results, target.describe))
    record = {
        "ts": datetime.now(UTC).isoformat(),
        "job_id": args.job_id,
        "rate_usd_per_hour": quote.rate_usd_per_hour,
        "price_source": quote.source,
        "results": {r.name: r.status for r in results},
    }
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a", encoding="utf-8") as log:  # the record of the day's price and every verdict
        log.write(json.dumps(record) + "\n")
    preflight.require_preflight(results)  # a failure raises PreflightFailed: exit 4
    return 0
