"""`spotbatch`: the one command-line entry point (also `python -m coordinator`).

Subcommands add themselves in `build_parser`; each handler returns an exit code. Errors of this project
(`SpotbatchError`) become one line on stderr and exit code 2; a budget refusal exits 3 and a failed
pre-flight 4. Exit codes are mapped only here.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from coordinator.commands import burst as burst_commands
from coordinator.commands import run as run_command
from coordinator.commands import simulate as simulate_commands
from coordinator.commands import whatif as whatif_command
from coordinator.cost.budget import DEFAULT_CEILING_USD
from coordinator.errors import (
    EXIT_INTERRUPTED,
    BudgetGuardExceeded,
    Declined,
    PreflightFailed,
    SpotbatchError,
)
from inference.errors import WorkerError
from reports import __main__ as report_cli

if TYPE_CHECKING:
    from coordinator.cost.budget import BudgetGuard

Handler = Callable[[argparse.Namespace], int]


def _data_prepare(args: argparse.Namespace) -> int:
    from coordinator.build import dataset as dataprep
    from coordinator.paths import cache_dir, default_dataset_path
    from inference.dataset import prepare_dataset, write_dataset

    output = Path(args.output) if args.output else default_dataset_path()
    if args.input:
        prepared = prepare_dataset(
            Path(args.input),
            text_column=args.text_column,
            id_column=args.id_column,
            label_column=args.label_column,
            allow_empty_texts=args.allow_empty_texts,
        )
        write_dataset(prepared.table, output)
        print(f"wrote {prepared.table.num_rows} rows to {output}")
        if prepared.empty_texts:
            print(
                f"  {prepared.empty_texts} empty text(s) kept (--allow-empty-texts): predicted as empty strings"
            )
        if prepared.long_texts:
            print(
                f"  {prepared.long_texts} text(s) longer than the model's window: the tokenizer truncates them"
            )
        return 0
    if output.is_file() and not args.force:
        print(f"{output} exists (use --force to rebuild)")
        return 0
    sentences = dataprep.read_movie_sentences(dataprep.fetch_vader_sdist(cache_dir()))
    splits = dataprep.split_sentences(sentences)
    write_dataset(dataprep.sentences_table(splits.dataset), output)
    positive = sum(s.label == "positive" for s in splits.dataset)
    print(
        f"wrote {len(splits.dataset)} movie-review sentences ({positive} positive, "
        f"{len(splits.dataset) - positive} negative) to {output}\n"
        "  source: vaderSentiment sdist, Hutto & Gilbert (2014), MIT licence"
    )
    return 0


def _model_build(args: argparse.Namespace) -> int:
    from coordinator.build import dataset as dataprep
    from coordinator.build import model as model_build
    from coordinator.paths import cache_dir, default_model_dir, tiny_model_dir

    output = Path(args.output) if args.output else (tiny_model_dir() if args.tiny else default_model_dir())
    existing = model_build.read_card(output)
    if existing is not None and not args.force:
        print(
            f"{output} exists ({existing.name}, held-out accuracy {existing.eval_accuracy}); --force rebuilds"
        )
        return 0
    if args.tiny:
        card = model_build.build_tiny_model(output)
        print(f"built {card.name} in {output} ({card.notes})")
        return 0
    splits = dataprep.split_sentences(dataprep.read_movie_sentences(dataprep.fetch_vader_sdist(cache_dir())))
    layers = args.layers or model_build.ENCODER_LAYERS
    print(
        f"fine-tuning MiniLM ({layers} of 6 layers) on {len(splits.train)} sentences "
        "(about 3 minutes on 2 cores)...",
        flush=True,
    )
    card = model_build.build_sentiment_model(splits.train, splits.evaluation, output, layers=layers)
    print(
        f"built {card.name} in {output}: accuracy {card.eval_accuracy:.4f} on {card.eval_rows} held-out "
        f"sentences (trained on {card.train_rows} in {card.train_seconds:.0f} s)"
    )
    return 0


def _budget_guard(args: argparse.Namespace) -> BudgetGuard:
    from coordinator.cost.budget import BudgetGuard
    from coordinator.paths import spend_log_path

    return BudgetGuard(args.ceiling, Path(args.log) if args.log else spend_log_path())


def _budget_status(args: argparse.Namespace) -> int:
    guard = _budget_guard(args)
    state = guard.state()
    where = "memory (BUDGET_GUARD_TEST_MODE=1)" if guard.in_memory else str(guard.log_path)
    print(f"spend log {where}")
    print(f"ceiling   ${guard.ceiling_usd:.2f}")
    print(f"spent     ${state.spent:.2f}")
    print(f"reserved  ${state.reserved:.2f}  (authorized, no actual recorded yet)")
    print(f"remaining ${guard.ceiling_usd - state.spent - state.reserved:.2f}")
    if state.by_label:
        width = max(len(label) for label in state.by_label)
        print(f"{'label':<{width}}  {'spent':>9}  {'reserved':>9}")
        for label, totals in state.by_label.items():
            print(f"{label:<{width}}  ${totals.spent:>8.2f}  ${totals.reserved:>8.2f}")
    return 0


def _budget_check(args: argparse.Namespace) -> int:
    from coordinator.cost.budget import parse_amount

    estimate = parse_amount(args.estimate, "estimate")
    guard = _budget_guard(args)
    guard.check(args.label, estimate)  # a refusal raises BudgetGuardExceeded: exit 3 in main()
    print(f"fits: ${estimate:.2f} leaves ${guard.remaining - estimate:.2f} of ${guard.ceiling_usd:.2f}")
    return 0


def _preflight(args: argparse.Namespace) -> int:
    import json
    from datetime import UTC, datetime

    import boto3

    from coordinator.cost import preflight
    from coordinator.cost.pricing import PriceTable, live_or_table_price
    from coordinator.paths import preflight_log_path

    ec2 = boto3.client("ec2", region_name=args.region)
    table = PriceTable.load()
    quote = live_or_table_price(
        table, args.region, args.instance_type, args.market, ec2 if args.live_prices else None
    )
    snapshot = None
    if quote.source.startswith("table"):
        snapshot = table.lookup("aws", args.region, args.instance_type, args.market).snapshot_date
    plan = preflight.LaunchPlan(
        job_id=args.job_id,
        estimate_usd=float(args.estimate),
        price=quote,
        price_snapshot=snapshot,
        shutdown_behavior=args.shutdown_behavior,
        max_lifetime_seconds=args.max_lifetime_seconds,
        sync_dir=Path(args.sync_dir) if args.sync_dir else None,
    )
    log_path = Path(args.preflight_log) if args.preflight_log else preflight_log_path()
    results = preflight.run_preflight(plan, ec2=ec2, guard=_budget_guard(args))
    results = preflight.apply_overrides(results, preflight.parse_overrides(args.override), log_path)
    print(preflight.format_results(results))
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a", encoding="utf-8") as log:  # the record of the day's price and every verdict
        log.write(json.dumps({
            "ts": datetime.now(UTC).isoformat(), "job_id": args.job_id, "rate_usd_per_hour": quote.rate_usd_per_hour,
            "price_source": quote.source, "results": {r.name: r.status for r in results},
        }) + "\n")  # fmt: skip
    preflight.require_preflight(results)  # a failure raises PreflightFailed: exit 4 in main()
    return 0


def _budget_estimate(args: argparse.Namespace) -> int:
    from coordinator.cost.budget import parse_amount
    from coordinator.cost.pricing import PriceTable, estimate_job_cost

    quote = PriceTable.load().quote(args.provider, args.region, args.instance_type, args.market)
    estimate = estimate_job_cost(
        work_hours=parse_amount(args.hours, "hours"),
        instances=args.instances,
        rate_usd_per_hour=quote.rate_usd_per_hour,
    )
    print(f"estimate: {estimate.describe()}")
    print(
        f"price: {args.market} {args.instance_type} in {args.region}, {quote.source} ({quote.billing.name})"
    )
    guard = _budget_guard(args)
    guard.check("estimate", estimate.total_usd)  # a refusal raises BudgetGuardExceeded: exit 3 in main()
    print(f"fits the budget: ${guard.remaining:.2f} of ${guard.ceiling_usd:.2f} remaining")
    return 0


def _infra_up(args: argparse.Namespace) -> int:
    import time

    from coordinator.paths import runs_dir
    from coordinator.stack.infra import emulator_infrastructure

    state_dir = runs_dir() / "infra" / args.target
    state_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with emulator_infrastructure(state_dir, target=args.target) as infra:
        applied = time.monotonic()
        print(f"{args.target} at {infra.endpoint}: stack applied in {applied - started:.1f} s")
        for name, value in infra.outputs.items():
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


def _real_variables(args: argparse.Namespace) -> dict[str, str]:
    variables = {"bucket_name": args.bucket_name, "worker_image": args.worker_image, "region": args.region}
    return {key: value for key, value in variables.items() if value}


def _confirm(args: argparse.Namespace, what: str) -> None:
    """Go on only with --confirm, CONFIRM=yes or a typed yes; otherwise raise `Declined` (exit 5)."""
    import os

    if args.confirm or os.environ.get("CONFIRM") == "yes":
        return
    if not sys.stdin.isatty():
        raise Declined(f"refusing to {what} without CONFIRM=yes (no terminal to ask)")
    if input(f"{what} on real AWS, which costs money. Type yes to go on: ").strip() != "yes":
        raise Declined(f"did not {what}: the answer was not yes")


def _infra_apply_real(args: argparse.Namespace) -> int:
    import boto3

    from coordinator.cost import preflight
    from coordinator.cost.pricing import PriceTable
    from coordinator.paths import runs_dir
    from coordinator.stack.infra import RealAws

    ec2 = boto3.client("ec2", region_name=args.region)
    table = PriceTable.load()
    row = table.lookup("aws", args.region, args.instance_type, "spot")
    plan = preflight.LaunchPlan(
        job_id="infra", estimate_usd=0.0, price=table.quote("aws", args.region, args.instance_type, "spot"),
        price_snapshot=row.snapshot_date, shutdown_behavior="terminate", max_lifetime_seconds=args.max_lifetime_seconds,
    )  # fmt: skip
    results = preflight.run_preflight(plan, ec2=ec2, guard=_budget_guard(args))
    results = preflight.apply_overrides(
        results, preflight.parse_overrides(args.override), runs_dir() / "preflight.jsonl"
    )
    print(preflight.format_results(results))
    preflight.require_preflight(results)
    real = RealAws(runs_dir() / "infra" / "aws", _real_variables(args))
    print(real.plan())
    _confirm(args, "apply this plan")
    outputs = real.apply_saved_plan()
    for name, value in outputs.items():
        print(f"  {name} = {value}")
    saved = runs_dir() / "infra" / "aws" / "outputs.json"
    saved.write_text(json.dumps(outputs, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(
        f"outputs saved to {saved}; run a job with: spotbatch run --outputs {saved} --job-id ... --input-key ..."
    )
    return 0


def _infra_destroy_real(args: argparse.Namespace) -> int:
    import boto3

    from coordinator.paths import runs_dir
    from coordinator.stack.infra import RealAws

    _confirm(args, "destroy the spotbatch stack")
    alive = RealAws(runs_dir() / "infra" / "aws", _real_variables(args)).destroy_and_confirm(
        boto3.client("ec2", region_name=args.region)
    )
    if alive:
        print(
            f"destroyed the stack, but instances tagged Project=spotbatch are alive: {', '.join(alive)}",
            file=sys.stderr,
        )
        return 1
    print("destroyed; re-listed: no instance tagged Project=spotbatch is alive")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spotbatch", description=__doc__.splitlines()[0] if __doc__ else None
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    data = commands.add_parser("data", help="prepare the input dataset").add_subparsers(
        dest="data_command", required=True, metavar="ACTION"
    )
    prepare = data.add_parser(
        "prepare",
        help="build the default 10,000-sentence dataset, or validate and convert your own file",
        description="Without --input: the movie-review sentences from the vaderSentiment sdist. With --input: "
        "a Parquet, CSV or JSONL file, validated (errors name the file, column and row).",
    )
    prepare.add_argument("--input", help="your Parquet/CSV/JSONL file")
    prepare.add_argument("--output", help="where the Parquet dataset goes (default build/data/...)")
    prepare.add_argument("--text-column", default="text")
    prepare.add_argument("--id-column", default="id", help="missing column: ids are row numbers")
    prepare.add_argument("--label-column", default="label", help="optional; kept when present")
    prepare.add_argument("--allow-empty-texts", action="store_true", help="predict null/empty texts as ''")
    prepare.add_argument("--force", action="store_true", help="rebuild the default dataset")
    prepare.set_defaults(handler=_data_prepare)

    model = commands.add_parser("model", help="build the offline classifier").add_subparsers(
        dest="model_command", required=True, metavar="ACTION"
    )
    build = model.add_parser("build", help="fine-tune the MiniLM sentiment classifier (or --tiny for tests)")
    build.add_argument("--output", help="model directory (default build/models/...)")
    build.add_argument(
        "--tiny", action="store_true", help="a random 2-layer, width-128 model: fast, for tests"
    )
    build.add_argument("--force", action="store_true", help="rebuild even if the directory holds a model")
    build.add_argument(
        "--layers", type=int, default=None, choices=range(1, 7), metavar="1..6",
        help="MiniLM encoder layers to keep (default 3: twice the rows/s of all 6, see README)",
    )  # fmt: skip
    build.set_defaults(handler=_model_build)

    budget = commands.add_parser("budget", help="the budget guard: status and checks").add_subparsers(
        dest="budget_command", required=True, metavar="ACTION"
    )
    for name, handler, summary in (
        ("status", _budget_status, "ceiling, spent, reserved, remaining, per label"),
        ("check", _budget_check, "would an estimate fit? (exit 3 if not; writes nothing)"),
        ("estimate", _budget_estimate, "cost of a job before launch: hours x rate x instances + margin"),
    ):
        action = budget.add_parser(name, help=summary)
        action.add_argument("--log", help="spend log (default runs/budget/spend_log.jsonl)")
        action.add_argument(
            "--ceiling", default=DEFAULT_CEILING_USD, help="dollars; $LYNX_CLOUD_BUDGET_USD overrides it"
        )
        if name == "check":
            action.add_argument("--estimate", required=True, help="dollars")
            action.add_argument("--label", default="budget-check", help="operation label for the message")
        if name == "estimate":
            action.add_argument("--hours", required=True, help="expected hours of work per instance")
            action.add_argument("--instances", type=int, default=1)
            action.add_argument("--provider", default="aws")
            action.add_argument("--region", default="us-east-1")
            action.add_argument("--instance-type", default="p3.2xlarge")
            action.add_argument("--market", choices=("spot", "on-demand"), default="spot")
        action.set_defaults(handler=handler)

    check = commands.add_parser(
        "preflight",
        help="the pre-launch checklist, run mechanically (PASS/FAIL with reasons)",
        description="Checks: no stray instances, budget headroom, auto-termination, teardown dry run, price of "
        "the day, sync allow-list. Exit 4 if a check fails and is not overridden.",
    )
    check.add_argument("--estimate", required=True, help="estimated cost of the launch, dollars")
    check.add_argument("--job-id", default="preflight")
    check.add_argument("--region", default="us-east-1")
    check.add_argument("--instance-type", default="p3.2xlarge")
    check.add_argument("--market", choices=("spot", "on-demand"), default="spot")
    check.add_argument(
        "--live-prices", action="store_true", help="read the spot price from EC2 when possible"
    )
    check.add_argument("--shutdown-behavior", choices=("terminate", "stop"), default="terminate")
    check.add_argument("--max-lifetime-seconds", type=int, default=6 * 3_600)
    check.add_argument("--sync-dir", help="payload folder for a burst run")
    check.add_argument("--override", action="append", default=[], metavar="NAME=REASON")
    check.add_argument("--log", help="spend log (default runs/budget/spend_log.jsonl)")
    check.add_argument("--ceiling", default=DEFAULT_CEILING_USD)
    check.add_argument("--preflight-log", help="default runs/preflight.jsonl")
    check.set_defaults(handler=_preflight)

    infra = commands.add_parser("infra", help="the Terraform stacks: emulator or real AWS").add_subparsers(
        dest="infra_command", required=True, metavar="ACTION"
    )
    up = infra.add_parser(
        "up", help="embedded AWS: start the emulator, apply the stack, print outputs, tear down"
    )
    up.add_argument("--target", choices=("moto", "localstack"), default="moto")
    up.add_argument("--hold", action="store_true", help="keep it up until Ctrl-C")
    up.set_defaults(handler=_infra_up)
    for name, handler, summary in (
        (
            "apply-real",
            _infra_apply_real,
            "pre-flight, terraform plan -out, confirmation, apply of that plan",
        ),
        ("destroy-real", _infra_destroy_real, "destroy the AWS stack and re-list to confirm nothing is left"),
    ):
        real = infra.add_parser(name, help=summary)
        real.add_argument("--bucket-name", required=name == "apply-real", default="")
        real.add_argument("--worker-image", required=name == "apply-real", default="")
        real.add_argument("--region", default="us-east-1")
        real.add_argument("--instance-type", default="p3.2xlarge")
        real.add_argument("--max-lifetime-seconds", type=int, default=21_600)
        real.add_argument("--confirm", action="store_true", help="same as CONFIRM=yes")
        real.add_argument("--override", action="append", default=[], metavar="NAME=REASON")
        real.add_argument("--log", help="spend log (default runs/budget/spend_log.jsonl)")
        real.add_argument("--ceiling", default=DEFAULT_CEILING_USD)
        real.set_defaults(handler=handler)
    simulate_commands.add_parsers(commands)
    run_command.add_parser(commands)
    whatif_command.add_parser(commands)
    burst_commands.add_parser(commands)
    report = commands.add_parser(
        "report", help="the comparison report (markdown + charts + HTML) from a runs folder"
    )
    report_cli.add_arguments(report)
    report.set_defaults(handler=report_cli.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except (BudgetGuardExceeded, PreflightFailed, Declined) as refusal:
        print(f"refused: {refusal}", file=sys.stderr)
        return refusal.exit_code
    except (SpotbatchError, WorkerError) as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
