"""`spotbatch burst`: one rented GPU box (Lambda Cloud) from launch to confirmed-gone, cost on the record.

    spotbatch burst payload [--rows 2000]           build the allow-listed payload (build/burst-payload)
    spotbatch burst --ssh-key-name me --ssh-key ~/.ssh/lambda [--instance-type ...] [--hours 0.5]
    spotbatch burst --stand-in                      the same round trip against local stand-ins: Lambda's
                                                    API served on 127.0.0.1 and a local sshd as the box
    spotbatch burst --dry-run                       the plan and the estimate; touches nothing
    spotbatch burst down --run-dir runs/burst/<name>  teardown from instance.json, for a run that died

The API key is read from LAMBDA_API_KEY and used only in the Authorization header. Every run ends by
terminating the box and re-listing until it is gone, whatever failed (Ctrl-C and SIGTERM included), then
logs its cost (ledger, MLflow, the budget guard's spend log). Exit codes: 0 done, 1 the run failed after
launch (the box is gone), 2 bad input, 3 refused by the budget guard, 4 refused by pre-flight, 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import secrets
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from coordinator.commands.options import (
    Subcommands,
    add_budget_options,
    add_rows_option,
    add_target_options,
    budget_guard,
)
from coordinator.errors import ConfigError
from coordinator.paths import build_dir, default_dataset_path, default_model_dir, runs_dir, spend_log_path

if TYPE_CHECKING:
    from coordinator.burst.burst_state import BurstPlan
    from coordinator.burst.providers.lambda_cloud import LambdaCloud

DEFAULT_TYPE = "gpu_1x_a100_sxm4_80gb"
DEFAULT_REGION = "us-east-1"
DEFAULT_HOURS = (
    0.5  # a smoke run and a 10,000-row job take minutes on an A100; half an hour is the reservation
)


STAND_IN_TIME_FACTOR = 0.05  # the stand-in's clock for rate limits: 1 s -> 0.05 s, 12 s -> 0.6 s


def add_parser(commands: Subcommands) -> None:
    burst = commands.add_parser(
        "burst",
        help="rent one GPU box (Lambda Cloud): launch, parity, sync, smoke, job, pull back, terminate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    burst.add_argument(
        "--payload", type=Path, default=None, help="allow-listed folder (default build/burst-payload)"
    )
    add_target_options(
        burst,
        instance_type=f"Lambda Cloud's type (default {DEFAULT_TYPE})",
        default_type=DEFAULT_TYPE,
        region=f"Lambda Cloud's region (default {DEFAULT_REGION})",
        default_region=DEFAULT_REGION,
        override=True,
        title="Lambda Cloud target",
    )
    burst.add_argument("--hours", type=float, default=DEFAULT_HOURS, help="planned hours, for the estimate")
    burst.add_argument("--ssh-key-name", help="the SSH key's name at the provider")
    burst.add_argument("--ssh-key", type=Path, help="its private key here")
    burst.add_argument("--ssh-user", default="ubuntu")
    burst.add_argument("--remote-python", default="python3")
    burst.add_argument("--run-dir", type=Path, help="default runs/burst/<name>")
    burst.add_argument(
        "--dry-run", action="store_true", help="print the plan and the estimate; touch nothing"
    )
    burst.add_argument(
        "--stand-in", action="store_true", help="local Lambda API stand-in and a local sshd box"
    )
    burst.add_argument("--boot-timeout", type=float, default=None, help="seconds to wait for active + SSH")
    add_budget_options(burst, spend_log="runs/budget/spend_log.jsonl; with --stand-in the run's own")
    burst.set_defaults(handler=burst_command)
    actions = burst.add_subparsers(dest="burst_action", metavar="ACTION")
    down = actions.add_parser("down", help="terminate and confirm the box of a run, from its instance.json")
    down.add_argument("--run-dir", type=Path, required=True, dest="down_run_dir")
    down.set_defaults(handler=down_command)
    payload = actions.add_parser("payload", help="build the payload folder: code, model, data slice, lock")
    payload.add_argument("--out", type=Path, default=None, help="default build/burst-payload")
    add_rows_option(payload, "rows of the dataset the box predicts (default 2,000)", default=2_000)
    payload.add_argument("--model", type=Path, default=None)
    payload.add_argument("--dataset", type=Path, default=None)
    payload.set_defaults(handler=payload_command)


def payload_command(args: argparse.Namespace) -> int:
    from coordinator.burst.payload import build_payload

    out = args.out or build_dir() / "burst-payload"
    build_payload(
        out,
        model_dir=args.model or default_model_dir(),
        dataset=args.dataset or default_dataset_path(),
        rows=args.rows,
    )
    files = [p for p in out.rglob("*") if p.is_file()]
    print(f"payload {out}: {len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB")
    return 0


def burst_command(args: argparse.Namespace) -> int:
    from coordinator.burst.burst_state import BURST_PREFIX
    from coordinator.burst.workflow import run_burst
    from coordinator.cost.ledger import default_tracking_uri
    from coordinator.errors import BurstFailed

    name = f"{BURST_PREFIX}{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    run_dir = (args.run_dir or runs_dir() / "burst" / name).resolve()
    plan = _plan(args, name, run_dir)
    if args.dry_run:
        print(
            "dry run (nothing is launched, authorized or written); prices from the table, the run uses the "
            "live ones:"
        )
        print(plan.describe())
        return 0
    with contextlib.ExitStack() as stack:
        if args.stand_in:
            cloud, plan, spend_log = _stand_ins(stack, plan)
        else:
            cloud, spend_log = _lambda_cloud(args), spend_log_path()
        offer = cloud.instance_types().get(plan.instance_type)
        if offer is not None:  # the price of the day, from the provider itself
            today = datetime.now(UTC).date()
            plan = replace(plan, rate_per_gpu_hour=offer.usd_per_gpu_hour, gpus=offer.gpus, price_date=today)
        guard = budget_guard(args, spend_log=spend_log)
        started = time.monotonic()
        try:
            outcome = run_burst(plan, cloud, guard, tracking_uri=default_tracking_uri(runs_dir()))
        except BurstFailed as error:
            print(f"burst failed (the box was terminated and confirmed gone): {error}", file=sys.stderr)
            return error.exit_code
        cost = f"${outcome.cost.cost_usd:.4f}" if outcome.cost else "$0"
        took = time.monotonic() - started
        print(f"burst {name}: done in {took:.1f} s, {cost}; artifacts in {outcome.artifacts}")
    return 0


def _plan(args: argparse.Namespace, name: str, run_dir: Path) -> BurstPlan:
    """The plan from the flags, priced from the table (the run reads the provider's price of the day)."""
    from coordinator.burst.burst_state import BurstPlan
    from coordinator.cost.pricing import PriceTable
    from coordinator.errors import PriceError
    from coordinator.preflight.checks import parse_overrides

    table_row = PriceTable.load().lookup("lambda", "us", args.instance_type, "on-demand")
    if table_row.snapshot_date is None:
        raise PriceError(f"the price of lambda {args.instance_type} has no date: the burst checks its age")
    plan = BurstPlan(
        name=name,
        provider="lambda",
        instance_type=args.instance_type,
        region=args.region,
        gpus=table_row.gpus,
        rate_per_gpu_hour=table_row.usd_per_hour,
        price_date=table_row.snapshot_date,
        planned_hours=args.hours,
        payload=(args.payload or build_dir() / "burst-payload").resolve(),
        ssh_key_name=args.ssh_key_name or "",
        ssh_private_key=args.ssh_key or Path("-"),
        run_dir=run_dir,
        ssh_user=args.ssh_user,
        remote_python=args.remote_python,
        overrides=parse_overrides(args.override),
    )
    if args.boot_timeout is not None:
        plan = replace(plan, boot_timeout=args.boot_timeout)
    return plan


def _stand_ins(
    stack: contextlib.ExitStack[bool | None], plan: BurstPlan
) -> tuple[LambdaCloud, BurstPlan, Path]:
    """Lambda's API served on 127.0.0.1 and a local sshd as the box; the run's own spend log."""
    from coordinator.burst.providers.lambda_cloud import LambdaCloud
    from coordinator.burst.providers.request_pace import RequestPace
    from coordinator.sim.lambda_standin import LambdaStandIn
    from coordinator.sim.local_sshd import LocalSshd

    key = secrets.token_urlsafe(24)
    # Lambda's rate limits, 20x faster on both sides: the client paces itself as it does against Lambda
    pace = RequestPace.scaled(STAND_IN_TIME_FACTOR)
    # the stand-in enforces 80% of the pace: a request's trip varies a little (a 429 would be retried anyway)
    api = stack.enter_context(LambdaStandIn(api_key=key, limits=(0.8 * pace.every, 0.8 * pace.launch_every)))
    box = stack.enter_context(LocalSshd(plan.run_dir / "box"))
    cloud = LambdaCloud(api_key=key, base_url=api.api_url, backoff_seconds=0.2, pace=pace)
    plan = replace(
        plan,
        ssh_key_name="standin-key",
        ssh_private_key=box.client_key,
        ssh_user=box.user,
        ssh_port=box.port,
        remote_python=sys.executable,
        remote_root=str(plan.run_dir / "box" / "home"),
        poll_seconds=0.2,
    )
    print(f"stand-ins: Lambda API {api.api_url}, box {box.user}@127.0.0.1:{box.port}")
    return cloud, plan, plan.run_dir / "spend_log.jsonl"  # simulated dollars stay out of the real log


def _lambda_cloud(args: argparse.Namespace) -> LambdaCloud:
    from coordinator.burst.providers.lambda_cloud import LambdaCloud

    if not args.ssh_key_name or not args.ssh_key:
        raise ConfigError("--ssh-key-name and --ssh-key are required (or --stand-in, or --dry-run)")
    return LambdaCloud()


def down_command(args: argparse.Namespace) -> int:
    from coordinator.burst.providers.lambda_cloud import LambdaCloud
    from coordinator.burst.teardown import burst_down
    from coordinator.cost.ledger import default_tracking_uri

    run_dir = args.down_run_dir
    spend_log = run_dir / "spend_log.jsonl" if (run_dir / "spend_log.jsonl").exists() else spend_log_path()
    guard = budget_guard(args, spend_log=spend_log)
    cost = burst_down(run_dir, LambdaCloud(), guard, tracking_uri=default_tracking_uri(runs_dir()))
    logged = f"${cost.cost_usd:.4f}" if cost else "already logged, or there was no box"
    print(f"burst down: the box of {run_dir} is gone; cost {logged}")
    return 0
