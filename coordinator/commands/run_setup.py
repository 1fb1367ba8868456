"""What `spotbatch run` does before the job starts: the target, the input, the prices and the pre-flight.

Usage::

    cloud = connect(args, stack)                    # AWS in the stack's region, or the emulator
    key, rows = input_of(args, cloud)               # --input uploaded, or --input-key counted
    quotes = quotes_for_run(args, cloud, spec)      # the table's, or --live-prices with the table behind
    preflight_for_run(args, cloud, spec, quotes, guard)   # PreflightFailed (exit 4) unless all pass
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from coordinator.cost.budget import BudgetGuard
from coordinator.cost.job_quotes import JobQuotes
from coordinator.cost.pricing import PriceTable, estimate_job_cost
from coordinator.errors import ConfigError
from coordinator.job.aws import CloudTarget
from coordinator.job.core import JobSpec, quotes_for
from coordinator.stack.defaults import require_worker_type
from coordinator.stack.emulator_policy import for_emulator
from coordinator.stack.outputs import StackOutputs
from coordinator.stack.target import AwsTarget


def connect(args: argparse.Namespace, stack: StackOutputs) -> CloudTarget:
    if args.region and args.region != stack.region:
        raise ConfigError(f"--region {args.region}: the stack is in {stack.region}")
    target = AwsTarget.chosen(stack.region, args.endpoint)
    cloud = CloudTarget.connect(target, stack)
    # a stack on an emulator: the job roles as moto can check them (the simulator's widening)
    return replace(cloud, worker_policy=for_emulator) if stack.emulator else cloud


def input_of(args: argparse.Namespace, cloud: CloudTarget) -> tuple[str, int]:
    if args.input is not None:
        from coordinator.build.upload import upload_input

        uploaded = upload_input(
            cloud.s3, cloud.bucket, args.input, text_column=args.text_column, id_column=args.id_column
        )
        what = "uploaded" if uploaded.uploaded else "already there"
        print(f"input {args.input}: {uploaded.rows} rows, s3://{cloud.bucket}/{uploaded.key} ({what})")
        if uploaded.numbered:
            print(f"  ids: the row numbers 0..{uploaded.rows - 1} (no {args.id_column or 'id'!r} column)")
        return uploaded.key, uploaded.rows
    rows = _rows_in(cloud, str(args.input_key))
    if args.rows is not None and args.rows != rows:  # a count that disagrees pays for work it cannot do
        raise ConfigError(f"--rows {args.rows}: s3://{cloud.bucket}/{args.input_key} has {rows} rows")
    return str(args.input_key), rows


def _rows_in(cloud: CloudTarget, key: str) -> int:
    """The row count of a Parquet object, or of every one under a prefix ending in `/`, in the stack's
    bucket, from their footers (no rows read)."""
    from botocore.exceptions import ClientError

    from coordinator.errors import DataError
    from coordinator.job.data import list_input
    from inference.s3_store import S3Store

    try:
        files = list_input(S3Store(cloud.bucket, "", client=cloud.s3), key)
    except DataError as error:
        raise ConfigError(f"--input-key {key}: {error}") from None
    except ClientError as error:
        raise ConfigError(f"--input-key {key}: s3://{cloud.bucket}/{key}: {error}") from None
    return sum(file.rows for file in files)


def quotes_for_run(args: argparse.Namespace, cloud: CloudTarget, spec: JobSpec) -> JobQuotes:
    """Each market's quote for each of the job's types: the table's, or live with the table behind."""
    if not args.live_prices:
        return quotes_for(spec)
    from coordinator.cost.live_prices import PRICING_REGION, live_quotes

    pricing, table = cloud.target.in_region(PRICING_REGION).client("pricing"), PriceTable.load()
    pools = {}
    for kind in spec.pool_types:
        quotes = live_quotes(
            table,
            region=spec.region,
            instance_type=kind,
            zones=sorted(cloud.stack.subnet_ids),
            ec2=cloud.ec2,
            pricing=pricing,
        )
        pools.update({(market, kind): quote for market, quote in quotes.items()})
    return JobQuotes(pools, spec.pool_types[0])


