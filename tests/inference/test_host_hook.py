"""The worker's one point of contact with the machine it runs on: the host's hook is asked before the first
batch, after every batch with the rows done this attempt, and once at the end; a real instance installs
none and the worker runs unchanged."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from inference.host_hook import NoHook, install, installed
from inference.worker import run_worker
from tests.inference.test_worker import config


class RecordingHook:
    ready_at: float | None = None

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def until_ready(self, wait: Callable[[float], object]) -> None:
        self.calls.append(("ready", 0))

    def after_batch(self, rows: int) -> None:
        self.calls.append(("batch", rows))

    def finished(self) -> None:
        self.calls.append(("finished", 0))


@pytest.fixture
def hook() -> Iterator[RecordingHook]:
    recording = RecordingHook()
    install(recording)
    try:
        yield recording
    finally:
        install(NoHook())


def test_the_host_is_asked_before_the_first_batch_after_each_and_at_the_end(
    hook: RecordingHook, tmp_path: Path, sentences_parquet: Path, tiny_model_dir: Path
) -> None:
    outcome = run_worker(config(str(sentences_parquet), tiny_model_dir, str(tmp_path / "out")))
    assert outcome.state == "done" and outcome.batches_run > 1
    batches = [rows for kind, rows in hook.calls if kind == "batch"]
    assert hook.calls[0] == ("ready", 0) and hook.calls[-1] == ("finished", 0)
    assert len(batches) == outcome.batches_run and batches == sorted(batches)
    assert batches[-1] == outcome.rows_done == 700  # rows [200, 900), every one this attempt


def test_a_real_instance_has_no_hook() -> None:
    assert isinstance(installed(), NoHook) and installed().ready_at is None
