"""Heartbeats are untrusted input: any worker of the job may write any segment's heartbeat object. A
poison object stopped the job for good (it raised out of the loop, and every resume crashed alike), and a
forged `done` beat marked a half-done segment DONE. Now the monitor treats the first as no beat and accepts
`done` only when the segment's checkpoint proves it."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from inference.checkpoint import Checkpoint, save_checkpoint
from inference.heartbeat import Heartbeat
from inference.layout import checkpoint_key, heartbeat_key
from tests.coordinator.job.loop.live_loop import LiveLoop, live_loop


def _launched(tmp_path: Path) -> LiveLoop:
    loop = live_loop(tmp_path, segments=1, policy="on-demand")
    loop.launch()
    return loop


def _verdict(loop: LiveLoop) -> str:
    (view,) = loop.monitor.observe([loop.attempt()])
    return view.verdict


def _beat(loop: LiveLoop, state: str, rows: int, ts: float | None = None) -> None:
    attempt = loop.attempt()
    assert attempt.instance_id is not None
    beat = Heartbeat("seg-0000", attempt.instance_id, "on-demand", attempt.attempt_id, 10, state=state)  # type: ignore[arg-type]
    beat.rows_done, beat.ts, beat.beats = rows, ts or time.time(), 3
    loop.store.put(heartbeat_key("seg-0000"), json.dumps(asdict(beat)).encode())


@pytest.mark.parametrize("poison", [b"\xff\xfe\x00", b"[" * 100_000 + b"]" * 100_000, b'{"ts": "soon"}'])
def test_a_poison_heartbeat_is_no_beat(tmp_path: Path, poison: bytes) -> None:
    loop = _launched(tmp_path)
    loop.store.put(heartbeat_key("seg-0000"), poison)
    assert _verdict(loop) == "booting"  # as with no heartbeat at all: no exception out of the loop


def test_a_done_beat_counts_only_once_the_checkpoint_proves_it(tmp_path: Path) -> None:
    loop = _launched(tmp_path)
    attempt = loop.attempt().attempt_id
    _beat(loop, "running", 4)
    assert _verdict(loop) == "running"
    _beat(loop, "done", 10)  # forged: no done checkpoint
    assert _verdict(loop) == "running"
    checkpoint = Checkpoint(
        "seg-0000", 0, 10, 5, 1, rows_done=5, parts=["parts/seg-0000/0-5.csv"], attempt=attempt
    )
    loop.store.put("parts/seg-0000/0-5.csv", b"id,label,score\n")
    version = save_checkpoint(loop.store, checkpoint, None)
    _beat(loop, "done", 10)  # half the rows
    assert _verdict(loop) == "running"
    checkpoint.rows_done, checkpoint.done = 10, True
    checkpoint.parts.append("parts/seg-0000/5-10.csv")  # listed, never written
    save_checkpoint(loop.store, checkpoint, version)
    _beat(loop, "done", 10)
    assert _verdict(loop) == "running"
    loop.store.put("parts/seg-0000/5-10.csv", b"id,label,score\n")
    _beat(loop, "done", 10)
    assert _verdict(loop) == "done"  # the worker's own end: every row, every part


def _older(checkpoint: Checkpoint) -> bytes:
    """As a worker before the segment manifests wrote it: no digest, no first or last id."""
    fields = asdict(checkpoint)
    return json.dumps(
        {k: v for k, v in fields.items() if k not in ("digest", "first_id", "last_id")}
    ).encode()


FORGED_CHECKPOINTS = {
    "not UTF-8": b"\xff\xfe",
    "too deep": b"[" * 100_000 + b"]" * 100_000,
    "keys missing": b'{"segment_id": "seg-0000"}',
    "a string for rows": json.dumps(
        {**asdict(Checkpoint("seg-0000", 0, 10, 5, 1)), "rows_done": "10"}
    ).encode(),
    "a part elsewhere": json.dumps(
        asdict(Checkpoint("seg-0000", 0, 10, 5, 1, parts=["../../x.csv"]))
    ).encode(),
    "more rows than it has": json.dumps(asdict(Checkpoint("seg-0000", 0, 10, 5, 1, rows_done=11))).encode(),
    # an older worker's format (no digest): rows 0 to 10**9 made the estimate negative and stopped every run
    "rows of another range": _older(Checkpoint("seg-0000", 0, 10**9, 5, 1, rows_done=10**9)),
    "rows done without parts": _older(Checkpoint("seg-0000", 0, 10, 5, 1, rows_done=10)),
}


@pytest.mark.parametrize("forged", FORGED_CHECKPOINTS.values(), ids=FORGED_CHECKPOINTS.keys())
def test_a_forged_checkpoint_counts_as_none_and_the_job_goes_on(
    tmp_path: Path, forged: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    """It stopped the job: the error came out of the book's `checkpointed_rows` and `close` (now the
    table's and the attempt book's `end`)."""
    loop = _launched(tmp_path)
    loop.store.put(checkpoint_key("seg-0000"), forged)
    assert loop.table.checkpointed_rows("seg-0000") == 0
    assert loop.launcher.estimate_usd("seg-0000", "on-demand") > 0
    _beat(loop, "done", 10)
    assert _verdict(loop) != "done"  # no done without a checkpoint that proves it
    loop.book.end(loop.attempt(), "lost", None)  # priced and settled, with no rows kept
    (ended,) = loop.table.attempts("seg-0000")
    assert ended.end_reason == "lost" and ended.rows_kept == 0
    assert "the segment starts over" in caplog.text


def test_a_beat_that_counts_other_rows_than_the_segments_is_no_beat(tmp_path: Path) -> None:
    """Its rows are the segment's (10 here): a beat of a million rows would price a million rows wasted."""
    loop = _launched(tmp_path)
    attempt = loop.attempt()
    assert attempt.instance_id is not None
    beat = Heartbeat("seg-0000", attempt.instance_id, "on-demand", attempt.attempt_id, 10**6, rows_done=10**6)
    loop.store.put(heartbeat_key("seg-0000"), json.dumps(asdict(beat)).encode())
    assert _verdict(loop) == "booting"  # as with no beat at all
    _beat(loop, "running", 4)
    assert _verdict(loop) == "running"
