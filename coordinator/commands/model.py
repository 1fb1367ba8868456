"""`spotbatch model build`: fine-tune the offline MiniLM sentiment classifier, or build the tiny model."""

from __future__ import annotations

import argparse
from pathlib import Path

from coordinator.commands.options import Subcommands


def add_parser(commands: Subcommands) -> None:
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
        "--layers",
        type=int,
        default=None,
        choices=range(1, 7),
        metavar="1..6",
        help="MiniLM encoder layers to keep (default 3: twice the rows/s of all 6, see README)",
    )
    build.set_defaults(handler=build_command)


def build_command(args: argparse.Namespace) -> int:
    from coordinator.build import dataset
    from coordinator.build import model as model_build
    from coordinator.paths import cache_dir, default_model_dir, tiny_model_dir

    output = Path(args.output) if args.output else (tiny_model_dir() if args.tiny else default_model_dir())
    existing = model_build.read_card(output)
    if existing is not None and not args.force:
        accuracy = existing.eval_accuracy
        print(f"{output} exists ({existing.name}, held-out accuracy {accuracy}); --force rebuilds")
        return 0
    if args.tiny:
        card = model_build.build_tiny_model(output)
        print(f"built {card.name} in {output} ({card.notes})")
        return 0
    splits = dataset.split_sentences(dataset.read_movie_sentences(dataset.fetch_vader_sdist(cache_dir())))
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
