"""`spotbatch simulate`: the experiment matrix on the embedded AWS, and its summary table."""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING

from coordinator.commands.options import (
    Subcommands,
    add_budget_options,
    add_rows_option,
    add_segment_options,
)
from coordinator.cost.budget import parse_amount
from coordinator.errors import ConfigError
from coordinator.paths import SIMULATE_POOLS, default_dataset_path, default_model_dir, runs_dir

if TYPE_CHECKING:
    from coordinator.plan.planner import Plan
    from coordinator.sim.settings import SimulatedRun, SimulationSettings

SIMULATED_CEILING_USD = 2_000.0  # simulated dollars: the matrix's own ceiling, in its own spend log
QUICK: dict[str, str | int] = {
    "runs": "on-demand=1,spot-only=2,hybrid=2,deadline=2",
    "rows": 2_000,
    "segments": 4,
}
FULL: dict[str, str | int] = {
    "runs": "on-demand=3,spot-only=8,hybrid=8,deadline=8",
    "rows": 6_000,
    "segments": 10,
}


def parse_runs(text: str) -> dict[str, int]:
    """`on-demand=3,spot-only=10,hybrid=10` -> {"on-demand": 3, ...}; errors name the bad item."""
    runs: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, count = item.partition("=")
        if not count.isdigit():
            raise argparse.ArgumentTypeError(f"item {item!r}: expected NAME=COUNT, as in hybrid=10")
        runs[name] = int(count)
    return runs


def parse_pools(text: str) -> tuple[str, ...]:
    pools = tuple(dict.fromkeys(filter(None, (part.strip() for part in text.split(",")))))
    unknown = [p for p in pools if p not in SIMULATE_POOLS]
    if unknown or not pools:
        raise argparse.ArgumentTypeError(f"{text!r}: expected some of {','.join(SIMULATE_POOLS)}")
    return pools


def add_parser(commands: Subcommands) -> None:
    sim = commands.add_parser(
        "simulate",
        help="the experiment matrix on the embedded AWS (moto): on-demand, spot-only, hybrid and deadline",
        description="Emulator up, stack applied, then N runs per configuration with real workers and "
        "injected interruptions; every run's ledger, events and predictions under --out; everything "
        "destroyed and re-listed at the end. QUICK sizes: " + ", ".join(f"{k}={v}" for k, v in QUICK.items()),
    )
    sim.add_argument("--quick", action="store_true", help="a few-minute matrix (tests, a first look)")
    sim.add_argument("--runs", type=parse_runs, default=None, help=f"default {FULL['runs']}")
    add_rows_option(sim, f"rows of the dataset to run (default {FULL['rows']})")
    add_segment_options(sim, segments=f"instances per run (default {FULL['segments']})")
    sim.add_argument(
        "--time-scale", type=float, default=15.0, help="cloud seconds per wall second (default 15)"
    )
    sim.add_argument(
        "--interruption-probability", type=float, default=0.3, help="per interval, per spot instance"
    )
    sim.add_argument("--interruption-interval", type=float, default=300.0, help="cloud seconds (default 300)")
    sim.add_argument("--trace", type=Path, help="replay this availability trace instead of the random model")
    sim.add_argument("--trace-one-means", choices=("available", "preempted"), default="available")
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument(
        "--boot", choices=("fork", "exec"), default="fork", help="how a simulated instance starts its worker"
    )
    sim.add_argument(
        "--model", type=Path, default=None, help="model directory (default build/models/minilm-sentiment)"
    )
    sim.add_argument("--dataset", type=Path, default=None, help="Parquet from `spotbatch data prepare`")
    sim.add_argument("--out", type=Path, default=None, help="runs folder (default runs/simulate-<UTC time>)")
    sim.add_argument(
        "--deadline-factor",
        type=float,
        default=2.5,
        help="deadline runs: deadline = this x the matrix model's mean on-demand job time (default 2.5)",
    )
    sim.add_argument(
        "--deadline-minutes", type=float, help="deadline runs: a fixed deadline in cloud minutes"
    )
    sim.add_argument(
        "--no-mlflow", action="store_true", help="skip the MLflow runs (the ledgers are written anyway)"
    )
    sim.add_argument(
        "--pools",
        type=parse_pools,
        default=SIMULATE_POOLS,
        help="run the matrix in these pools, side by side: planned (the plan's cheapest region and type), "
        "pinned (the stack's us-east-1 c7i.xlarge); default planned,pinned, each in a folder of its name",
    )
    add_budget_options(sim, ceiling=SIMULATED_CEILING_USD, spend_log="<out>/spend_log.jsonl")
    sim.set_defaults(handler=simulate_command)


