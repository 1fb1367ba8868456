"""Worker throughput on each backend against the plain `transformers` pipeline, on the same sentences.

    python -m bench.worker_throughput [--model DIR] [--rows 2000] [--repeats 3] [--no-sweep]

Baseline: `pipeline("text-classification")` on the torch model, batch 64, truncation at 128 tokens.
Measured in the same run, on the same rows, with the model loaded beforehand as the pipeline's is: the
worker's batch loop (`SegmentRun.run`: segment read, length-sorted plan, inference, parts, checkpoints) on
the torch backend, on the ONNX fp32 export, on the int8 export and on int8 checked by fp32 (the rows int8
is unsure of run again on fp32: `inference/checked_model.py`; the share re-run is in its note). If the
build refused the int8 export (below its agreement gate) and deleted it, the bench quantises one into a
temporary folder to show what it would have given. Each path: rows/s (median of the repeats, order
alternating), ratio to the pipeline, the share of labels equal to the pipeline's and the largest score
difference, and the accuracy on the model's 2,000 held-out sentences.

Then a sweep on the fastest path that passed its gate: batch size x sort window (the checkpoint interval
bounds the length-sorted window) x intra-op threads, as ratios to the defaults.

On a GPU it would also measure the torch backend on CUDA (autocast bf16/fp16, pinned memory) against the
pipeline on the same GPU; without one it says so.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq

from coordinator.paths import cache_dir, default_dataset_path, default_model_dir
from coordinator.plan.profiles import PROFILES_PATH, InstanceProfile, save_profile
from inference.checked_model import BACKEND as CHECKED
from inference.checked_model import CheckedClassifier
from inference.checkpoint import read_segment_output
from inference.classifier import Classifier
from inference.config import DEFAULT_BATCH_SIZE, DEFAULT_CHECKPOINT_EVERY, WorkerConfig
from inference.heartbeat import Heartbeat, HeartbeatWriter
from inference.interruption import StopSignal
from inference.model import ONNX_DIR, ONNX_FILES, load_classifier, onnx_exports, threads_to_use
from inference.onnx_model import load_onnx_classifier
from inference.segment_run import SegmentRun
from inference.storage import open_store
from inference.torch_model import TorchClassifier, load_torch_classifier

AGREEMENT_GATE = 0.995  # the build's gate for a quantised export; fp32 agrees on every row
Rows = dict[str, tuple[str, float]]
Contender = tuple[Classifier, str, Path | None]  # a path: the classifier, a note, its export file


def kept_by_build(paths: dict[str, Contender]) -> list[str]:
    """The paths a worker can run: all but those the build refused (measured here only to show why)."""
    return [name for name, (_, note, _) in paths.items() if "REFUSED" not in note]


def worker_run(
    classifier: Classifier, dataset: Path, rows: int, *, batch: int = DEFAULT_BATCH_SIZE, every: int = 50
) -> tuple[float, Rows]:
    with tempfile.TemporaryDirectory() as output:
        config = WorkerConfig(
            input_uri=str(dataset),
            start=0,
            stop=rows,
            segment_id="bench",
            output_prefix=output,
            model="(preloaded)",
            batch_size=batch,
            checkpoint_every=every,
            poll_notices=False,
        )
        store = open_store(output)
        heartbeat = HeartbeatWriter(store, Heartbeat("bench", "local", "local", "", rows))
        started = time.perf_counter()
        SegmentRun(config, store, StopSignal()).run(classifier, heartbeat)
        elapsed = time.perf_counter() - started
        return elapsed, {i: (label, score) for i, label, score in read_segment_output(store, "bench")}


def pipeline_run(classifier: TorchClassifier, ids: list[str], texts: list[str]) -> tuple[float, Rows]:
    from transformers import pipeline

    classify = pipeline(
        "text-classification",
        model=classifier.model,
        tokenizer=classifier.tokenizer,
        device=classifier.device,
    )
    started = time.perf_counter()
    results = classify(
        texts, batch_size=DEFAULT_BATCH_SIZE, truncation=True, max_length=classifier.max_length
    )
    elapsed = time.perf_counter() - started
    return elapsed, {i: (r["label"], float(r["score"])) for i, r in zip(ids, results, strict=True)}


def median_time(runs: list[Callable[[], float]], repeats: int) -> list[float]:
    """Median seconds of each callable, calling them in alternating order to spread drift evenly."""
    times: list[list[float]] = [[] for _ in runs]
    for repeat in range(repeats):
        order = list(range(len(runs)))
        if repeat % 2:
            order.reverse()
        for index in order:
            times[index].append(runs[index]())
    return [statistics.median(t) for t in times]


def agreement(reference: Rows, rows: Rows) -> tuple[float, float]:
    same = [i for i in reference if reference[i][0] == rows[i][0]]
    worst = max((abs(reference[i][1] - rows[i][1]) for i in same), default=float("inf"))
    return len(same) / len(reference), worst


def held_out_accuracy(classifier: Classifier) -> float | None:
    from coordinator.build.dataset import fetch_vader_sdist, read_movie_sentences, split_sentences
    from coordinator.build.model import accuracy

    try:
        held_out = split_sentences(read_movie_sentences(fetch_vader_sdist(cache_dir()))).evaluation
    except Exception:  # no cached sdist and no network: the table says n/a
        return None
    return accuracy(classifier, held_out)


def onnx_paths(model: Path, threads: int, scratch: Path) -> dict[str, Contender]:
    """The exports, by backend; an int8 the build refused is quantised into `scratch`, marked so."""
    exports = onnx_exports(model)
    found: dict[str, Contender] = {}
    for backend in ONNX_FILES:
        path, note = exports.get(backend), "passed the build's gate"
        kept = model / ONNX_DIR / ONNX_FILES[backend]
        if path is None and backend == "onnx-int8" and kept.is_file():
            path, note = kept, "REFUSED by the build's gate (kept for int8 checked by fp32)"
        if path is None and backend == "onnx-int8" and "onnx" in exports:
            from coordinator.build.onnx_export import _quantize

            path, note = (
                scratch / ONNX_FILES[backend],
                "REFUSED by the build's gate; quantised here to show why",
            )
            _quantize(exports["onnx"], path)
        if path is not None:
            found[backend] = (load_onnx_classifier(model, path, backend=backend, threads=threads), note, path)
    if CHECKED in exports:
        checked = load_classifier(str(model), backend=CHECKED, threads=threads)
        found[CHECKED] = (checked, "passed the build's gate", None)
    if not found:
        print(f"no ONNX exports under {model / ONNX_DIR}: run `spotbatch model export-onnx` first")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", default=str(default_model_dir()))
    parser.add_argument("--dataset", default=str(default_dataset_path()))
    parser.add_argument("--rows", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-sweep", action="store_true")
    parser.add_argument(
        "--write-profile",
        metavar="INSTANCE_TYPE",
        help="record the fastest path that passes the agreement gate as this type's simulator profile",
    )
    args = parser.parse_args()

    threads = threads_to_use()
    model, dataset = Path(args.model), Path(args.dataset)
    torch_classifier = load_torch_classifier(args.model, threads=threads)
    table = pq.read_table(dataset).slice(0, args.rows)
    texts = [str(t) for t in table.column("text").to_pylist()]
    ids = [str(i) for i in table.column("id").to_pylist()]
    print(f"model {model}, {len(texts)} sentences, batch {DEFAULT_BATCH_SIZE}, {threads} intra-op threads")
    with tempfile.TemporaryDirectory() as scratch:
        paths: dict[str, Contender] = {"torch": (torch_classifier, "the reference backend", None)}
        paths |= onnx_paths(model, threads, Path(scratch))
        _, reference = pipeline_run(torch_classifier, ids, texts)  # warm-up, and the reference labels
        runs: list[Callable[[], float]] = [lambda: pipeline_run(torch_classifier, ids, texts)[0]]
        results = {}
        for name, (classifier, _, _) in paths.items():
            results[name] = worker_run(classifier, dataset, args.rows)[1]  # warm-up, and its predictions
            runs.append(lambda c=classifier: worker_run(c, dataset, args.rows)[0])  # type: ignore[misc]
        seconds = median_time(runs, args.repeats)
        measured = report(len(texts), seconds, paths, reference, results, args.repeats)
        if args.write_profile:
            usable = {n: measured[n] for n in kept_by_build(paths)}
            write_profile(args.write_profile, usable, threads, args.rows)
        if not args.no_sweep:
            sweep(paths, model, dataset, args.rows, threads)
    gpu_note()


def report(
    count: int,
    seconds: list[float],
    paths: dict[str, Contender],
    reference: Rows,
    results: dict[str, Rows],
    repeats: int,
) -> dict[str, tuple[float, float]]:
    """Print the table; return each worker path's (rows/s, share of labels equal to the pipeline's)."""
    base = seconds[0]
    measured = {}
    print(
        f"\n{'path':<27} {'rows/s':>8} {'x pipeline':>10} {'labels = pipeline':>18} {'max score diff':>15} "
        f"{'held-out acc.':>13}  note"
    )
    accuracy = held_out_accuracy(paths["torch"][0])
    print(
        f"{'pipeline (baseline)':<27} {count / base:8.1f} {1.0:10.2f} {'-':>18} {'-':>15} "
        f"{_pct(accuracy):>13}  median of {repeats}"
    )
    for (name, (classifier, note, _)), elapsed in zip(paths.items(), seconds[1:], strict=True):
        same, worst = agreement(reference, results[name])
        if isinstance(classifier, CheckedClassifier):
            note += f"; fp32 again on {classifier.rechecked / max(classifier.rows, 1):.1%} of rows"
        measured[name] = (count / elapsed, same)
        print(
            f"{'worker (' + name + ')':<27} {count / elapsed:8.1f} {base / elapsed:10.2f} {same:18.2%} "
            f"{worst:15.2e} {_pct(held_out_accuracy(classifier)):>13}  {note}"
        )

    return measured


def write_profile(
    instance_type: str, measured: dict[str, tuple[float, float]], threads: int, rows: int
) -> None:
    """The simulator's speed for `instance_type`: the fastest worker path the build kept whose labels agree
    with the pipeline's on >= 99.5% of the rows (the build's gate)."""
    passing = {name: rate for name, (rate, same) in measured.items() if same >= AGREEMENT_GATE}
    name = max(passing, key=lambda n: passing[n])
    profile = InstanceProfile(
        instance_type=instance_type,
        rows_per_second=round(passing[name], 1),
        backend=name,
        source=(
            f"python -m bench.worker_throughput --write-profile {instance_type} on "
            f"{platform.node() or 'a host'} ({os.cpu_count()} CPUs, {threads} intra-op threads, "
            f"{rows} sentences, {time.strftime('%Y-%m-%d')})"
        ),
    )
    save_profile(profile)
    print(f"\nprofile {instance_type}: {profile.rows_per_second} rows/s ({name}) -> {PROFILES_PATH}")


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2%}"


def sweep(paths: dict[str, Contender], model_dir: Path, dataset: Path, rows: int, threads: int) -> None:
    """Batch size x sort window x threads on the fastest backend that passed its gate, against defaults."""
    order = ("onnx-int8", CHECKED, "onnx", "torch")
    passed = [n for n in order if n in kept_by_build(paths)]
    name = passed[0]
    model = paths[name][0]
    print(
        f"\nsweep on {name} (rows/s as a ratio to batch {DEFAULT_BATCH_SIZE}, window "
        f"{DEFAULT_CHECKPOINT_EVERY} batches, {threads} threads):"
    )
    base = worker_run(model, dataset, rows)[0]
    for batch in (16, 32, 64, 128):
        cells = []
        for every in (10, DEFAULT_CHECKPOINT_EVERY):
            elapsed = min(worker_run(model, dataset, rows, batch=batch, every=every)[0] for _ in range(2))
            cells.append(f"window {every:>3}: {base / elapsed:5.2f}x")
        print(f"  batch {batch:>3}  " + "   ".join(cells))
    export = paths[name][2]
    if export is None:
        return
    for count in sorted({1, threads}):
        candidate = load_onnx_classifier(model_dir, export, backend=name, threads=count)
        elapsed = min(worker_run(candidate, dataset, rows)[0] for _ in range(2))
        print(f"  {count} intra-op thread(s): {base / elapsed:5.2f}x")


def gpu_note() -> None:
    import torch

    from inference.torch_model import autocast_dtype

    if torch.cuda.is_available():
        device = torch.device("cuda")
        print(
            f"\nGPU {torch.cuda.get_device_name(0)}: the torch backend runs under {autocast_dtype(device)} "
            "autocast (measure with --model on this machine; the CPU rows above are this host's)"
        )
    else:
        print(
            "\nno GPU here: on one, the torch backend runs under bf16 (Ampere and later) or fp16 (T4, V100) "
            "autocast with pinned host memory; this bench would time it against the pipeline on the same GPU"
        )


if __name__ == "__main__":
    main()
