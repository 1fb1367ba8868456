"""The batch-inference worker: one segment of a Parquet dataset in, output parts and a checkpoint out.

Usage::

    python -m inference.worker --input s3://bucket/data/sentences.parquet --start 0 --stop 2500 \\
        --segment-id seg-0000 --output-prefix s3://bucket/jobs/job-1 --model build/models/minilm-sentiment

Every option may also come from the environment (`SPOTBATCH_INPUT`, `SPOTBATCH_START`, ...: the option's
name in capitals with `SPOTBATCH_` in front), which is how user-data and the container image pass them.

Restarted with the same arguments, it resumes from the checkpoint. On a spot interruption notice or
SIGTERM it finishes the batch in hand, writes its part and checkpoint, heartbeats `draining` and exits 0.
Exit codes (`inference/errors.py`): 0 done or drained, 2 bad input or arguments, 6 superseded (a later
attempt of the segment claimed its checkpoint: this one was presumed lost and stops without writing),
130 interrupted, 1 anything else.

Fencing: an attempt claims the checkpoint when it starts (writes it with its attempt id) and re-reads it
before each checkpoint write; if another attempt has claimed it since, this one is a leftover (an instance
the coordinator gave up on, still draining) and stops before it can overwrite the newer attempt's progress.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from inference.checkpoint import (
    Checkpoint,
    encode_part,
    load_checkpoint,
    remove_orphan_parts,
    save_checkpoint,
)
from inference.dataset import read_segment
from inference.errors import (
    EXIT_BAD_INPUT,
    EXIT_DONE,
    EXIT_INTERRUPTED,
    CheckpointError,
    Superseded,
    WorkerError,
)
from inference.heartbeat import HEARTBEAT_SECONDS, Heartbeat, HeartbeatWriter
from inference.interruption import (
    NOTICE_POLL_SECONDS,
    MetadataClient,
    NoticePoller,
    StopSignal,
    metadata_endpoint_from_env,
)
from inference.layout import part_key
from inference.model import DEFAULT_MAX_LENGTH, Classifier, configure_threads, load_classifier
from inference.plan import BatchPlan, plan_batches
from inference.storage import ObjectStore, open_store, split_uri

DEFAULT_BATCH_SIZE = 64
DEFAULT_CHECKPOINT_EVERY = 50  # batches: 3,200 rows, at most ~1 minute of redone work on a hard kill (CPU)
ENV_PREFIX = "SPOTBATCH_"

log = logging.getLogger("inference.worker")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerConfig:
    input_uri: str
    start: int
    stop: int
    segment_id: str
    output_prefix: str
    model: str
    batch_size: int = DEFAULT_BATCH_SIZE
    checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY
    max_length: int = DEFAULT_MAX_LENGTH
    text_column: str = "text"
    id_column: str = "id"
    instance_id: str = "local"
    market: str = "local"
    attempt: str = ""
    heartbeat_every: float = HEARTBEAT_SECONDS
    notice_poll_every: float = NOTICE_POLL_SECONDS
    poll_notices: bool = True
    threads: int | None = None


@dataclass(frozen=True, slots=True)
class WorkerOutcome:
    state: str  # "done" or "draining"
    rows_done: int
    rows_total: int
    batches_run: int
    truncated: int


class SegmentRun:
    """One attempt at a segment: resumes from the checkpoint, runs the remaining batches of the plan."""

    def __init__(self, config: WorkerConfig, store: ObjectStore, stop: StopSignal) -> None:
        self.config = config
        self.store = store
        self.stop = stop

    def _fresh_checkpoint(self) -> Checkpoint:
        c = self.config
        return Checkpoint(c.segment_id, c.start, c.stop, c.batch_size, c.checkpoint_every, attempt=c.attempt)

    def _resume_checkpoint(self) -> Checkpoint:
        fresh = self._fresh_checkpoint()
        found = load_checkpoint(self.store, self.config.segment_id)
        if found is None:
            found = fresh
        elif not found.matches(fresh):
            raise CheckpointError(
                f"{self.store.uri}: checkpoint of {found.segment_id} was written for rows "
                f"[{found.start}, {found.stop}), batch size {found.batch_size}, checkpoint every "
                f"{found.checkpoint_every}; this run asks for [{fresh.start}, {fresh.stop}), "
                f"{fresh.batch_size}, {fresh.checkpoint_every}. Use the same arguments or a new output "
                "prefix."
            )
        orphans = remove_orphan_parts(self.store, found)
        if orphans:
            log.info("removed %d orphan part(s) written after the last checkpoint: %s", len(orphans), orphans)
        found.attempt = self.config.attempt
        if found.attempt:
            save_checkpoint(
                self.store, found
            )  # the claim: an older attempt still running will see it and stop
        return found

    def _check_claim(self, checkpoint: Checkpoint) -> None:
        """Raise `Superseded` if a later attempt has claimed the segment's checkpoint."""
        if checkpoint.attempt:
            current = load_checkpoint(self.store, checkpoint.segment_id)
            if current is not None and current.attempt != checkpoint.attempt:
                raise Superseded(
                    f"segment {checkpoint.segment_id}: attempt {current.attempt!r} has claimed the "
                    "checkpoint; "
                    f"this attempt ({checkpoint.attempt!r}) stops without writing"
                )

    def _save(self, checkpoint: Checkpoint) -> None:
        self._check_claim(checkpoint)  # again: the part write took time
        save_checkpoint(self.store, checkpoint)

    def _write_part(
        self, plan: BatchPlan, ids: list[Any], first: int, stop: int, results: dict[int, Any]
    ) -> str:
        """Write batches [first, stop) of one chunk as a part; returns its key."""
        c = self.config
        chunk = plan.batches[first].chunk
        chunk_first, chunk_stop = plan.chunk_range(chunk)
        chunk_batch0 = plan.first_batch_of_chunk(chunk)
        whole = first == chunk_batch0 and plan.is_chunk_end(stop - 1)
        key = part_key(
            c.segment_id,
            c.start + chunk_first,
            c.start + chunk_stop,
            None if whole else (first - chunk_batch0, stop - chunk_batch0),
        )
        offsets = sorted(offset for batch in plan.batches[first:stop] for offset in batch.rows)
        self.store.put(key, encode_part([(ids[o], *results[o]) for o in offsets]))
        return key

    def run(self, classifier: Classifier, heartbeat: HeartbeatWriter) -> WorkerOutcome:
        c = self.config
        checkpoint = self._resume_checkpoint()
        total = c.stop - c.start
        if checkpoint.done:
            log.info("segment %s already done (%d rows); nothing to do", c.segment_id, checkpoint.rows_done)
            return WorkerOutcome("done", checkpoint.rows_done, total, 0, 0)

        input_parent, input_key = split_uri(c.input_uri)
        rows = read_segment(
            open_store(input_parent),
            input_key,
            c.start,
            c.stop,
            text_column=c.text_column,
            id_column=c.id_column,
        )
        lengths = classifier.token_lengths(rows.texts)
        plan = plan_batches(lengths, c.batch_size, c.checkpoint_every)
        log.info(
            "segment %s rows [%d, %d): %d batches, resuming at batch %d (%d rows done)",
            c.segment_id,
            c.start,
            c.stop,
            len(plan.batches),
            checkpoint.next_batch,
            checkpoint.rows_done,
        )
        heartbeat.update(rows_done=checkpoint.rows_done, next_batch=checkpoint.next_batch)
        if self.stop.wait(0):  # told to stop while booting: nothing computed, nothing to save
            log.info(
                "stopping (%s) before the first batch; checkpoint at %d rows",
                self.stop.reason,
                checkpoint.rows_done,
            )
            return WorkerOutcome("draining", checkpoint.rows_done, total, 0, 0)

        results: dict[int, tuple[str, float]] = {}
        part_first = checkpoint.next_batch
        batches_run = truncated = 0
        rows_at_resume = rows_done = checkpoint.rows_done
        started = time.monotonic()
        for batch in plan.batches[checkpoint.next_batch :]:
            batch_started = time.monotonic()
            texts = [rows.texts[offset] for offset in batch.rows]
            result = classifier.predict(texts, [lengths[offset] for offset in batch.rows])
            for offset, label, score in zip(batch.rows, result.labels, result.scores, strict=True):
                results[offset] = (label, score)
            elapsed = time.monotonic() - batch_started
            batches_run += 1
            truncated += result.truncated
            rows_done += len(batch.rows)
            log.info(
                "batch %d/%d rows %d tokens<=%d time %.3fs rows/s %.1f",
                batch.index + 1,
                len(plan.batches),
                len(batch.rows),
                max(lengths[o] for o in batch.rows),
                elapsed,
                len(batch.rows) / elapsed if elapsed > 0 else 0.0,
            )
            heartbeat.update(
                rows_done=rows_done,
                next_batch=batch.index + 1,
                rows_per_s=round((rows_done - rows_at_resume) / (time.monotonic() - started), 2),
            )
            stopping = self.stop.requested
            if plan.is_chunk_end(batch.index) or stopping:
                self._check_claim(checkpoint)
                key = self._write_part(plan, rows.ids, part_first, batch.index + 1, results)
                checkpoint.parts.append(key)
                checkpoint.next_batch = batch.index + 1
                checkpoint.rows_done = rows_done
                checkpoint.done = checkpoint.next_batch == len(plan.batches)
                self._save(checkpoint)
                part_first = batch.index + 1
                results.clear()
            if stopping and not checkpoint.done:
                log.info(
                    "stopping (%s) after batch %d; checkpoint at %d rows",
                    self.stop.reason,
                    batch.index + 1,
                    checkpoint.rows_done,
                )
                return WorkerOutcome("draining", checkpoint.rows_done, total, batches_run, truncated)
        if truncated:
            log.info("%d text(s) longer than %d tokens were truncated", truncated, c.max_length)
        return WorkerOutcome("done", checkpoint.rows_done, total, batches_run, truncated)


