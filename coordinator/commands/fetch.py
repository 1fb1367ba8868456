"""`spotbatch fetch JOB [--csv]`: download a finished job's verified output from the stack's bucket."""

from __future__ import annotations

import argparse
from pathlib import Path

from coordinator.commands.options import Subcommands, valid_job_id
from coordinator.paths import runs_dir


def add_parser(commands: Subcommands) -> None:
    fetch = commands.add_parser(
        "fetch", help="download a finished job's output (the parts its manifest lists) as local files"
    )
    fetch.add_argument("job_id", type=valid_job_id)
    fetch.add_argument("--csv", action="store_true", help="a predictions.csv beside predictions.parquet")
    fetch.add_argument("--out", type=Path, help="default runs/<job id>")
    fetch.add_argument(
        "--outputs", type=Path, help="the stack's saved outputs (default runs/infra/aws/outputs.json)"
    )
    fetch.add_argument("--endpoint", help="an emulator's endpoint (default: AWS)")
    fetch.set_defaults(handler=fetch_command, region=None)


def fetch_command(args: argparse.Namespace) -> int:
    from coordinator.commands.run_setup import connect
    from coordinator.job.data import fetch_output
    from coordinator.stack.outputs import StackOutputs
    from inference.layout import job_prefix
    from inference.s3_store import S3Store

    stack = StackOutputs.read(args.outputs or runs_dir() / "infra" / "aws" / "outputs.json")
    cloud = connect(args, stack)
    store = S3Store(cloud.bucket, job_prefix(args.job_id), client=cloud.s3)
    fetched = fetch_output(store, args.out or runs_dir() / args.job_id, csv=args.csv)
    print(
        f"job {args.job_id}: {fetched.rows} rows from {fetched.parts} part(s), "
        f"{fetched.bytes_read / 1e6:.1f} MB: " + ", ".join(str(path) for path in fetched.paths)
    )
    return 0
