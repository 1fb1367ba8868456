"""Bench only: one attempt at a big job's segment, as `python -m bench.bigjob` runs it in a forked process.

The worker is the real one (`inference.segment_run.SegmentRun`: streaming reader, Parquet parts, fenced
checkpoints, the segment manifest, heartbeats) with a declared cheap stand-in for the model
(`CheapModel`): the bench measures the data and control planes, not inference. SIGTERM drains it, as a spot
notice does. Each attempt reports its outcome, its peak RSS and its S3 requests by kind to a JSON file.

Usage::

    run_attempt(worker_config_fields, "/tmp/report.json")
"""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path
from typing import Any, Literal

from bench.request_meter import RequestMeter
from inference.classifier import BatchResult
from inference.config import WorkerConfig
from inference.heartbeat import Heartbeat, HeartbeatWriter
from inference.interruption import StopSignal
from inference.segment_run import SegmentRun
from inference.storage import open_store


class CheapModel:
    """A declared stand-in: a text's length for its tokens, its parity for its label. Microseconds a row."""

    backend, max_length = "cheap-stand-in", 128

    def token_lengths(self, texts: list[str]) -> list[int]:
        return [len(text) for text in texts]

    def predict(self, texts: list[str], lengths: list[int] | None = None) -> BatchResult:
        sizes = lengths or self.token_lengths(texts)
        return BatchResult(["odd" if n % 2 else "even" for n in sizes], [n / 100 for n in sizes], 0)


def run_attempt(fields: dict[str, Any], report: str) -> None:
    meter, started = RequestMeter().install(), time.monotonic()
    forked_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the fork server's pages, shared
    stop = StopSignal()
    stop.install_sigterm_handler()
    config = WorkerConfig(**fields)
    store = open_store(config.output_prefix)
    beat = Heartbeat(
        config.segment_id, config.instance_id, config.market, config.attempt, config.stop - config.start
    )
    heartbeat = HeartbeatWriter(
        store, beat, every=config.heartbeat_every, steady_every=config.steady_heartbeat_every
    )
    heartbeat.beat()
    heartbeat.start()
    state: Literal["draining", "done", "failed"] = "failed"
    rows = 0
    try:
        outcome = SegmentRun(config, store, stop).run(CheapModel(), heartbeat)
        state, rows = "done" if outcome.state == "done" else "draining", outcome.rows_done
    finally:
        heartbeat.close(state, stop.reason)
        taken = meter.take()
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        document = {
            "state": state,
            "rows_done": rows,
            "seconds": time.monotonic() - started,
            "peak_rss_mb": peak_mb,
            "forked_rss_mb": forked_mb,
            "requests": taken.calls,
            "bytes_read": taken.bytes_read,
        }
        Path(report).write_text(json.dumps(document))
