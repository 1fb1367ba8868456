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

from coordinator.job.loop.attempt_book import AttemptBook
from coordinator.job.loop.policy_pass import LaunchPass
from coordinator.policies.registry import driver_for, make_policy
from inference.checkpoint import Checkpoint, save_checkpoint
from inference.heartbeat import Heartbeat
from inference.layout import checkpoint_key, heartbeat_key
from tests.coordinator.job.loop.real_book import real_book


def _launched(tmp_path: Path) -> AttemptBook:
    book = real_book(tmp_path, segments=1, policy="on-demand")
    LaunchPass(book, driver_for(make_policy("on-demand"))).run()
    return book


def _verdict(book: AttemptBook) -> str:
    tracked = book.active["seg-0000"]
    (view,) = book.monitor.observe([tracked.active], now=time.time())
    return view.verdict


def _beat(book: AttemptBook, state: str, rows: int, ts: float | None = None) -> None:
    attempt = book.active["seg-0000"].active
    beat = Heartbeat("seg-0000", attempt.instance_id, "on-demand", attempt.attempt_id, 10, state=state)  # type: ignore[arg-type]
    beat.rows_done, beat.ts, beat.beats = rows, ts or time.time(), 3
    book.store.put(heartbeat_key("seg-0000"), json.dumps(asdict(beat)).encode())


@pytest.mark.parametrize("poison", [b"\xff\xfe\x00", b"[" * 100_000 + b"]" * 100_000, b'{"ts": "soon"}'])
def test_a_poison_heartbeat_is_no_beat(tmp_path: Path, poison: bytes) -> None:
    book = _launched(tmp_path)
    book.store.put(heartbeat_key("seg-0000"), poison)
    assert _verdict(book) == "booting"  # as with no heartbeat at all: no exception out of the loop


def test_a_done_beat_counts_only_once_the_checkpoint_proves_it(tmp_path: Path) -> None:
    book = _launched(tmp_path)
    attempt = book.active["seg-0000"].active.attempt_id
    _beat(book, "running", 4)
    assert _verdict(book) == "running"
    _beat(book, "done", 10)  # forged: no done checkpoint
    assert _verdict(book) == "running"
    checkpoint = Checkpoint(
        "seg-0000", 0, 10, 5, 1, rows_done=5, parts=["parts/seg-0000/0-5.csv"], attempt=attempt
    )
    book.store.put("parts/seg-0000/0-5.csv", b"id,label,score\n")
    version = save_checkpoint(book.store, checkpoint, None)
    _beat(book, "done", 10)  # half the rows
    assert _verdict(book) == "running"
    checkpoint.rows_done, checkpoint.done = 10, True
    checkpoint.parts.append("parts/seg-0000/5-10.csv")  # listed, never written
    save_checkpoint(book.store, checkpoint, version)
    _beat(book, "done", 10)
    assert _verdict(book) == "running"
    book.store.put("parts/seg-0000/5-10.csv", b"id,label,score\n")
    _beat(book, "done", 10)
    assert _verdict(book) == "done"  # the worker's own end: every row, every part


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
}


@pytest.mark.parametrize("forged", FORGED_CHECKPOINTS.values(), ids=FORGED_CHECKPOINTS.keys())
def test_a_forged_checkpoint_counts_as_none_and_the_job_goes_on(
    tmp_path: Path, forged: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    """It stopped the job: the error came out of the book's `checkpointed_rows` and `close`."""
    book = _launched(tmp_path)
    book.store.put(checkpoint_key("seg-0000"), forged)
    assert book.checkpointed_rows("seg-0000") == 0
    assert book.estimate_usd("seg-0000", "on-demand") > 0
    _beat(book, "done", 10)
    assert _verdict(book) != "done"  # no done without a checkpoint that proves it
    book.end("seg-0000", "lost", None)  # priced and settled, with no rows kept
    (ended,) = book.state.attempts(book.job_id, "seg-0000")
    assert ended.end_reason == "lost" and ended.rows_kept == 0
    assert "corrupt checkpoint" in caplog.text and "the segment starts over" in caplog.text