def run_worker(config: WorkerConfig, stop: StopSignal | None = None) -> WorkerOutcome:
    """Run one attempt at a segment; the caller maps exceptions to exit codes."""
    stop = stop or StopSignal()
    store = open_store(config.output_prefix)
    heartbeat = HeartbeatWriter(
        store,
        Heartbeat(
            config.segment_id, config.instance_id, config.market, config.attempt, config.stop - config.start
        ),
        every=config.heartbeat_every,
    )
    heartbeat.beat()
    heartbeat.start()
    poller = None
    if config.poll_notices:
        poller = NoticePoller(
            stop, MetadataClient(metadata_endpoint_from_env()), every=config.notice_poll_every
        )
        poller.start()
    try:
        configure_threads(config.threads)
        classifier = load_classifier(config.model, max_length=config.max_length)
        outcome = SegmentRun(config, store, stop).run(classifier, heartbeat)
    except Superseded:
        heartbeat.close(None)  # the segment's heartbeat belongs to the newer attempt now
        raise
    except BaseException as error:
        heartbeat.close("failed", f"{type(error).__name__}: {error}")
        raise
    finally:
        if poller is not None:
            poller.close()
    heartbeat.close("done" if outcome.state == "done" else "draining", stop.reason)
    return outcome


def _env_default(name: str, fallback: Any = None) -> Any:
    return os.environ.get(ENV_PREFIX + name.upper().replace("-", "_"), fallback)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m inference.worker",
        description="Predict one segment (row range) of a Parquet dataset; resumable and interruptible. "
        "Every option also reads SPOTBATCH_<OPTION> from the environment.",
    )

    def option(name: str, kind: type = str, default: Any = None, help: str = "") -> None:
        value = _env_default(name, default)
        parser.add_argument(
            f"--{name}",
            type=kind,
            default=None if value is None else kind(value),
            required=value is None,
            help=help,
        )

    option("input", help="URI of the Parquet dataset (s3://bucket/key or a path)")
    option("start", int, help="first row of the segment (0-based, inclusive)")
    option("stop", int, help="end of the segment (exclusive)")
    option("segment-id", help="name of the segment, as in seg-0003")
    option("output-prefix", help="URI under which parts, checkpoints and heartbeats go")
    option("model", help="model directory (save_pretrained) or hub name")
    option("batch-size", int, DEFAULT_BATCH_SIZE, "rows per batch")
    option("checkpoint-every", int, DEFAULT_CHECKPOINT_EVERY, "batches between checkpoints")
    option("max-length", int, DEFAULT_MAX_LENGTH, "tokens per text; longer texts are truncated and counted")
    option("text-column", str, "text", "name of the text column")
    option("id-column", str, "id", "name of the id column")
    option("instance-id", str, "local", "instance id written into heartbeats")
    option("market", str, "local", "spot or on-demand, written into heartbeats")
    option("attempt", str, "", "attempt id written into heartbeats and checkpoints")
    option("heartbeat-every", float, HEARTBEAT_SECONDS, "seconds between heartbeats")
    option("notice-poll-every", float, NOTICE_POLL_SECONDS, "seconds between interruption-notice polls")
    option("threads", int, 0, "torch threads (0: every usable CPU)")
    parser.add_argument(
        "--no-notice-poll",
        action="store_true",
        default=_env_default("no-notice-poll") == "1",
        help="do not poll the metadata service (not on EC2 and no simulator)",
    )
    return parser


