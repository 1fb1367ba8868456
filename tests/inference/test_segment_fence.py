"""Two attempts of one segment writing at once: the fence is in storage, so the output stays whole.

The case of issue 29 (item 6): an interruption warning reaches the coordinator but not the old worker, so
the replacement starts while the old one still writes. Before the fence, the replacement's claim deleted
the part the old worker had just written, the old worker's checkpoint then listed it, and every merge
failed on the missing part. Here the old attempt runs in a thread and is held at one of its checkpoint
writes while the new attempt runs; each order of the two writers' steps the race allows is played out.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from inference import worker
from inference.checkpoint import load_checkpoint, read_segment_output
from inference.config import WorkerConfig
from inference.errors import Superseded
from inference.layout import writer_tag
from inference.storage import LocalStore, ObjectStore, open_store
from tests.host_load import scaled
from tests.inference.test_worker import config

SEGMENT = "seg-0002"
EXPECTED_IDS = sorted(str(10_000 + 3 * row) for row in range(200, 900))  # sentences_parquet's ids


class HeldStore(LocalStore):
    """A store whose checkpoint writes call `before` first (the test holds the writer there)."""

    def __init__(self, root: Path, before: Callable[[int], None]) -> None:
        super().__init__(root)
        self.before, self.checkpoint_writes = before, 0

    def put_if(self, key: str, data: bytes, version: str | None) -> str:
        if key.startswith("checkpoints/"):
            self.checkpoint_writes += 1
            self.before(self.checkpoint_writes)
        return super().put_if(key, data, version)


class OldAttempt:
    """Attempt 1 in a thread of its own, its store held where the test says."""

    def __init__(self, c: WorkerConfig, store: HeldStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(c,), name="old-attempt")
        real_open = open_store

        def open_for(uri: str) -> ObjectStore:
            return store if threading.current_thread() is self.thread else real_open(uri)

        monkeypatch.setattr(worker, "open_store", open_for)
        self.thread.start()

    def _run(self, c: WorkerConfig) -> None:
        try:
            worker.run_worker(c)
        except BaseException as error:  # what it ended with, for the test to see
            self.error = error

    def join(self) -> BaseException | None:
        self.thread.join(timeout=scaled(120))
        assert not self.thread.is_alive()
        return self.error


@pytest.fixture
def attempts(
    tmp_path: Path, sentences_parquet: Path, tiny_model_dir: Path
) -> Iterator[tuple[WorkerConfig, ...]]:
    base = config(str(sentences_parquet), tiny_model_dir, str(tmp_path / "job"))
    yield tuple(
        config(str(sentences_parquet), tiny_model_dir, base.output_prefix, attempt=f"j/{SEGMENT}/{n}")
        for n in (1, 2)
    )


def assert_whole(output: str, replacement: str) -> None:
    """Every row exactly once, every listed part present, nothing unlisted left, the checkpoint the new
    attempt's."""
    store = open_store(output)
    checkpoint = load_checkpoint(store, SEGMENT)
    assert checkpoint is not None and checkpoint.done and checkpoint.attempt == replacement
    assert sorted(row_id for row_id, _, _ in read_segment_output(store, SEGMENT)) == EXPECTED_IDS
    assert store.list(f"parts/{SEGMENT}/") == sorted(checkpoint.parts)


def test_an_old_attempt_that_wrote_a_part_as_the_new_one_claimed_cannot_list_it(
    attempts: tuple[WorkerConfig, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = attempts
    at_first_commit, go_on = threading.Event(), threading.Event()

    def hold(write: int) -> None:  # write 1 is the claim; write 2 lists the old attempt's first part
        if write == 2:
            at_first_commit.set()
            assert go_on.wait(scaled(120))

    first = OldAttempt(old, HeldStore(Path(old.output_prefix), hold), monkeypatch)
    assert at_first_commit.wait(scaled(120))  # its part is written, its checkpoint write not yet
    assert worker.run_worker(new).state == "done"  # the replacement claims over it and finishes
    go_on.set()
    assert isinstance(first.join(), Superseded)  # the old checkpoint write is refused: nothing listed
    assert_whole(new.output_prefix, new.attempt)
    checkpoint = load_checkpoint(open_store(new.output_prefix), SEGMENT)
    assert checkpoint is not None
    assert {key.rsplit(".", 2)[1] for key in checkpoint.parts} == {writer_tag(new.attempt)}


def test_a_claim_that_loses_to_an_old_attempts_write_reads_again_and_keeps_that_work(
    attempts: tuple[WorkerConfig, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = attempts
    at_first_commit, go_on, wrote, at_second_commit, finish = (threading.Event() for _ in range(5))

    def hold_old(write: int) -> None:
        if write == 2:
            at_first_commit.set()
            assert go_on.wait(scaled(120))
        if write == 3:  # its first commit landed; the next one waits for the end of the test
            wrote.set()
            at_second_commit.set()
            assert finish.wait(scaled(120))

    def hold_new(write: int) -> None:
        if write == 1:  # the new attempt has read the checkpoint; the old one's write gets in first
            go_on.set()
            assert wrote.wait(scaled(120))

    first = OldAttempt(old, HeldStore(Path(old.output_prefix), hold_old), monkeypatch)
    assert at_first_commit.wait(scaled(120))
    replacement = HeldStore(Path(new.output_prefix), hold_new)
    monkeypatch.setattr(worker, "open_store", lambda uri: replacement)  # the old one opened its own
    assert worker.run_worker(new).state == "done"
    assert replacement.checkpoint_writes >= 3  # the refused claim, the claim again, and its commits
    finish.set()
    assert isinstance(first.join(), Superseded)
    assert_whole(new.output_prefix, new.attempt)
    checkpoint = load_checkpoint(open_store(new.output_prefix), SEGMENT)
    assert checkpoint is not None
    writers = [key.rsplit(".", 2)[1] for key in checkpoint.parts]
    assert writers[0] == writer_tag(old.attempt)  # the old attempt's listed part is kept, not redone
    assert set(writers[1:]) == {writer_tag(new.attempt)}


def test_a_checkpoint_forged_while_an_attempt_runs_stops_it_as_superseded(
    attempts: tuple[WorkerConfig, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any worker of the job may write it: garbage written mid-run refuses the running attempt's next write
    (its version is gone), and the attempt stops as superseded, not with a parse error."""
    old, new = attempts
    at_first_commit, go_on = threading.Event(), threading.Event()

    def hold(write: int) -> None:
        if write == 2:
            at_first_commit.set()
            assert go_on.wait(scaled(120))

    first = OldAttempt(old, HeldStore(Path(old.output_prefix), hold), monkeypatch)
    assert at_first_commit.wait(scaled(120))
    LocalStore(Path(old.output_prefix)).put(f"checkpoints/{SEGMENT}.json", b"\xff forged")
    go_on.set()
    assert isinstance(first.join(), Superseded)
    assert worker.run_worker(new).state == "done"  # the next attempt writes over it and starts over
    assert_whole(new.output_prefix, new.attempt)
