"""`spotbatch data prepare`: the default 10,000-sentence dataset, or a user's file validated and converted."""

from __future__ import annotations

import argparse
from pathlib import Path

from coordinator.commands.options import Subcommands


def add_parser(commands: Subcommands) -> None:
    data = commands.add_parser("data", help="prepare the input dataset").add_subparsers(
        dest="data_command", required=True, metavar="ACTION"
    )
    prepare = data.add_parser(
        "prepare",
        help="build the default 10,000-sentence dataset, or validate and convert your own file",
        description="Without --input: the movie-review sentences from the vaderSentiment sdist. With "
        "--input: a Parquet, CSV or JSONL file, validated (errors name the file, column and row).",
    )
    prepare.add_argument("--input", help="your Parquet/CSV/JSONL file")
    prepare.add_argument("--output", help="where the Parquet dataset goes (default build/data/...)")
    prepare.add_argument("--text-column", default="text")
    prepare.add_argument(
        "--id-column",
        help="the ids' column (default: id, or the row numbers if there is none, and it says so; '': the "
        "row numbers; a name the file lacks is refused)",
    )
    prepare.add_argument("--label-column", default="label", help="optional; kept when present")
    prepare.add_argument("--allow-empty-texts", action="store_true", help="predict null/empty texts as ''")
    prepare.add_argument("--force", action="store_true", help="rebuild the default dataset")
    prepare.set_defaults(handler=prepare_command)


def prepare_command(args: argparse.Namespace) -> int:
    from coordinator.paths import default_dataset_path

    output = Path(args.output) if args.output else default_dataset_path()
    if args.input:
        return _prepare_user_file(args, output)
    if output.is_file() and not args.force:
        print(f"{output} exists (use --force to rebuild)")
        return 0
    from coordinator.build import dataset
    from coordinator.paths import cache_dir
    from inference.dataset import write_dataset

    sentences = dataset.read_movie_sentences(dataset.fetch_vader_sdist(cache_dir()))
    splits = dataset.split_sentences(sentences)
    write_dataset(dataset.sentences_table(splits.dataset), output)
    positive = sum(s.label == "positive" for s in splits.dataset)
    print(
        f"wrote {len(splits.dataset)} movie-review sentences ({positive} positive, "
        f"{len(splits.dataset) - positive} negative) to {output}\n"
        "  source: vaderSentiment sdist, Hutto & Gilbert (2014), MIT licence"
    )
    return 0


def _prepare_user_file(args: argparse.Namespace, output: Path) -> int:
    from coordinator.build.user_dataset import prepare_dataset

    prepared = prepare_dataset(
        Path(args.input),
        output,
        text_column=args.text_column,
        id_column=args.id_column,
        label_column=args.label_column,
        allow_empty_texts=args.allow_empty_texts,
    )
    print(f"wrote {prepared.rows} rows to {output}")
    if prepared.empty_texts:
        print(
            f"  {prepared.empty_texts} empty text(s) kept (--allow-empty-texts): predicted as empty strings"
        )
    if prepared.long_texts:
        print(f"  {prepared.long_texts} text(s) longer than the model's window: the tokenizer truncates them")
    if prepared.numbered:
        print(f"  ids: the row numbers 0..{prepared.rows - 1} (no {args.id_column or 'id'!r} column)")
    return 0
