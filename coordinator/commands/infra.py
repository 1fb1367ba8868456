"""`spotbatch infra up|apply-real|destroy-real`: the stack on the embedded AWS, or on your AWS account.

`up` starts the emulator, applies the stack (as `make simulate` does), prints its outputs and destroys it
(at once, or on Ctrl-C with `--hold`). `apply-real` runs the pre-flight, `terraform plan -out`, asks for
confirmation (`--confirm`, `CONFIRM=yes`, or a typed yes; otherwise exit 5) and applies exactly that plan;
the worker image is the one `make image-push` recorded (runs/infra/aws/image.json) unless `--worker-image`
names one; without an image the stack has no launch templates yet. `destroy-real` needs nothing but the
state folder: it refuses while instances of the stack are alive, removes the job roles a killed run left,
destroys the stack and re-lists the account's instances of the project: any still alive is exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from coordinator.commands.options import Subcommands, add_budget_options, add_target_options, budget_guard
from coordinator.errors import Declined, InfraError
from coordinator.stack.defaults import DEFAULT_INSTANCE_TYPE, DEFAULT_MAX_LIFETIME_SECONDS, DEFAULT_STACK_NAME
from coordinator.stack.target import AwsTarget


def add_parser(commands: Subcommands) -> None:
    infra = commands.add_parser("infra", help="the Terraform stack: emulator or real AWS").add_subparsers(
        dest="infra_command", required=True, metavar="ACTION"
    )
    up = infra.add_parser(
        "up", help="embedded AWS: start the emulator, apply the stack, print outputs, tear down"
    )
    up.add_argument("--target", choices=("moto", "localstack"), default="moto")
    up.add_argument("--hold", action="store_true", help="keep it up until Ctrl-C")
    up.set_defaults(handler=up_command)
    apply = infra.add_parser(
        "apply-real", help="pre-flight, terraform plan -out, confirmation, apply of that plan"
    )
    apply.add_argument("--bucket-name", help="the job bucket (needed the first time; then the saved one)")
    apply.add_argument(
        "--plan", type=Path, help="`spotbatch plan --json`'s: its cheapest pool's region and type"
    )
    add_target_options(
        apply,
        instance_type=f"default {DEFAULT_INSTANCE_TYPE} (or the saved one)",
        default_type=None,
        region="default $AWS_REGION, $AWS_DEFAULT_REGION, the profile's (or the saved one)",
        endpoint="a local AWS emulator's URL (loopback only) instead of AWS, to try the commands",
        override=True,
    )
    apply.add_argument("--name", help=f"the stack's name (default {DEFAULT_STACK_NAME})")
    apply.add_argument("--network-mode", choices=("public", "private"), help="default public")
    apply.add_argument("--kms-key-arn", help="encrypt bucket, images, logs and volumes with this key")
    apply.add_argument("--worker-image", help="<repository url>@sha256:... (default: image.json's)")
    apply.add_argument("--max-lifetime-seconds", type=int, help=f"default {DEFAULT_MAX_LIFETIME_SECONDS}")
    apply.add_argument(
        "--live-prices", action="store_true", help="the on-demand price (spot max price) from AWS today"
    )
    add_budget_options(apply)
    destroy = infra.add_parser("destroy-real", help="destroy the stack; re-list to confirm nothing is left")
    destroy.add_argument(
        "--delete-data",
        action="store_true",
        help="also delete the bucket's objects and the repository's images",
    )
    for real in (apply, destroy):
        real.add_argument("--state-dir", type=Path, help="default runs/infra/aws")
        real.add_argument("--confirm", action="store_true", help="same as CONFIRM=yes")
    apply.set_defaults(handler=apply_real_command)
    destroy.set_defaults(handler=destroy_real_command)


def up_command(args: argparse.Namespace) -> int:
    from coordinator.paths import runs_dir
    from coordinator.sim.emulator_stack import emulator_infrastructure

    state_dir = runs_dir() / "infra" / args.target
    started = time.monotonic()
    with emulator_infrastructure(state_dir, target=args.target) as infra:
        applied = time.monotonic()
        print(f"{args.target} at {infra.endpoint}: stack applied in {applied - started:.1f} s")
        for name, value in sorted(infra.outputs.items()):
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


def confirm(args: argparse.Namespace, what: str) -> None:
    """Go on only with --confirm, CONFIRM=yes or a typed yes; otherwise raise `Declined` (exit 5)."""
    if args.confirm or os.environ.get("CONFIRM") == "yes":
        return
    if not sys.stdin.isatty():
        raise Declined(f"refusing to {what} without CONFIRM=yes (no terminal to ask)")
    if input(f"{what} on real AWS, which costs money. Type yes to go on: ").strip() != "yes":
        raise Declined(f"did not {what}: the answer was not yes")


def trusted_principal(target: AwsTarget) -> str:
    """The caller as a trust policy can name it: its user or role ARN, else its account's root."""
    identity = target.client("sts").get_caller_identity()
    arn = str(identity["Arn"])
    if arn.split(":")[2] == "iam" and arn.split(":")[5].startswith(("user/", "role/")):
        return arn
    return f"arn:{arn.split(':')[1]}:iam::{identity['Account']}:root"