def config_from_args(args: argparse.Namespace) -> WorkerConfig:
    return WorkerConfig(
        input_uri=args.input,
        start=args.start,
        stop=args.stop,
        segment_id=args.segment_id,
        output_prefix=args.output_prefix,
        model=args.model,
        batch_size=args.batch_size,
        checkpoint_every=args.checkpoint_every,
        max_length=args.max_length,
        text_column=args.text_column,
        id_column=args.id_column,
        instance_id=args.instance_id,
        market=args.market,
        attempt=args.attempt,
        heartbeat_every=args.heartbeat_every,
        notice_poll_every=args.notice_poll_every,
        poll_notices=not args.no_notice_poll,
        threads=args.threads or None,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s worker[{args.segment_id}] %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("botocore").setLevel(logging.WARNING)
    stop = StopSignal()
    stop.install_sigterm_handler()
    try:
        outcome = run_worker(config_from_args(args), stop)
    except Superseded as error:
        log.warning("superseded: %s", error)
        return error.exit_code
    except WorkerError as error:
        log.error("error: %s", error)
        return error.exit_code
    except ValueError as error:  # a row range or batch size that cannot be planned
        log.error("error: %s", error)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        log.error("interrupted")
        return EXIT_INTERRUPTED
    log.info(
        "%s: %d/%d rows, %d batches this attempt",
        outcome.state,
        outcome.rows_done,
        outcome.rows_total,
        outcome.batches_run,
    )
    return EXIT_DONE


if __name__ == "__main__":
    sys.exit(main())
