"""Worker throughput against the plain `transformers` pipeline, on the same model and sentences.

    python -m bench.worker_throughput [--model DIR] [--rows 2000] [--repeats 3]

Baseline: `pipeline("text-classification")` with the same batch size (64) and truncation (128 tokens).
Measured: the worker's batch loop (`SegmentRun.run`: segment read, length-sorted plan, inference, parts,
checkpoints) with the model already loaded, as the pipeline's is. Both run in this process with the same
torch threads; the order alternates between repeats and the median is reported. Predictions must match.

Checkpoint overhead: the worker with a checkpoint every 50 batches (the default), every 5 and every
batch, against one part at the very end (no intermediate checkpoint), on the same rows.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq

from coordinator.paths import default_dataset_path, default_model_dir
from inference.checkpoint import read_segment_output
from inference.config import DEFAULT_BATCH_SIZE, WorkerConfig
from inference.heartbeat import Heartbeat, HeartbeatWriter
from inference.interruption import StopSignal
from inference.model import Classifier, configure_threads, load_classifier
from inference.segment_run import SegmentRun
from inference.storage import open_store

NO_CHECKPOINT = 10**9  # batches: larger than any segment, so the only part is written at the end


def worker_run(
    classifier: Classifier, dataset: Path, rows: int, checkpoint_every: int
) -> tuple[float, list[tuple[str, str, float]]]:
    with tempfile.TemporaryDirectory() as output:
        config = WorkerConfig(
            input_uri=str(dataset),
            start=0,
            stop=rows,
            segment_id="bench",
            output_prefix=output,
            model="(preloaded)",
            checkpoint_every=checkpoint_every,
            poll_notices=False,
        )
        store = open_store(output)
        heartbeat = HeartbeatWriter(store, Heartbeat("bench", "local", "local", "", rows))
        started = time.perf_counter()
        SegmentRun(config, store, StopSignal()).run(classifier, heartbeat)
        elapsed = time.perf_counter() - started
        return elapsed, read_segment_output(store, "bench")


def pipeline_run(classifier: Classifier, texts: list[str]) -> tuple[float, list[tuple[str, float]]]:
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
    return elapsed, [(r["label"], float(r["score"])) for r in results]


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", default=str(default_model_dir()))
    parser.add_argument("--dataset", default=str(default_dataset_path()))
    parser.add_argument("--rows", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    threads = configure_threads()
    classifier = load_classifier(args.model)
    dataset = Path(args.dataset)
    table = pq.read_table(dataset).slice(0, args.rows)
    texts = table.column("text").to_pylist()
    ids = [str(i) for i in table.column("id").to_pylist()]
    print(f"model {args.model}, {len(texts)} sentences, batch {DEFAULT_BATCH_SIZE}, {threads} torch threads")

    _, worker_rows = worker_run(classifier, dataset, args.rows, 50)  # warm-up, and the predictions
    _, pipeline_rows = pipeline_run(classifier, texts)
    by_id = {row_id: (label, score) for row_id, label, score in worker_rows}
    same_labels = sum(by_id[i][0] == p[0] for i, p in zip(ids, pipeline_rows, strict=True))
    worst = max(abs(by_id[i][1] - p[1]) for i, p in zip(ids, pipeline_rows, strict=True))
    print(f"identical predictions: {same_labels}/{len(texts)} labels, largest score difference {worst:.2e}")

    worker_s, pipeline_s = median_time(
        [
            lambda: worker_run(classifier, dataset, args.rows, 50)[0],
            lambda: pipeline_run(classifier, texts)[0],
        ],
        args.repeats,
    )
    print(
        f"pipeline (baseline)    {len(texts) / pipeline_s:8.1f} rows/s  ({pipeline_s:.2f} s, median of "
        f"{args.repeats})"
    )
    print(f"worker                 {len(texts) / worker_s:8.1f} rows/s  ({worker_s:.2f} s)")
    print(f"ratio worker/pipeline  {pipeline_s / worker_s:8.2f}x  (goal >= 1.5x)")

    intervals = [NO_CHECKPOINT, 50, 5, 1]

    def timed_run(every: int) -> Callable[[], float]:
        return lambda: worker_run(classifier, dataset, args.rows, every)[0]

    checkpoint_s = median_time([timed_run(every) for every in intervals], args.repeats)
    base = checkpoint_s[0]
    print(
        "checkpoint overhead (against one part at the end; the interval also bounds the length-sort window,"
    )
    print("so short intervals pay for less effective sorting as well as for the writes):")
    for every, seconds in zip(intervals, checkpoint_s, strict=True):
        label = "none" if every == NO_CHECKPOINT else f"every {every} batch(es)"
        parts = 1 if every == NO_CHECKPOINT else -(-args.rows // (DEFAULT_BATCH_SIZE * every))
        print(f"  {label:<22} {seconds:7.2f} s  {parts:4d} part(s)  ratio {seconds / base:5.3f}")


if __name__ == "__main__":
    main()
