"""`spotbatch run --plan plan.json`: the run takes what `spotbatch plan --json` chose.

From the plan: the cheapest pool's type in the stack's region and the other types ranked there (the fleet
tries them cheapest first, zone by zone through the zone IDs: `cost/zone_prices.py`), the segment count
and the checkpoint interval sized for it, and its type's speed for the first budget estimates. A flag
given on the command line wins over the plan. A plan made for another region is refused in one line:
the stack runs where it was applied (`make apply-real REGION=<the plan's>`). A plan for another row count
is refused too: its sizing was for that job.

Usage::

    chosen = read_plan(Path("plan.json"), region="eu-south-2", rows=2_100_000)
    chosen.instance_types, chosen.segments, chosen.checkpoint_every
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coordinator.commands.options import MAX_SEGMENTS
from coordinator.errors import ConfigError, UntrustedInput
from coordinator.untrusted import load_json
from inference.config import DEFAULT_CHECKPOINT_EVERY

MAX_PLAN_BYTES = 4 << 20
MAX_NUMBER = 1e9  # a speed in rows per second or a cost in dollars above this is no plan's
INSTANCE_TYPE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9]+$")  # c7i.xlarge, p5.48xlarge, u-6tb1.metal
DEFAULT_PLANNED_ROWS_PER_S = 50.0  # `run --planned-rows-per-s`


@dataclass(frozen=True, slots=True)
class ChosenPlan:
    instance_types: tuple[str, ...]
    segments: int
    checkpoint_every: int
    rows_per_second: float  # of the first type, per cloud second
    policy: str  # the cheapest policy of the first pool, in closed form (a suggestion: --policy decides)


def read_plan(path: Path, *, region: str, rows: int) -> ChosenPlan:
    where = f"--plan {path}"
    try:
        return _chosen(_load(path), where, region=region, rows=rows)
    except (KeyError, TypeError, ValueError, IndexError) as error:
        raise ConfigError(f"{where}: not a plan of `spotbatch plan --json` ({str(error)[:120]})") from None


def first_pool(path: Path) -> tuple[str, str]:
    """The plan's cheapest pool: (region, instance type), for the stack (`make apply-real PLAN=`)."""
    try:
        first = _load(path)["ranked"][0]
        return str(first["region"]), str(first["instance_type"])
    except (KeyError, TypeError, IndexError) as error:
        raise ConfigError(f"--plan {path}: not a plan of `spotbatch plan --json` ({error!r:.120})") from None


def _load(path: Path) -> Any:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ConfigError(f"--plan {path}: {error.strerror}") from None
    try:
        return load_json(data, what="the plan", max_bytes=MAX_PLAN_BYTES)
    except UntrustedInput as error:
        raise ConfigError(f"--plan {path}: not a plan of `spotbatch plan --json` ({error})") from None


def _count(value: Any, what: str, most: int) -> int:
    """A whole number from the plan, 1 to `most`: not 2.9, not true, not 10**9 segments."""
    if type(value) is not int or not 1 <= value <= most:
        raise ValueError(f"{what} {value!r:.40} is not a whole number from 1 to {most:,}")
    return value


def _positive(value: Any, what: str) -> float:
    """A number from the plan above 0 and below `MAX_NUMBER` (json's 1e999 is refused as it is read)."""
    if type(value) not in (int, float) or not 0 < float(value) < MAX_NUMBER:
        raise ValueError(f"{what} {value!r:.40} is not a number above 0")
    return float(value)


def _type_name(value: Any) -> str:
    if not isinstance(value, str) or not INSTANCE_TYPE.match(value):
        raise ValueError(f"instance type {value!r:.60} is not one EC2 type")
    return value


def _chosen(plan: Any, where: str, *, region: str, rows: int) -> ChosenPlan:
    planned_rows = _count(plan["job"]["rows"], "job rows", 10**15)
    if planned_rows != rows:
        raise ConfigError(f"{where}: made for {planned_rows:,} rows; this job has {rows:,}: plan it again")
    here = [p for p in plan["ranked"] if p["region"] == region]
    if not here:
        regions = sorted({str(p["region"]) for p in plan["ranked"]})
        raise ConfigError(
            f"{where}: its pools are in {', '.join(regions)}, the stack in {region}: apply the stack there "
            f"(make apply-real REGION={regions[0]}), or plan with --regions {region}"
        )
    first = here[0]
    types = tuple(dict.fromkeys(_type_name(p["instance_type"]) for p in here))
    sizing = first["sizing"]
    closed = {str(k): _positive(v, f"closed-form cost of {k}") for k, v in first["closed_form_usd"].items()}
    segments = _count(sizing["segments"], "segments", min(rows, MAX_SEGMENTS))
    every = _count(sizing["checkpoint_every_batches"], "checkpoint_every_batches", 10**6)
    speed = _positive(first["throughput"]["rows_per_second"], "rows_per_second")
    if not closed:
        raise ValueError("no closed-form cost")
    return ChosenPlan(types, segments, every, speed, min(closed, key=lambda p: closed[p]))


def apply_plan(args: argparse.Namespace, region: str, rows: int) -> None:
    """The plan's choices into the run's arguments, where the command line left them at their default."""
    chosen = read_plan(args.plan, region=region, rows=rows)
    if args.segments is None:
        args.segments = chosen.segments
    if args.instance_types is None:
        args.instance_types = ",".join(chosen.instance_types)
    if args.checkpoint_every == DEFAULT_CHECKPOINT_EVERY:
        args.checkpoint_every = chosen.checkpoint_every
    if args.planned_rows_per_s == DEFAULT_PLANNED_ROWS_PER_S:
        args.planned_rows_per_s = chosen.rows_per_second
    print(
        f"plan {args.plan}: {args.instance_types}, {args.segments} segments, a checkpoint every "
        f"{args.checkpoint_every} batches; its cheapest policy was {chosen.policy} (this run: {args.policy})",
        flush=True,
    )
