"""`spotbatch plan`: where to run a job, chosen by cost per row, with every input's source.

    spotbatch plan --input data.parquet [--deadline-minutes 90] [--regions us-east-1,eu-south-2]
        [--json plan.json]
    spotbatch plan --rows 2100000 [--bytes-per-row 88] [--types c7i.xlarge,m7i.xlarge]

Prices every (region, zone, type) of the price table that can run the job (`coordinator/plan/`), prints
the five cheapest and the pinned us-east-1 default, the fair baseline (the cheapest on-demand way over the
regions considered) and what the plan assumed, and writes it all as JSON with `--json`.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from coordinator.build.local_parquet import rows_and_bytes
from coordinator.commands.options import Subcommands, add_rows_option, add_segment_options
from coordinator.cost.pricing import PriceTable
from coordinator.errors import ConfigError, DataError
from coordinator.plan.planner import Job, Plan, Ranked, make_plan
from coordinator.plan.throughput import Throughputs
from coordinator.stack.opt_in_regions import OPT_IN_REGIONS, enable_hint

DEFAULT_BYTES_PER_ROW = 88  # the default dataset: 10,000 movie sentences in 877 KB of Parquet


def add_parser(commands: Subcommands) -> None:
    plan = commands.add_parser("plan", help="price the job in every pool, per row; rank; show the arithmetic")
    size = plan.add_mutually_exclusive_group(required=True)
    size.add_argument(
        "--input", type=Path, help="the Parquet dataset, a file or a folder of them (rows and size from it)"
    )
    add_rows_option(size, "rows of the job, without a file")
    plan.add_argument("--bytes-per-row", type=float, default=DEFAULT_BYTES_PER_ROW, help="with --rows")
    plan.add_argument("--data-region", default="us-east-1", help="where the input is (transfer from it)")
    plan.add_argument("--deadline-minutes", type=float, help="price the deadline policy, and size for it")
    plan.add_argument("--regions", default="", help="comma-separated; all of the price table's if empty")
    plan.add_argument(
        "--types", default="", help="comma-separated instance types; all with a figure if empty"
    )
    plan.add_argument("--local-zones", action="store_true", help="take Local and Wavelength Zones too")
    add_segment_options(
        plan.add_mutually_exclusive_group(),
        segments="a segment count instead of the sized one",
        minutes="segments of about this many minutes of work on each type",
    )
    plan.add_argument("--max-instances", type=int, help="the account's quota, in instances of a type")
    plan.add_argument("--throughput", action="append", default=[], metavar="TYPE=ROWS_PER_S")
    plan.add_argument("--interruption-probability", type=float, default=0.3, help="per interval (0.3)")
    plan.add_argument("--interruption-interval", type=float, default=300.0, help="seconds (300)")
    plan.add_argument("--transfer-usd-per-gb", type=float, default=0.02)
    plan.add_argument("--samples", type=int, default=400, help="matrix-model runs per shown pool and policy")
    plan.add_argument("--json", type=Path, help="write the plan here")
    plan.set_defaults(handler=plan_command)


def plan_command(args: argparse.Namespace) -> int:
    started = time.monotonic()
    job = _job(args)
    result = make_plan(
        job,
        PriceTable.load(),
        Throughputs.load(given=_given(args.throughput)),
        regions=_listed(args.regions),
        types=_listed(args.types),
        local_zones=args.local_zones,
        samples=args.samples,
    )
    print(render(result))
    if args.json:
        args.json.write_text(json.dumps(to_json(result), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"plan written to {args.json}")
    took = time.monotonic() - started
    print(f"({len(result.ranked) + 1} pools sampled of {result.pools_priced} priced in {took:.1f} s)")
    return 0


def _job(args: argparse.Namespace) -> Job:
    if args.input is not None:
        rows, size = _dataset(args.input)
    else:
        rows, size = args.rows, round(args.rows * args.bytes_per_row)
    minutes = args.segment_minutes
    deadline = args.deadline_minutes
    if deadline is not None and not (math.isfinite(deadline) and deadline > 0):
        raise ConfigError(f"--deadline-minutes {deadline}: a positive number of minutes")
    if not 0 <= args.interruption_probability < 1 or not args.interruption_interval > 0:
        raise ConfigError(
            f"--interruption-probability {args.interruption_probability} / --interruption-interval "
            f"{args.interruption_interval}: a probability in [0, 1) per a positive number of seconds"
        )
    if args.samples < 20:
        raise ConfigError(f"--samples {args.samples}: at least 20 (the 90% range needs them)")
    return Job(
        rows=rows,
        input_bytes=size,
        data_region=args.data_region,
        deadline_seconds=deadline * 60 if deadline is not None else None,
        segments=args.segments,
        segment_seconds=minutes * 60 if minutes is not None else None,
        max_instances=args.max_instances,
        probability=args.interruption_probability,
        interval=args.interruption_interval,
        transfer_usd_per_gb=args.transfer_usd_per_gb,
    )


def _dataset(path: Path) -> tuple[int, int]:
    try:
        return rows_and_bytes(path)
    except DataError as error:
        raise ConfigError(f"--input {error}") from None


def _given(items: list[str]) -> dict[str, float]:
    given = {}
    for item in items:
        kind, _, value = item.partition("=")
        try:
            rows_per_second = float(value)
        except ValueError:
            rows_per_second = math.nan
        if not kind or not (math.isfinite(rows_per_second) and rows_per_second > 0):
            raise ConfigError(f"--throughput {item!r}: expected TYPE=ROWS_PER_S, a positive number")
        given[kind] = rows_per_second
    return given


def _listed(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


def render(plan: Plan) -> str:
    job = plan.job
    lines = [
        f"job: {job.rows:,} rows, {job.input_bytes / 1e6:,.1f} MB in {job.data_region}"
        + (f", deadline {job.deadline_seconds / 60:g} min" if job.deadline_seconds else ""),
        f"baseline (the cheapest on-demand way over the regions considered): {plan.baseline.region} "
        f"{plan.baseline.instance_type}, ${plan.baseline_usd:.4f}",
        "",
        f"{'pool':<36} {'policy':<10} {'expected':>9} {'90% range':>19} {'savings':>8} {'job min':>8} "
        f"{'deadline':>8} {'segments':>8}",
    ]
    for ranked in plan.ranked:
        lines += _rows(plan, ranked)
    if plan.default is not None:
        lines += ["", "pinned default (what `make simulate` runs):", *_rows(plan, plan.default)]
    opt_in = sorted({r.pool.region for r in plan.ranked} & OPT_IN_REGIONS)
    if opt_in:
        lines += ["", *[f"note: {enable_hint(region)} (a new account has it disabled)" for region in opt_in]]
    lines += ["", "inputs:", *[f"  {line}" for line in inputs(plan)]]
    if plan.skipped:
        lines += ["left out:", *[f"  {what}: {why}" for what, why in sorted(plan.skipped.items())]]
    return "\n".join(lines)


def _rows(plan: Plan, ranked: Ranked) -> list[str]:
    out = []
    for policy, estimate in ranked.sampled.items():
        low, high = estimate.range_usd
        savings = 1 - estimate.mean_usd / plan.baseline_usd
        met = "-" if estimate.deadline_met_share is None else f"{estimate.deadline_met_share:.0%}"
        out.append(
            f"{ranked.pool.name:<36} {policy:<10} {estimate.mean_usd:>9.4f} "
            f"{f'{low:.4f}-{high:.4f}':>19} {savings:>8.1%} {estimate.mean_job_seconds / 60:>8.1f} "
            f"{met:>8} {ranked.sizing.segments:>8}"
        )
    return out


def inputs(plan: Plan) -> list[str]:
    pools = [r.pool for r in plan.ranked] + ([plan.default.pool] if plan.default else [])
    figures = {p.throughput.instance_type: p.throughput for p in pools}
    first = plan.ranked[0]
    job, sizing = plan.job, first.sizing
    samples = first.sampled[job.policies[0]].samples
    return [
        f"prices: {first.pool.spot.source}",
        *[f"throughput {kind}: {figure.describe()}" for kind, figure in sorted(figures.items())],
        f"interruptions: {job.probability:.0%} of spot instances reclaimed per {job.interval:g} s, every "
        "pool alike (the task's rate; a zone's own history is not in the price table)",
        f"boots: {job.boot.describe()}",
        f"transfer: ${job.transfer_usd_per_gb}/GB for input read from another region than {job.data_region}",
        f"sizing ({first.pool.instance_type}): {sizing.segments} segments of about "
        f"{job.rows / sizing.segments:,.0f} rows, {sizing.segment_seconds / 60:.1f} minutes of work each "
        f"({sizing.why}); a checkpoint "
        f"every {sizing.checkpoint_seconds:.0f} s of work ({sizing.checkpoint_every_batches} batches), "
        "Young's interval for the interruption rate",
        f"expected costs, ranges, job times: the matrix model, {samples} runs per pool and policy; "
        f"ranking by the closed forms over {plan.pools_priced} pools",
    ]


def to_json(plan: Plan) -> dict[str, Any]:
    def ranked(r: Ranked) -> dict[str, Any]:
        pool = r.pool
        return {
            "region": pool.region,
            "opt_in_region": pool.region in OPT_IN_REGIONS,
            "zone_id": pool.zone_id,
            "instance_type": pool.instance_type,
            "spot_usd_per_hour": pool.spot.usd_per_hour,
            "on_demand_usd_per_hour": pool.on_demand.usd_per_hour,
            "throughput": asdict(pool.throughput),
            "sizing": asdict(r.sizing),
            "closed_form_usd": r.closed,
            "sampled": {p: asdict(e) for p, e in r.sampled.items()},
        }

    return {
        "job": {k: v for k, v in asdict(plan.job).items() if k != "boot"},
        "baseline": {
            "region": plan.baseline.region,
            "instance_type": plan.baseline.instance_type,
            "usd": plan.baseline_usd,
        },
        "ranked": [ranked(r) for r in plan.ranked],
        "default": ranked(plan.default) if plan.default else None,
        "pools_priced": plan.pools_priced,
        "inputs": inputs(plan),
        "skipped": plan.skipped,
    }