def simulate_command(args: argparse.Namespace) -> int:
    from coordinator.sim.planned import in_pool, plan_for
    from coordinator.sim.settings import SimulationSettings

    sizes = QUICK if args.quick else FULL
    model = args.model or default_model_dir()
    dataset = args.dataset or default_dataset_path()
    for what, path, fix in (("model", model, "make model"), ("dataset", dataset, "make data")):
        if not path.exists():
            raise ConfigError(f"{what} {path} does not exist; run `{fix}` first")
    # absolute from here on: the machines' boot scripts run in folders of their own (a relative --out made
    # every boot fail with "user-data.sh: No such file or directory")
    out = (args.out or runs_dir() / time.strftime("simulate-%Y%m%dT%H%M%SZ", time.gmtime())).absolute()
    settings = SimulationSettings(
        out_dir=out,
        model=model,
        dataset=dataset,
        runs=args.runs or parse_runs(str(sizes["runs"])),
        rows=args.rows if args.rows is not None else int(sizes["rows"]),
        segments=args.segments if args.segments is not None else int(sizes["segments"]),
        time_scale=args.time_scale,
        interruption_probability=args.interruption_probability,
        interruption_interval=args.interruption_interval,
        trace=args.trace,
        trace_one_means=args.trace_one_means,
        seed=args.seed,
        boot=args.boot,
        mlflow=not args.no_mlflow,
        spend_log=args.spend_log,
        budget_usd=parse_amount(args.ceiling, "--ceiling")
        if args.ceiling is not None
        else SIMULATED_CEILING_USD,
        deadline_factor=args.deadline_factor,
        deadline_seconds=args.deadline_minutes * 60 if args.deadline_minutes is not None else None,
    )
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    plan = plan_for(settings)
    bars: list[str] = []
    for pool in args.pools:
        in_it = in_pool(settings, plan, pool, out if len(args.pools) == 1 else out / pool)
        if pool == "planned":
            first = plan.ranked[0].pool
            print(
                f"\nplanned: the plan's cheapest pool, {first.name} ({first.throughput.describe()}); time "
                f"scale {in_it.time_scale:g}: its workers ask this host for no more rows per wall second "
                f"than {settings.instance_type}'s at {settings.time_scale:g}"
            )
        bars += _one_pool(in_it, plan, pool)
    if len(args.pools) > 1:
        print("\n".join(["", "side by side:", *bars]), flush=True)
    return 0


def _one_pool(settings: SimulationSettings, plan: Plan, pool: str) -> list[str]:
    """One pool's matrix, its summary table and its bar line; returns the bar line under the pool's name."""
    from coordinator.plan.bar import bar_lines
    from coordinator.sim.matrix import simulate
    from coordinator.sim.planned import fair_for
    from coordinator.sim.progress import ProgressView

    fair = fair_for(settings, plan)
    fair.write(settings.out_dir)
    print(
        f"\n{pool} pool: {settings.region} {settings.instance_type}; simulate: {settings.runs} on "
        f"{settings.rows} rows x {settings.segments} segments, time scale {settings.time_scale:g} "
        f"(1 wall s = {settings.time_scale:g} cloud s), {settings.describe_interruptions()}, seed "
        f"{settings.seed}, model {settings.model}; runs folder {settings.out_dir}",
        flush=True,
    )
    started = time.monotonic()
    with ProgressView(sum(settings.runs.values())) as view:
        results = simulate(
            settings,
            on_run=lambda name, n, _: view.start_run(name, n),
            on_cycle=view.update,
            on_done=view.finish_run,
        )
    print_results(results, time.monotonic() - started, settings.out_dir)
    lines = bar_lines(fair, *measured_costs(results))
    print("\n".join(lines), flush=True)
    return [f"{pool} ({settings.region} {settings.instance_type}): {lines[0]}", *lines[1:]]


