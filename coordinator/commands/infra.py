"""`spotbatch infra up|apply-real|destroy-real`: the Terraform stack on the embedded AWS, or on real AWS.

`up` starts the emulator, applies the stack, prints its outputs, and destroys it (at once, or on Ctrl-C
with `--hold`). `apply-real` runs the pre-flight checks, `terraform plan -out`, asks for confirmation
(`--confirm`, `CONFIRM=yes`, or a typed yes; otherwise exit 5) and applies exactly that plan.
`destroy-real` destroys the stack and re-lists the project's instances: any still alive is exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from coordinator.commands.options import Subcommands, add_aws_options, add_budget_options, budget_guard
from coordinator.errors import Declined


def add_parser(commands: Subcommands) -> None:
    infra = commands.add_parser("infra", help="the Terraform stacks: emulator or real AWS").add_subparsers(
        dest="infra_command", required=True, metavar="ACTION"
    )
    up = infra.add_parser(
        "up", help="embedded AWS: start the emulator, apply the stack, print outputs, tear down"
    )
    up.add_argument("--target", choices=("moto", "localstack"), default="moto")
    up.add_argument("--hold", action="store_true", help="keep it up until Ctrl-C")
    up.set_defaults(handler=up_command)
    for name, handler, summary in (
        (
            "apply-real",
            apply_real_command,
            "pre-flight, terraform plan -out, confirmation, apply of that plan",
        ),
        (
            "destroy-real",
            destroy_real_command,
            "destroy the AWS stack and re-list to confirm nothing is left",
        ),
    ):
        real = infra.add_parser(name, help=summary)
        real.add_argument("--bucket-name", required=name == "apply-real", default="")
        real.add_argument("--worker-image", required=name == "apply-real", default="")
        real.add_argument("--max-lifetime-seconds", type=int, default=21_600)
        real.add_argument("--confirm", action="store_true", help="same as CONFIRM=yes")
        real.add_argument("--override", action="append", default=[], metavar="NAME=REASON")
        add_aws_options(real)
        add_budget_options(real)
        real.set_defaults(handler=handler)


def up_command(args: argparse.Namespace) -> int:
    from coordinator.paths import runs_dir
    from coordinator.sim.emulator_stack import emulator_infrastructure

    state_dir = runs_dir() / "infra" / args.target
    state_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with emulator_infrastructure(state_dir, target=args.target) as infra:
        applied = time.monotonic()
        print(f"{args.target} at {infra.endpoint}: stack applied in {applied - started:.1f} s")
        for name, value in infra.outputs.items():
            print(f"  {name} = {value}")
        if args.hold:
            print("holding; Ctrl-C destroys the stack and stops the emulator")
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
        destroying = time.monotonic()
    print(f"destroyed in {time.monotonic() - destroying:.1f} s; emulator stopped")
    return 0


def _real_variables(args: argparse.Namespace) -> dict[str, str]:
    variables = {"bucket_name": args.bucket_name, "worker_image": args.worker_image, "region": args.region}
    return {key: value for key, value in variables.items() if value}


def confirm(args: argparse.Namespace, what: str) -> None:
    """Go on only with --confirm, CONFIRM=yes or a typed yes; otherwise raise `Declined` (exit 5)."""
    if args.confirm or os.environ.get("CONFIRM") == "yes":
        return
    if not sys.stdin.isatty():
        raise Declined(f"refusing to {what} without CONFIRM=yes (no terminal to ask)")
    if input(f"{what} on real AWS, which costs money. Type yes to go on: ").strip() != "yes":
        raise Declined(f"did not {what}: the answer was not yes")


def apply_real_command(args: argparse.Namespace) -> int:
    import boto3

    from coordinator.cost.pricing import PriceTable
    from coordinator.paths import runs_dir
    from coordinator.preflight import checks as preflight
    from coordinator.stack.real_aws import RealAws

    ec2 = boto3.client("ec2", region_name=args.region)
    table = PriceTable.load()
    row = table.lookup("aws", args.region, args.instance_type, "spot")
    plan = preflight.LaunchPlan(
        job_id="infra",
        estimate_usd=0.0,
        price=table.quote("aws", args.region, args.instance_type, "spot"),
        price_snapshot=row.snapshot_date,
        shutdown_behavior="terminate",
        max_lifetime_seconds=args.max_lifetime_seconds,
    )
    results = preflight.run_preflight(plan, ec2=ec2, guard=budget_guard(args))
    overrides = preflight.parse_overrides(args.override)
    results = preflight.apply_overrides(results, overrides, runs_dir() / "preflight.jsonl")
    print(preflight.format_results(results))
    preflight.require_preflight(results)
    real = RealAws(runs_dir() / "infra" / "aws", _real_variables(args))
    print(real.plan())
    confirm(args, "apply this plan")
    outputs = real.apply_saved_plan()
    for name, value in outputs.items():
        print(f"  {name} = {value}")
    saved = runs_dir() / "infra" / "aws" / "outputs.json"
    saved.write_text(json.dumps(outputs, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    hint = f"spotbatch run --outputs {saved} --job-id ... --input-key ..."
    print(f"outputs saved to {saved}; run a job with: {hint}")
    return 0


def destroy_real_command(args: argparse.Namespace) -> int:
    import boto3

    from coordinator.paths import runs_dir
    from coordinator.stack.real_aws import RealAws

    confirm(args, "destroy the spotbatch stack")
    real = RealAws(runs_dir() / "infra" / "aws", _real_variables(args))
    alive = real.destroy_and_confirm(boto3.client("ec2", region_name=args.region))
    if alive:
        listed = ", ".join(alive)
        print(
            f"destroyed the stack, but instances tagged Project=spotbatch are alive: {listed}",
            file=sys.stderr,
        )
        return 1
    print("destroyed; re-listed: no instance tagged Project=spotbatch is alive")
    return 0
