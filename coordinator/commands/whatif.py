"""`spotbatch whatif`: what would this job cost under each policy, with these spot traces, by this deadline?

Runs the coordinator's policies on a virtual clock (no processes, no cloud) against availability from:
  --trace FILE|FOLDER   real traces ({metadata.gap_seconds, data[]}); say which value means what with
                        --one-means available|preempted (the SkyPilot traces: available)
  --model random        a reclaim with --probability per --interval seconds (the simulator's random model)
  --model run-lengths   runs drawn from the given traces' own available/unavailable run lengths
  --zones               the traces are the zones of one region over the same hours: a spot launch fails
                        over between them (--zone-choice steadiest: the zone with the most capacity over
                        the last 6 hours; first: by the order given), and the optimum may use any of them

Each run starts at a random offset (or draws a new sequence); every policy and the omniscient optimum see
the same windows. The table: mean, p50 and p90 cost, cost / optimum, cost / all on-demand, the share of
deadlines met, reclaims and work redone. `--runs 1 --seed N` shows one run's numbers.

Example (the bench's job on one zone, then failing over between a region's three):
  spotbatch whatif --trace us-west-2a_v100_1.json --work-hours 10 --deadline-hours 16 --runs 50
  spotbatch whatif --zones --trace us-west-2a_v100_1.json --trace us-west-2b_v100_1.json \
      --trace us-west-2c_v100_1.json --work-hours 10 --deadline-hours 16 --runs 50
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from dataclasses import asdict
from pathlib import Path

from coordinator.commands.options import Subcommands, add_rows_option, add_target_options, region_of
from coordinator.cost.pricing import PriceTable
from coordinator.errors import WhatIfError
from coordinator.policies.registry import policy_names
from coordinator.whatif.boot_model import DEFAULT_BOOT_MODEL
from coordinator.whatif.job import WhatIfJob
from coordinator.whatif.study import (
    DEFAULT_POLICIES,
    OPTIMUM,
    Window,
    failover_windows,
    markdown_table,
    random_windows,
    run_length_windows,
    run_study,
    summarise,
    trace_windows,
)
from coordinator.whatif.traces import AvailabilityTrace
from coordinator.whatif.zones import CHOICES

# launch to first row: the boot model's mean (pending, boot, image pull, model load; sources in
# coordinator/whatif/boot_model.py), the same figures the live simulator draws its boots from
DEFAULT_CHANGEOVER_SECONDS = round(DEFAULT_BOOT_MODEL.mean("spot"))
DEFAULT_TICK_SECONDS = 195  # the random model's tick, as in the SkyPilot traces


def add_parser(commands: Subcommands) -> None:
    whatif = commands.add_parser(
        "whatif",
        help="cost, finish time and deadlines met per policy, on a virtual clock against spot traces",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = whatif.add_argument_group("availability")
    source.add_argument(
        "--trace", type=Path, action="append", default=[], help="trace file or folder of *.json"
    )
    source.add_argument("--one-means", choices=("available", "preempted"), default="available")
    source.add_argument(
        "--zones", action="store_true", help="the traces are one region's zones: fail over between them"
    )
    source.add_argument("--zone-choice", choices=CHOICES, default="steadiest", help="with --zones")
    source.add_argument("--model", choices=("trace", "random", "run-lengths"), default="trace")
    source.add_argument(
        "--probability", type=float, default=0.3, help="random model: reclaim chance per interval"
    )
    source.add_argument("--interval", type=float, default=300.0, help="random model: seconds")
    source.add_argument("--tick-seconds", type=int, default=DEFAULT_TICK_SECONDS, help="random model's tick")
    job = whatif.add_argument_group("job")
    size = job.add_mutually_exclusive_group(required=True)
    size.add_argument("--work-hours", type=float, help="the job's work at one instance's speed")
    add_rows_option(size, "rows in the dataset (with --rows-per-s)")
    job.add_argument("--rows-per-s", type=float, help="one instance's measured rows/s")
    job.add_argument("--instances", type=int, default=1, help="segments run in parallel, one instance each")
    job.add_argument("--deadline-hours", type=float, required=True)
    job.add_argument("--changeover-seconds", type=int, default=DEFAULT_CHANGEOVER_SECONDS)
    job.add_argument(
        "--checkpoint-seconds", type=int, default=0, help="work lost to a reclaim at most; 0: drained"
    )
    job.add_argument(
        "--rebalance-lead-seconds",
        type=int,
        default=0,
        help="start the replacement this long before each reclaim (a rebalance recommendation; <= a tick)",
    )
    prices = whatif.add_argument_group("prices (from the price table unless given)")
    prices.add_argument("--spot-price", type=float, help="$/h, overrides the table")
    prices.add_argument("--on-demand-price", type=float, help="$/h, overrides the table")
    whatif.add_argument(
        "--policies",
        default=",".join(DEFAULT_POLICIES),
        help=f"comma-separated, of: {', '.join(policy_names())}",
    )
    whatif.add_argument("--runs", type=int, default=20, help="windows per trace (or sequences per model)")
    whatif.add_argument("--seed", type=int, default=0)
    whatif.add_argument("--json", type=Path, help="also write every run's outcome here")
    add_target_options(whatif)
    whatif.set_defaults(handler=whatif_command)


def _trace_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.glob("*.json"))
            if not found:
                raise WhatIfError(f"--trace {path}: the folder holds no *.json traces")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise WhatIfError(f"--trace {path}: no such file or folder")
    return files


def job_from(args: argparse.Namespace) -> WhatIfJob:
    if args.rows is not None:
        if not args.rows_per_s or args.rows_per_s <= 0:
            raise WhatIfError("--rows needs --rows-per-s (one instance's measured rows per second, > 0)")
        work_hours = args.rows / args.rows_per_s / 3600
    else:
        work_hours = args.work_hours
    if not work_hours > 0:
        raise WhatIfError(f"--work-hours must be positive, got {work_hours}")
    if not args.deadline_hours > 0:
        raise WhatIfError(f"--deadline-hours must be positive, got {args.deadline_hours}")
    table = PriceTable.load() if args.spot_price is None or args.on_demand_price is None else None

    def price(given: float | None, market: str) -> float:
        if given is not None:
            return given
        assert table is not None
        return table.lookup(
            "aws", region_of(args, offline=True), args.instance_type, market
        ).instance_usd_per_hour

    spot, on_demand = price(args.spot_price, "spot"), price(args.on_demand_price, "on-demand")
    if not (math.isfinite(spot) and math.isfinite(on_demand) and 0 < spot <= on_demand):
        raise WhatIfError(
            f"--spot-price {spot:g} / --on-demand-price {on_demand:g}: both positive, and spot at most "
            "on-demand (EC2 caps a spot price at the on-demand price)"
        )
    return WhatIfJob(
        work_seconds=round(work_hours * 3600),
        deadline_seconds=round(args.deadline_hours * 3600),
        changeover_seconds=args.changeover_seconds,
        checkpoint_seconds=args.checkpoint_seconds,
        rebalance_lead_seconds=args.rebalance_lead_seconds,
        instances=args.instances,
        spot_usd_per_hour=spot,
        on_demand_usd_per_hour=on_demand,
    )


def windows_from(args: argparse.Namespace, job: WhatIfJob) -> list[Window]:
    if args.runs <= 0:
        raise WhatIfError(f"--runs must be positive, got {args.runs}")
    rng = random.Random(args.seed)
    if args.zones and args.model != "trace":
        raise WhatIfError("--zones: fails over between two or more --trace files (with --model trace)")
    if args.model == "random":
        return random_windows(args.probability, args.interval, args.tick_seconds, job, args.runs, rng)
    files = _trace_files(args.trace)
    if not files:
        raise WhatIfError(f"--model {args.model} needs --trace FILE|FOLDER")
    traces = [AvailabilityTrace.load(path, one_means=args.one_means) for path in files]
    if args.zones:
        if len(traces) < 2:
            raise WhatIfError(f"--zones: fails over between two or more --trace files, got {len(traces)}")
        return failover_windows(traces, job, args.runs, rng, args.zone_choice)
    windows: list[Window] = []
    for trace in traces:
        if args.model == "run-lengths":
            windows += run_length_windows(trace, job, args.runs, rng)
        else:
            windows += trace_windows(trace, job, args.runs, rng)
    return windows


def whatif_command(args: argparse.Namespace) -> int:
    job = job_from(args)
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    windows = windows_from(args, job)
    started = time.perf_counter()
    results = run_study(policies, job, windows)
    took = time.perf_counter() - started
    print(
        f"{len(windows)} windows x {len(policies)} policies + optimum in {took:.2f} s; job: "
        f"{job.work_seconds / 3600:g} h of work on {job.instances} instance(s), deadline "
        f"{job.deadline_seconds / 3600:g} h, changeover {job.changeover_seconds} s, spot "
        f"{job.spot_usd_per_hour:g} $/h, "
        f"on-demand {job.on_demand_usd_per_hour:g} $/h (all on-demand: ${job.all_on_demand_usd:.2f})"
    )
    print(markdown_table(summarise(results, job)))
    if len(windows) == 1:
        print(f"\none run ({windows[0].source}):")
        for r in results:
            if r.policy == OPTIMUM:
                continue
            o = r.outcome
            finish = f"{o.finish_seconds / 3600:.2f} h" if o.finish_seconds is not None else "not finished"
            redone = (
                f", rows redone {round(o.redone_seconds * args.rows_per_s)}" if args.rows is not None else ""
            )
            print(
                f"  {r.policy:17s} ${r.cost_usd:.2f} finish {finish} deadline "
                f"{'met' if o.deadline_met else 'MISSED'} "
                f"reclaims {o.interruptions} redone {o.redone_seconds / 3600:.2f} h{redone}"
            )
    if args.json:
        lines = [
            json.dumps(
                {
                    **asdict(r.outcome),
                    "billed_usd": r.outcome.cost_usd,  # what the instances cost, finished or not
                    "cost_usd": r.cost_usd,  # and the work left charged at on-demand: the printed cost
                    "policy": r.policy,
                    "window": r.window.source,
                    "optimum_usd": r.optimum_usd,
                }
            )
            for r in results
        ]
        args.json.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return 0