def template_settings(ec2: Any, template_id: str, version: str) -> tuple[str, int | None]:
    """The shutdown behaviour and the max-lifetime tag of the template version the job will launch: what
    auto-termination checks."""
    data = ec2.describe_launch_template_versions(LaunchTemplateId=template_id, Versions=[version])[
        "LaunchTemplateVersions"
    ][0]["LaunchTemplateData"]
    behavior = str(data.get("InstanceInitiatedShutdownBehavior", "stop"))
    lifetime = None
    for spec in data.get("TagSpecifications", []):
        for tag in spec.get("Tags", []):
            if tag["Key"] == "spotbatch:max-lifetime-seconds":
                lifetime = int(tag["Value"])
    return behavior, lifetime


def preflight_for_run(
    args: argparse.Namespace,
    cloud: CloudTarget,
    spec: JobSpec,
    quotes: JobQuotes,
    guard: BudgetGuard,
) -> None:
    from coordinator.paths import preflight_log_path
    from coordinator.preflight import checks as preflight
    from coordinator.preflight.quotas import check_vcpu_quotas

    table = PriceTable.load()
    hours = spec.rows / max(spec.planned_rows_per_s * args.time_scale, 1e-9) / 3_600 / spec.segments
    rate = max(q.rate_usd_per_hour for q in quotes.by_type.values())  # the dearest pool: a ceiling
    estimate = estimate_job_cost(work_hours=hours, instances=spec.segments, rate_usd_per_hour=rate)
    market, template = next(iter(cloud.stack.launch_template_ids.items()))
    behavior, lifetime = template_settings(cloud.ec2, template, cloud.stack.template_version(market))
    plan = preflight.LaunchPlan(
        job_id=spec.job_id,
        estimate_usd=estimate.total_usd,
        price=quotes["spot"],
        shutdown_behavior=behavior,
        max_lifetime_seconds=lifetime,
    )
    results = preflight.run_preflight(plan, ec2=cloud.ec2, guard=guard)
    results.append(
        check_vcpu_quotas(
            cloud.target.client("service-quotas"),
            cloud.ec2,
            instance_type=spec.instance_type,
            vcpus=max(table.vcpus(kind) for kind in spec.pool_types),
            instances=spec.instances_at_once,
            markets=("spot", "on-demand"),
        )
    )
    overrides = preflight.parse_overrides(args.override)
    results = preflight.apply_overrides(results, overrides, preflight_log_path())
    print(preflight.format_results(results, cloud.target.describe))
    preflight.require_preflight(results)


def pool_types(text: str | None, stack: StackOutputs) -> tuple[str, ...]:
    """`--instance-types a,b`: the job's types, each priced in the stack region's table and of its kind
    (GPU or CPU: the boot script the stack rendered runs the worker for one); None: the stack's type."""
    if not text:
        return ()
    table, kinds = PriceTable.load(), tuple(dict.fromkeys(k.strip() for k in text.split(",") if k.strip()))
    gpu_stack = table.gpus("aws", stack.instance_type) > 0
    for kind in kinds:
        require_worker_type(kind, "--instance-types")
        table.quote("aws", stack.region, kind, "on-demand")  # PriceError naming the type when unpriced
        if (table.gpus("aws", kind) > 0) != gpu_stack:
            what = {True: "a GPU type", False: "a CPU type"}
            raise ConfigError(
                f"--instance-types {kind}: {what[not gpu_stack]}, and the stack's {stack.instance_type} is "
                f"{what[gpu_stack]}: the stack renders the worker's boot for one kind, so are the job's types"
            )
    return kinds


def segment_rows(args: argparse.Namespace) -> int | None:
    """Rows per segment for `--segment-minutes` at the planned speed (None: by count)."""
    if args.segment_minutes is None:
        return None
    rows: float = args.segment_minutes * 60 * args.planned_rows_per_s
    return max(1, round(rows))