def measured_costs(results: list[SimulatedRun]) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Each configuration's run costs (runs a host distorted left out, as the report does; a configuration
    whose runs were all distorted keeps them) and the share of rows predicted exactly once."""
    by_config: dict[str, list[SimulatedRun]] = {}
    for run in results:
        by_config.setdefault(run.configuration, []).append(run)
    costs, reliability = {}, {}
    for config, runs in by_config.items():
        kept = [r for r in runs if not r.pace.get("distorted")] or runs
        costs[config] = [r.cost_usd for r in kept]
        done, wanted = _rows_once(runs)
        reliability[config] = 100.0 * done / wanted if wanted else 0.0
    return costs, reliability


def _rows_once(runs: list[SimulatedRun]) -> tuple[int, int]:
    """Rows predicted exactly once (the merge verified it) and rows asked for, over `runs`."""
    merged = sum(r.result.merge.rows if r.result.merge else 0 for r in runs)
    wanted = sum(json.loads((r.result.run_dir / "run.json").read_text())["spec"]["rows"] for r in runs)
    return merged, wanted


def print_results(results: list[SimulatedRun], seconds: float, out: Path) -> None:
    expected_path = out / "expected.json"
    expected = json.loads(expected_path.read_text()) if expected_path.exists() else {}
    predictions = expected.get("predictions_with_overheads") or expected.get("predictions", {})
    print(summary_table(results, predictions), flush=True)
    print(
        "interruptions/run: attempts cut short (drained after a notice, or lost); notices/run: warnings the "
        "injector served (a worker that ends within its 2-minute grace has a notice, no interruption);\n"
        "model: the matrix model's mean over 2,000 simulated runs of the same job, told the coordinator's "
        "measured start-up, launch gap, reaction to a warning and end (expected.json); "
        f"deadline {expected.get('deadline_seconds', 0) / 60:.1f} cloud min for every deadline run",
        flush=True,
    )
    print(emulator_speed(results), flush=True)
    failed = [r.name for r in results if not r.result.outcome.succeeded]
    distorted = [r.name for r in results if r.pace.get("distorted")]
    print(
        f"{len(results)} runs in {seconds:.0f} s wall; instances left: 0 (re-listed); "
        f"runs with failed segments: {failed or 'none'}; runs distorted by a host that could not keep the "
        f"instances' pace: {distorted or 'none'}; files under {out}",
        flush=True,
    )


def summary_table(results: list[SimulatedRun], predictions: dict[str, dict[str, float]]) -> str:
    """Per configuration: runs, mean cost and the model's, savings vs the on-demand runs' mean, mean job
    time and the model's, interruptions (attempts cut short), notices served by the injector (a notice can
    reach a worker that then finishes in its grace period), rows exactly once, deadlines met, runs distorted
    (workers behind their pace, or bills beyond the model's: `pace_record.py`)."""
    by_config: dict[str, list[SimulatedRun]] = {}
    for r in results:
        by_config.setdefault(r.configuration, []).append(r)
    costs = {c: [r.cost_usd for r in rs] for c, rs in by_config.items()}
    baseline = statistics.mean(costs["on-demand"]) if costs.get("on-demand") else None
    lines = [
        "| configuration | runs | mean cost (sim $) | model | savings vs on-demand | job time (cloud min) "
        "| model | interruptions/run | notices/run | rows exactly once | deadlines met | distorted |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for config, runs in by_config.items():
        mean = statistics.mean(costs[config])
        savings = f"{(baseline - mean) / baseline * 100:.1f}%" if baseline else "n/a"
        rows, wanted = _rows_once(runs)
        records = [json.loads((r.result.run_dir / "run.json").read_text()) for r in runs]
        with_deadline = [record["deadline_met"] for record in records if "deadline_met" in record]
        deadlines = f"{sum(with_deadline)}/{len(with_deadline)}" if with_deadline else "-"
        cut_short = statistics.mean(
            sum(a.end_reason in ("interrupted", "lost") for a in r.result.outcome.attempts) for r in runs
        )
        model = predictions.get(config, {})
        model_cost = f"{model['mean_cost_usd']:.4f}" if model else "-"
        model_time = f"{model['mean_job_seconds'] / 60:.1f}" if model else "-"
        job_minutes = statistics.mean(r.job_seconds for r in runs) / 60
        lines.append(
            f"| {config} | {len(runs)} | {mean:.4f} | {model_cost} | {savings} | {job_minutes:.1f} | "
            f"{model_time} | {cut_short:.1f} | {statistics.mean(r.interruptions for r in runs):.1f} | "
            f"{rows}/{wanted} | {deadlines} | {sum(bool(r.pace.get('distorted')) for r in runs)} |"
        )
    return "\n".join(lines)


def emulator_speed(results: list[SimulatedRun]) -> str:
    """moto's RunInstances latency in a matrix's first and last runs (it keeps every instance it made)."""

    def median_ms(run: SimulatedRun) -> str:
        record = json.loads((run.result.run_dir / "run.json").read_text())
        latency = record.get("emulator_latency", {}).get("RunInstances")
        return f"{latency['median_ms']:.0f} ms" if latency else "n/a"

    if not results:
        return "emulator: no runs"
    first, last = results[0], results[-1]
    return (
        f"emulator RunInstances median: {median_ms(first)} in the first run ({first.name}), "
        f"{median_ms(last)} in the last ({last.name}); boots count from the launch call's answer"
    )
