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

Fencing (`segment_run.py`): an attempt claims the checkpoint when it starts and stops without writing if a
newer attempt claims it later.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from inference.classifier import DEFAULT_MAX_LENGTH
from inference.config import DEFAULT_BATCH_SIZE, DEFAULT_CHECKPOINT_EVERY, WorkerConfig
from inference.errors import (
    EXIT_BAD_INPUT,
    EXIT_DONE,
    EXIT_INTERRUPTED,
    Superseded,
    WorkerError,
)
from inference.heartbeat import HEARTBEAT_SECONDS, STEADY_HEARTBEAT_SECONDS, Heartbeat, HeartbeatWriter
from inference.host_hook import installed
from inference.interruption import (
    NOTICE_POLL_SECONDS,
    MetadataClient,
    NoticePoller,
    StopSignal,
    metadata_endpoint_from_env,
)
from inference.metrics import MetricsPublisher
from inference.model import BACKENDS, load_classifier
from inference.process_exit import exit_after
from inference.segment_run import SegmentRun, WorkerOutcome
from inference.storage import open_store

ENV_PREFIX = "SPOTBATCH_"
METRICS_EVERY_BEATS = 10  # a metrics sample every tenth heartbeat (20 s on EC2), and one at the end

log = logging.getLogger("inference.worker")


def run_worker(config: WorkerConfig, stop: StopSignal | None = None) -> WorkerOutcome:
    """Run one attempt at a segment; the caller maps exceptions to exit codes."""
    stop = stop or StopSignal()
    store = open_store(config.output_prefix)
    ready_at = installed().ready_at  # a simulated machine's modelled launch: no beat before it ends
    heartbeat = HeartbeatWriter(
        store,
        Heartbeat(
            config.segment_id, config.instance_id, config.market, config.attempt, config.stop - config.start
        ),
        every=config.heartbeat_every,
        first_at=ready_at,
        steady_every=config.steady_heartbeat_every,
    )
    if ready_at is None:
        heartbeat.beat()
    heartbeat.start()
    metrics = MetricsPublisher.from_env(
        attempt=config.attempt,
        rows=lambda: heartbeat.heartbeat.rows_done,
        every=METRICS_EVERY_BEATS * config.heartbeat_every,
    )
    if metrics is not None:
        metrics.start()
    poller = None
    if config.poll_notices:
        poller = NoticePoller(
            stop, MetadataClient(metadata_endpoint_from_env()), every=config.notice_poll_every
        )
        poller.start()
    try:
        classifier = load_classifier(
            config.model, backend=config.backend, max_length=config.max_length, threads=config.threads
        )
        log.info("model %s on the %s backend", config.model, classifier.backend)
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
        if metrics is not None:
            metrics.close()
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
    option("heartbeat-every", float, HEARTBEAT_SECONDS, "seconds between heartbeats starting and draining")
    option("steady-heartbeat-every", float, STEADY_HEARTBEAT_SECONDS, "seconds between heartbeats running")
    option("notice-poll-every", float, NOTICE_POLL_SECONDS, "seconds between interruption-notice polls")
    option("threads", int, 0, "intra-op threads (0: every usable CPU)")
    option(
        "backend",
        str,
        "auto",
        f"inference backend: {', '.join(BACKENDS)} (auto: the fastest the build passed)",
    )
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
        steady_heartbeat_every=args.steady_heartbeat_every,
        notice_poll_every=args.notice_poll_every,
        poll_notices=not args.no_notice_poll,
        threads=args.threads or None,
        backend=args.backend,
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
    exit_after(main)
