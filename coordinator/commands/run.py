"""`spotbatch run`: one job on a deployed stack, the coordinator alone (the instances do the work).

The stack is read from its saved outputs (`make apply-real` writes runs/infra/aws/outputs.json). The input
is a local file (`--input`: validated, uploaded under data/, its rows counted) or a key already in the
bucket (`--input-key`). Against AWS the usual credential chain is used, in the stack's region; with
`--endpoint` an emulator's (loopback only; as the user in $SPOTBATCH_EMULATOR_ACCESS_KEY_ID and
$SPOTBATCH_EMULATOR_SECRET_ACCESS_KEY if set, else its own fake credentials). Before any launch the
pre-flight runs (budget headroom, teardown dry run, price of the day, vCPU quotas, no stray instances).
Started again with the same `--job-id` and `--run-dir`, it resumes the job: live instances are adopted,
lost ones recovered, nothing is launched twice. At the end: the ledger's summary and where the
predictions are.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

from coordinator.commands.options import (
    JOB_ID,
    JOB_ID_RULE,
    Subcommands,
    add_budget_options,
    add_rows_option,
    add_segment_options,
    add_target_options,
    budget_guard,
    input_key,
    valid_job_id,
)
from coordinator.commands.plan_file import DEFAULT_PLANNED_ROWS_PER_S
from coordinator.errors import BudgetConfigError, ConfigError, RunStorageError
from coordinator.job.core import (
    BOOT_TIMEOUT_SECONDS,
    CYCLE_SECONDS,
    HEARTBEAT_TIMEOUT_SECONDS,
    JobSpec,
    WorkerTuning,
)
from coordinator.paths import runs_dir
from coordinator.stack.outputs import StackOutputs
from inference.config import DEFAULT_BATCH_SIZE, DEFAULT_CHECKPOINT_EVERY
from inference.heartbeat import HEARTBEAT_SECONDS, STEADY_HEARTBEAT_SECONDS
from inference.interruption import NOTICE_POLL_SECONDS
from inference.layout import JOB_MANIFEST_KEY


def add_parser(commands: Subcommands) -> None:
    run = commands.add_parser(
        "run",
        help="run one job on a deployed stack (real AWS, or an emulator with --endpoint)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "--outputs", type=Path, help="the stack's saved outputs (default runs/infra/aws/outputs.json)"
    )
    add_input_options(run)
    run.add_argument("--job-id", type=valid_job_id, help="default: the input's name and the time (UTC)")
    run.add_argument("--run-dir", type=Path, help="default runs/<job id>")
    run.add_argument(
        "--policy",
        default="hybrid",
        help="on-demand, spot-only, hybrid, or a deadline policy (deadline, greedy, safety-greedy, "
        "uniform-progress)",
    )
    run.add_argument("--deadline-minutes", type=float, help="cloud minutes from the start; deadline policies")
    reserve = "hours of slack the deadline policy keeps for returns to spot (default 1.5)"
    run.add_argument("--reserve-hours", type=float, help=reserve)
    run.add_argument("--spot-share", type=float, help="hybrid: share of segments that start on spot")
    run.add_argument("--max-spot-retries", type=int)
    run.add_argument("--live-prices", action="store_true", help="spot and on-demand prices from AWS now")
    run.add_argument(
        "--time-scale", type=float, default=1.0, help="cloud seconds per wall second (simulator)"
    )
    run.add_argument("--cycle-seconds", type=float, default=CYCLE_SECONDS)
    run.add_argument("--heartbeat-timeout", type=float, default=HEARTBEAT_TIMEOUT_SECONDS)
    run.add_argument("--boot-timeout", type=float, default=BOOT_TIMEOUT_SECONDS)
    rebalance = "start the replacement on EC2's rebalance recommendation (Capacity Rebalancing)"
    run.add_argument("--replace-on-rebalance", action="store_true", help=rebalance)
    add_target_options(
        run,
        instance_type=None,
        many_types="the instance types the job may run on, comma-separated (default: the stack's); each in "
        "every zone is a capacity pool, cheapest tried first",
        region="must be the stack's region, if given",
        endpoint="emulator endpoint (loopback only); omit for AWS",
        override=True,
    )
    no_events = "ignore the stack's EC2 events queue: see interruptions by heartbeats and listings only"
    run.add_argument("--no-events", dest="use_events", action="store_false", help=no_events)
    add_sizing_options(run)
    add_worker_options(run)
    add_output_options(run)
    add_budget_options(run)
    run.set_defaults(handler=run_command)


def add_sizing_options(run: argparse.ArgumentParser) -> None:
    """How the job is cut and first priced: by hand, or as `spotbatch plan` chose."""
    add_segment_options(
        run,
        segments="at most the row count (default 10, or the plan's)",
        minutes="segments sized by work: about this many cloud minutes each at --planned-rows-per-s",
        instances="instances of the job at once (default: one per segment); the others wait their turn",
    )
    run.add_argument(
        "--plan", type=Path, help="`spotbatch plan --json`'s choice: types, segments, checkpoints"
    )
    run.add_argument(
        "--planned-rows-per-s",
        type=float,
        default=DEFAULT_PLANNED_ROWS_PER_S,
        help="for the first budget estimates (the plan's type's, with --plan)",
    )


def add_input_options(run: argparse.ArgumentParser) -> None:
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", type=Path, help="a local Parquet, CSV or JSONL file to upload and predict")
    source.add_argument(
        "--input-key",
        type=input_key,
        help="a dataset already in the stack's bucket: a Parquet object, or a prefix ending in / (its "
        ".parquet objects)",
    )
    add_rows_option(run, "rows in --input-key's dataset (checked against its metadata)")
    run.add_argument("--text-column", default="text", help="--input's text column")
    run.add_argument(
        "--id-column", help="--input's id column (default: id, or the row numbers; '': the row numbers)"
    )


def add_output_options(run: argparse.ArgumentParser) -> None:
    run.add_argument(
        "--no-fetch",
        dest="fetch",
        action="store_false",
        help="leave the verified output in S3 (a big job; `spotbatch fetch JOB` downloads it later)",
    )


def add_worker_options(run: argparse.ArgumentParser) -> None:
    worker = run.add_argument_group("the workers (tags the boot script passes on)")
    worker.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    worker.add_argument("--checkpoint-every", type=int, default=DEFAULT_CHECKPOINT_EVERY, help="batches")
    worker.add_argument(
        "--heartbeat-seconds", type=float, default=HEARTBEAT_SECONDS, help="starting, draining"
    )
    steady = f"running ({STEADY_HEARTBEAT_SECONDS:g}, or a third of --heartbeat-timeout if shorter)"
    worker.add_argument("--steady-heartbeat-seconds", type=float, help=steady)
    worker.add_argument("--notice-poll-seconds", type=float, default=NOTICE_POLL_SECONDS)


def run_command(args: argparse.Namespace) -> int:
    from coordinator.commands.run_setup import connect, input_of, preflight_for_run, quotes_for_run
    from coordinator.job.core import CloudClock
    from coordinator.job.loop import run_job

    guard = budget_guard(args)  # before anything is read, uploaded or spent
    outputs = args.outputs or runs_dir() / "infra" / "aws" / "outputs.json"
    stack = StackOutputs.read(outputs)
    cloud = connect(args, stack)
    key, rows = input_of(args, cloud)
    job_id = args.job_id or default_job_id(Path(args.input or key))
    if not JOB_ID.match(job_id):  # a default made from the input's name
        raise ConfigError(f"--job-id {job_id!r}: {JOB_ID_RULE}")
    if args.plan is not None:
        from coordinator.commands.plan_file import apply_plan

        apply_plan(args, stack.region, rows)
    spec = _spec(args, job_id, key, rows, stack)
    quotes = quotes_for_run(args, cloud, spec)
    preflight_for_run(args, cloud, spec, quotes, guard)
    run_dir = args.run_dir or runs_dir() / job_id
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    clock = CloudClock(scale=args.time_scale)
    # a log line lost to a full disk is not worth a traceback: the state is the record
    logging.raiseExceptions = False
    try:
        result = run_job(spec, cloud=cloud, guard=guard, clock=clock, run_dir=run_dir, quotes=quotes)
    except (RunStorageError, BudgetConfigError, OSError) as error:
        what = f"{error.filename}: {error.strerror}" if isinstance(error, OSError) else str(error)
        raise RunStorageError(
            f"{what}. Every instance of job {job_id} was terminated; the checkpoints are in S3. Make "
            f"{run_dir} writable (or free space), then resume: the same command with --job-id {job_id}"
        ) from None
    outcome = result.outcome
    verified = f"{result.manifest.rows} rows verified exactly once" if result.manifest else "not verified"
    print(
        f"job {job_id}: {outcome.segments_done}/{outcome.segments_total} segments done, {verified}, "
        f"{result.merge.rows if result.merge else 0} rows fetched, {len(outcome.attempts)} attempts; "
        "no instance of the job left (re-listed)",
        flush=True,
    )
    print_summary(result.ledger_path, run_dir, fetched=result.merge is not None)
    if result.manifest and result.merge is None:
        print(f"output s3://{cloud.bucket}/jobs/{job_id}/{JOB_MANIFEST_KEY} (spotbatch fetch {job_id})")
    if outcome.stopped:
        print(f"stopped: {outcome.stopped}", file=sys.stderr)
        return 2
    if not outcome.succeeded:
        for segment, why in sorted(outcome.failures.items()):
            print(f"FAILED {segment}: {why}", file=sys.stderr)
        return 1
    return 0


DEFAULT_SEGMENTS = 10


def default_job_id(source: Path) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]", "-", source.stem)[:28].strip("-._") or "job"
    return f"{stem}-{datetime.now(UTC):%Y%m%d-%H%M%S}"


def print_summary(ledger_path: Path | None, run_dir: Path, *, fetched: bool = True) -> None:
    from coordinator.cost.ledger import read_ledger

    if ledger_path is None:
        return
    _, summary = read_ledger(ledger_path)
    if summary is None:
        return
    usage = ""
    if summary.cpu_percent is not None:
        usage = f"; CPU {summary.cpu_percent:.0f}% avg, memory {summary.memory_mb or 0:.0f} MB max"
    share = summary.heartbeat_put_usd / summary.total_cost_usd * 100 if summary.total_cost_usd > 0 else 0.0
    usage += (
        f"; heartbeats {summary.heartbeat_puts_per_instance_hour:.0f} PUTs per instance-hour, "
        f"${summary.heartbeat_put_usd:.5f} ({share:.2f}% of the instances' cost)"
    )
    print(
        f"cost ${summary.total_cost_usd:.4f} (spot ${summary.spot_cost_usd:.4f}, on-demand "
        f"${summary.on_demand_cost_usd:.4f}); all on-demand ${summary.all_on_demand_cost_usd:.4f}, saved "
        f"{summary.savings_pct:.1f}%; {summary.interruptions} interruption(s), {summary.rows_redone} rows "
        f"redone{usage}\nledger {ledger_path}"
        + (f"\npredictions {run_dir / 'predictions.parquet'} (and .csv)" if fetched else "")
    )


def _spec(args: argparse.Namespace, job_id: str, key: str, rows: int, stack: StackOutputs) -> JobSpec:
    from coordinator.commands.run_setup import pool_types, segment_rows

    options: dict[str, float] = {}
    if args.spot_share is not None:
        options["spot_share"] = args.spot_share
    if args.max_spot_retries is not None:
        options["max_spot_retries"] = args.max_spot_retries
    if args.reserve_hours is not None:
        options["reserve_hours"] = args.reserve_hours
    return JobSpec(
        job_id=job_id,
        input_key=key,
        rows=rows,
        segments=min(args.segments or DEFAULT_SEGMENTS, rows),  # a segment is at least a row
        max_instances=args.max_instances,
        segment_rows=segment_rows(args),
        fetch_results=args.fetch,
        policy=args.policy,
        policy_options=options,
        region=stack.region,
        instance_type=stack.instance_type,
        instance_types=pool_types(args.instance_types, stack),
        planned_rows_per_s=args.planned_rows_per_s / args.time_scale,
        cycle_seconds=args.cycle_seconds,
        heartbeat_timeout=args.heartbeat_timeout,
        boot_timeout=args.boot_timeout,
        deadline_seconds=args.deadline_minutes * 60 if args.deadline_minutes is not None else None,
        replace_on_rebalance=args.replace_on_rebalance,
        use_events=args.use_events,
        tuning=WorkerTuning(
            batch_size=args.batch_size,
            checkpoint_every=args.checkpoint_every,
            heartbeat_seconds=args.heartbeat_seconds,
            steady_heartbeat_seconds=steady_heartbeat(args),
            notice_poll_seconds=args.notice_poll_seconds,
        ),
    )


def steady_heartbeat(args: argparse.Namespace) -> float:
    """A running worker's heartbeat interval: at least two beats must fit in the coordinator's timeout."""
    steady = args.steady_heartbeat_seconds
    if steady is None:
        return float(min(STEADY_HEARTBEAT_SECONDS, args.heartbeat_timeout / 3))
    if steady <= 0 or steady * 2 > args.heartbeat_timeout:
        raise ConfigError(
            f"--steady-heartbeat-seconds {steady:g}: must be above 0 and at most half of "
            f"--heartbeat-timeout ({args.heartbeat_timeout:g} s), or a live worker is taken for lost"
        )
    return float(steady)
