"""`spotbatch run`: one job on a deployed stack, the coordinator alone (the instances do the work).

The stack's ids come from `terraform output -json` (a file, or read from a Terraform state folder). With
`--endpoint` the clients talk to an emulator (moto, LocalStack; loopback only); without it, to real AWS with
the usual credential chain. Started again with the same `--job-id` and `--run-dir`, it resumes the job:
live instances are adopted, lost ones recovered, nothing is launched twice.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from coordinator.commands.options import Subcommands, add_aws_options, add_budget_options, budget_guard
from coordinator.job.runner import CloudTarget
from coordinator.job.spec import BOOT_TIMEOUT_SECONDS, CYCLE_SECONDS, HEARTBEAT_TIMEOUT_SECONDS, JobSpec
from coordinator.paths import runs_dir
from coordinator.stack.outputs import read_outputs


def add_parser(commands: Subcommands) -> None:
    run = commands.add_parser(
        "run",
        help="run one job on a deployed stack (real AWS, or an emulator with --endpoint)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "--outputs", type=Path, required=True, help="`terraform output -json` of the stack, saved"
    )
    run.add_argument("--endpoint", help="emulator endpoint (loopback only); omit for real AWS")
    run.add_argument("--job-id", required=True)
    run.add_argument("--run-dir", type=Path, help="default runs/<job id>")
    run.add_argument("--input-key", required=True, help="the dataset's key in the stack's bucket")
    run.add_argument("--rows", type=int, required=True, help="rows in the dataset")
    run.add_argument("--segments", type=int, default=10)
    run.add_argument(
        "--policy",
        default="hybrid",
        help="on-demand, spot-only, hybrid, or a deadline policy "
        "(deadline, greedy, safety-greedy, uniform-progress)",
    )
    run.add_argument("--deadline-minutes", type=float, help="cloud minutes from the start; deadline policies")
    run.add_argument(
        "--reserve-hours", type=float, help="the deadline policy's slack kept for returns to spot"
    )
    run.add_argument("--spot-share", type=float, help="hybrid: share of segments that start on spot")
    run.add_argument("--max-spot-retries", type=int)
    run.add_argument(
        "--time-scale", type=float, default=1.0, help="cloud seconds per wall second (simulator)"
    )
    run.add_argument("--cycle-seconds", type=float, default=CYCLE_SECONDS)
    run.add_argument("--heartbeat-timeout", type=float, default=HEARTBEAT_TIMEOUT_SECONDS)
    run.add_argument("--boot-timeout", type=float, default=BOOT_TIMEOUT_SECONDS)
    run.add_argument("--planned-rows-per-s", type=float, default=50.0, help="for the first budget estimates")
    add_aws_options(run)
    add_budget_options(run)
    run.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from coordinator.job.clock import CloudClock
    from coordinator.job.runner import run_job

    outputs = read_outputs(args.outputs)
    spec = _spec(args)
    cloud = _cloud(args, outputs)
    guard = budget_guard(args)
    run_dir = args.run_dir or runs_dir() / args.job_id
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    result = run_job(spec, cloud=cloud, guard=guard, clock=CloudClock(scale=args.time_scale), run_dir=run_dir)
    outcome = result.outcome
    print(
        f"job {spec.job_id}: {outcome.segments_done}/{outcome.segments_total} segments done, "
        f"{result.merge.rows if result.merge else 0} rows merged, {len(outcome.attempts)} attempts, "
        f"ledger {result.ledger_path}; no instance of the job left (re-listed)",
        flush=True,
    )
    if not outcome.succeeded:
        for segment, why in sorted(outcome.failures.items()):
            print(f"FAILED {segment}: {why}", file=sys.stderr)
        return 1
    return 0


def _spec(args: argparse.Namespace) -> JobSpec:
    options: dict[str, float] = {}
    if args.spot_share is not None:
        options["spot_share"] = args.spot_share
    if args.max_spot_retries is not None:
        options["max_spot_retries"] = args.max_spot_retries
    if args.reserve_hours is not None:
        options["reserve_hours"] = args.reserve_hours
    return JobSpec(
        job_id=args.job_id,
        input_key=args.input_key,
        rows=args.rows,
        segments=args.segments,
        policy=args.policy,
        policy_options=options,
        region=args.region,
        instance_type=args.instance_type,
        planned_rows_per_s=args.planned_rows_per_s / args.time_scale,
        cycle_seconds=args.cycle_seconds,
        heartbeat_timeout=args.heartbeat_timeout,
        boot_timeout=args.boot_timeout,
        deadline_seconds=args.deadline_minutes * 60 if args.deadline_minutes is not None else None,
    )


def _cloud(args: argparse.Namespace, outputs: dict[str, Any]) -> CloudTarget:
    """Clients for the stack's region (real AWS, or the emulator at --endpoint) and the stack's ids."""
    import boto3
    from botocore.config import Config

    from coordinator.sim.emulator import require_loopback

    if args.endpoint:
        require_loopback(args.endpoint)
    session = boto3.session.Session(region_name=outputs.get("region") or args.region)
    retries = Config(retries={"total_max_attempts": 1, "mode": "standard"})
    ec2 = session.client("ec2", endpoint_url=args.endpoint, config=retries)
    s3 = session.client("s3", endpoint_url=args.endpoint, config=Config(s3={"addressing_style": "path"}))
    return CloudTarget(
        ec2=ec2,
        s3=s3,
        bucket=str(outputs["bucket"]),
        templates={k: str(v) for k, v in outputs["launch_template_ids"].items()},
        subnet_id=outputs.get("subnet_id"),
    )
