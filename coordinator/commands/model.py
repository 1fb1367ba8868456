"""`spotbatch model build|export-onnx`: fine-tune the offline MiniLM sentiment classifier (or build the tiny
model), and write its checked ONNX exports beside it (`coordinator/build/onnx_export.py`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from coordinator.commands.options import Subcommands
from coordinator.errors import ConfigError
from inference.model import onnx_exports


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
    build.add_argument(
        "--no-onnx", action="store_true", help="skip the ONNX exports (workers then run torch)"
    )
    build.set_defaults(handler=build_command)
    export = model.add_parser(
        "export-onnx", help="write and check the ONNX exports of a model directory (fp32 and int8)"
    )
    export.add_argument("--model", help="model directory (default build/models/minilm-sentiment)")
    export.add_argument(
        "--texts",
        type=Path,
        help="Parquet file whose `text` column the exports are checked on (default: the dataset)",
    )
    export.set_defaults(handler=export_command)


def build_command(args: argparse.Namespace) -> int:
    from coordinator.build import dataset
    from coordinator.build import model as model_build
    from coordinator.paths import cache_dir, default_model_dir, tiny_model_dir

    output = Path(args.output) if args.output else (tiny_model_dir() if args.tiny else default_model_dir())
    existing = model_build.read_card(output)
    if existing is not None and not args.force:
        accuracy = existing.eval_accuracy
        print(f"{output} exists ({existing.name}, held-out accuracy {accuracy}); --force rebuilds")
        if not args.no_onnx and not onnx_exports(output):
            write_exports(output, None)
        return 0
    if args.tiny:
        card = model_build.build_tiny_model(output)
        print(f"built {card.name} in {output} ({card.notes})")
        if not args.no_onnx:
            write_exports(output, None)
        return 0
    splits = dataset.split_sentences(dataset.read_movie_sentences(dataset.fetch_vader_sdist(cache_dir())))
    layers = args.layers or model_build.ENCODER_LAYERS
    print(
        f"fine-tuning MiniLM ({layers} of 6 layers) on {len(splits.train)} sentences (185 s on 2 quiet "
        "cores; much longer beside other work: its progress follows)...",
        flush=True,
    )
    card = model_build.build_sentiment_model(
        splits.train, splits.evaluation, output, layers=layers, progress=lambda line: print(line, flush=True)
    )
    print(
        f"built {card.name} in {output}: accuracy {card.eval_accuracy:.4f} on {card.eval_rows} held-out "
        f"sentences (trained on {card.train_rows} in {card.train_seconds:.0f} s)"
    )
    if not args.no_onnx:  # checked on the dataset's sentences, or on these if it is not prepared yet
        write_exports(output, None, fallback=[s.text for s in (*splits.train, *splits.evaluation)])
    return 0


def export_command(args: argparse.Namespace) -> int:
    from coordinator.paths import default_model_dir

    model = Path(args.model) if args.model else default_model_dir()
    if not (model / "config.json").is_file():
        raise ConfigError(f"{model}: no model here (config.json missing); `spotbatch model build` makes one")
    write_exports(model, None if args.texts is None else read_texts(args.texts))
    return 0


def read_texts(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    try:
        return [str(t) for t in pq.read_table(path, columns=["text"]).column("text").to_pylist()]
    except (OSError, KeyError, ValueError) as error:
        raise ConfigError(f"{path}: cannot read a `text` column to check the exports on ({error})") from None


def write_exports(model: Path, texts: list[str] | None, *, fallback: list[str] | None = None) -> None:
    """The checked exports; the sentences are the dataset's (10,000) unless given."""
    from coordinator.build.onnx_export import export_onnx
    from coordinator.paths import default_dataset_path

    dataset = default_dataset_path()
    if texts is None and dataset.is_file():
        texts = read_texts(dataset)
    texts = texts if texts is not None else fallback
    if texts is None:
        raise ConfigError(f"{dataset}: no dataset to check the ONNX exports on (`spotbatch data prepare`)")
    print(f"ONNX exports of {model}: checking against torch on {len(texts)} sentences...", flush=True)
    report = export_onnx(model, texts)
    for line in report.lines():
        print(f"  {line}")
    print(f"  ({report.seconds:.0f} s)")