def state_dir_of(args: argparse.Namespace) -> Path:
    from coordinator.paths import runs_dir

    return Path(args.state_dir) if args.state_dir else runs_dir() / "infra" / "aws"


def apply_real_command(args: argparse.Namespace) -> int:
    from coordinator.commands.infra_real import (
        on_demand_quote,
        planned_summary,
        preflight_for_apply,
        settings_for_apply,
    )
    from coordinator.stack.deployment import Deployment, saved_region

    if args.plan is not None:  # the plan's cheapest pool: its region and type, where no flag says
        from coordinator.commands.plan_file import first_pool

        region, kind = first_pool(args.plan)
        args.region, args.instance_type = args.region or region, args.instance_type or kind
    state_dir = state_dir_of(args)
    target = AwsTarget.chosen(args.region or saved_region(state_dir), args.endpoint)
    deployment = Deployment(state_dir, target)
    saved = deployment.saved_variables()
    if saved and saved.get("endpoint") != target.endpoint:
        where = f"the emulator at {saved['endpoint']}" if saved.get("endpoint") else "AWS"
        raise InfraError(
            f"{state_dir} holds a stack applied to {where}, not {target.describe}: give the same target, "
            "or another --state-dir"
        )
    settings = settings_for_apply(args, saved, state_dir)
    on_demand = on_demand_quote(args, target, settings.instance_type)
    preflight_for_apply(args, target, settings, on_demand, budget_guard(args))
    variables = settings.variables(target)
    if target.is_emulator:
        # the simulator's machines assume the job roles as this caller (moto trusts only AWS principals)
        variables["worker_trusted_principals"] = [trusted_principal(target)]
    planned = deployment.plan(variables)
    print(planned.text)
    print(planned_summary(planned))
    confirm(args, "apply this plan")
    outputs = deployment.apply_saved_plan()
    for name, value in sorted(outputs.items()):
        print(f"  {name} = {json.dumps(value)}")
    print(f"outputs saved to {deployment.outputs_file}")
    if not outputs.get("launch_template_ids"):
        print(
            "no worker image yet: `make image image-push`, then `make apply-real` again for the launch "
            "templates"
        )
    else:
        print("run a job with: make run-real INPUT=your-file.parquet")
    return 0


def destroy_real_command(args: argparse.Namespace) -> int:
    from coordinator.commands.infra_real import destroy_stack

    state_dir = state_dir_of(args)
    if not (state_dir / "variables.tfvars.json").is_file():
        raise InfraError(f"{state_dir}: no saved stack to destroy (nothing was applied from this folder)")
    confirm(args, "destroy the spotbatch stack")
    alive = destroy_stack(state_dir, delete_data=args.delete_data)
    if alive:
        print(
            f"destroyed the stack, but instances tagged Project=spotbatch are alive: {', '.join(alive)}",
            file=sys.stderr,
        )
        return 1
    print("destroyed; re-listed: no instance tagged Project=spotbatch is alive")
    return 0
