"""The worker as a real process: killed, terminated and noticed at random points, it loses and duplicates
nothing, and its final output equals an uninterrupted run's, row for row, bit for bit."""

from __future__ import annotations

import json
import random
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from coordinator.sim.metadata_server import MetadataServer
from coordinator.sim.paced_worker import PACE_ENV
from inference.checkpoint import load_checkpoint, read_segment_output
from inference.storage import open_store
from tests.inference.workerproc import WorkerProcess

SEGMENT = "seg-0001"
START, STOP = 100, 1_300  # not at row 0: the worker must read only its own rows
BATCH_SIZE, CHECKPOINT_EVERY = 16, 5
BATCHES = (STOP - START) // BATCH_SIZE  # 75
INTERRUPTIONS = 20
DRAIN_SECONDS = 5.0  # "exit 0 within a few seconds" after SIGTERM or a notice

pytestmark = pytest.mark.slow


def worker_args(
    dataset: Path, model: Path, output: str, *extra: str, batch_size: int = BATCH_SIZE
) -> list[str]:
    return [
        "--input",
        str(dataset),
        "--start",
        str(START),
        "--stop",
        str(STOP),
        "--segment-id",
        SEGMENT,
        "--output-prefix",
        output,
        "--model",
        str(model),
        "--batch-size",
        str(batch_size),
        "--checkpoint-every",
        str(CHECKPOINT_EVERY),
        "--heartbeat-every",
        "0.5",
        *extra,
    ]


def expected_ids(dataset: Path) -> list[int]:
    return [int(i) for i in pq.read_table(dataset).column("id").to_pylist()[START:STOP]]


def sorted_output(output: str) -> Rows:
    return sorted(read_segment_output(open_store(output), SEGMENT), key=lambda row: int(row[0]))


Rows = list[tuple[str, str, float]]


def uninterrupted_output(output: str, dataset: Path, model: Path, batch_size: int) -> Rows:
    worker = WorkerProcess(worker_args(dataset, model, output, "--no-notice-poll", batch_size=batch_size))
    assert worker.wait() == 0, worker.log
    rows = sorted_output(output)
    assert [int(r[0]) for r in rows] == sorted(expected_ids(dataset))
    return rows


@pytest.fixture(scope="module")
def reference_output(
    tmp_path_factory: pytest.TempPathFactory, sentences_parquet: Path, tiny_model_dir: Path
) -> Rows:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SPOTBATCH_TORCH_THREADS", "1")
        return uninterrupted_output(
            str(tmp_path_factory.mktemp("ref")), sentences_parquet, tiny_model_dir, BATCH_SIZE
        )


def kill_points(seed: int, last: int = BATCHES - 1) -> list[int]:
    """20 distinct batch numbers after which to interrupt, spread at random over [1, last]."""
    return sorted(random.Random(seed).sample(range(1, last + 1), INTERRUPTIONS))


def assert_exactly_once(output: str, dataset: Path, reference: Rows) -> None:
    rows = sorted_output(output)
    counts = Counter(int(row[0]) for row in rows)
    assert set(counts) == set(expected_ids(dataset))
    assert max(counts.values()) == 1
    assert rows == reference  # same ids, labels and scores, bit for bit


def test_sigkill_at_random_points_loses_and_duplicates_nothing(
    tmp_path: Path, sentences_parquet: Path, tiny_model_dir: Path, reference_output: Rows
) -> None:
    output = str(tmp_path / "out")
    args = worker_args(sentences_parquet, tiny_model_dir, output, "--no-notice-poll")
    kills = 0
    for target in kill_points(seed=1):
        worker = WorkerProcess(args)
        if not worker.wait_for_batch(target):
            break
        worker.signal(signal.SIGKILL)
        assert worker.wait() == -signal.SIGKILL
        kills += 1
        checkpoint = load_checkpoint(open_store(output), SEGMENT)
        # a hard kill loses at most the batches since the last checkpoint
        assert checkpoint is None or target - checkpoint.next_batch <= CHECKPOINT_EVERY + 1
    assert kills == INTERRUPTIONS
    final = WorkerProcess(args)
    assert final.wait() == 0, final.log
    assert_exactly_once(output, sentences_parquet, reference_output)


def drain_and_resume(
    output: str, args: list[str], seed: int, interrupt: Callable[[WorkerProcess], None]
) -> list[float]:
    """Interrupt at 20 points through `interrupt(worker)`; returns the seconds each drain took."""
    drain_times = []
    store = open_store(output)
    for target in kill_points(seed):
        worker = WorkerProcess(args)
        if not worker.wait_for_batch(target):
            break
        signalled = time.monotonic()
        interrupt(worker)
        assert worker.wait() == 0, worker.log
        drain_times.append(time.monotonic() - signalled)
        checkpoint = load_checkpoint(store, SEGMENT)
        assert checkpoint is not None
        # draining finishes the batch in hand and checkpoints it: every batch that ran is kept, none redone
        assert checkpoint.next_batch == worker.last_batch >= target
        assert checkpoint.rows_done == min(checkpoint.next_batch * BATCH_SIZE, STOP - START)
        heartbeat = json.loads(store.get(f"heartbeats/{SEGMENT}.json"))
        assert heartbeat["state"] in ("draining", "done")
    return drain_times


def test_sigterm_drains_within_seconds_and_resumes(
    tmp_path: Path, sentences_parquet: Path, tiny_model_dir: Path, reference_output: Rows
) -> None:
    output = str(tmp_path / "out")
    args = worker_args(sentences_parquet, tiny_model_dir, output, "--no-notice-poll")
    drains = drain_and_resume(output, args, seed=2, interrupt=lambda w: w.signal(signal.SIGTERM))
    assert len(drains) == INTERRUPTIONS
    assert max(drains) < DRAIN_SECONDS
    final = WorkerProcess(args)
    assert final.wait() == 0, final.log
    assert_exactly_once(output, sentences_parquet, reference_output)


def test_spot_notice_from_metadata_endpoint_drains_and_resumes(
    tmp_path: Path, sentences_parquet: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small batches (8 rows, 150 in the segment), paced to 0.1 s each as a simulated instance is: the notice
    # (polled every 0.05 s) is seen within a batch or two however fast the host, so 20 interruptions fit
    # before the end. The reference is an uninterrupted, unpaced run of the same plan.
    batch_size, instance = 8, "i-0123456789abcdef0"
    batches = (STOP - START) // batch_size
    reference = uninterrupted_output(str(tmp_path / "ref"), sentences_parquet, tiny_model_dir, batch_size)
    output = str(tmp_path / "out")
    store = open_store(output)
    gaps = random.Random(3).choices(range(1, 4), k=INTERRUPTIONS)  # batches to run after each resume
    with MetadataServer() as imds:
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.endpoint_for(instance))
        args = worker_args(
            sentences_parquet,
            tiny_model_dir,
            output,
            "--notice-poll-every",
            "0.05",
            batch_size=batch_size,
        )
        monkeypatch.setenv(PACE_ENV, "80")  # the simulator's hook paces it (coordinator/sim/paced_worker.py)
        resume_at = 0
        for gap in gaps:
            imds.clear_notice(instance)
            worker = WorkerProcess(args)
            target = resume_at + gap
            assert target < batches, f"interruption {gap} after batch {resume_at} overruns the segment"
            assert worker.wait_for_batch(target), f"worker ended before batch {target}:\n{worker.log}"
            noticed = time.monotonic()
            imds.issue_notice(instance, action_time="2026-12-02T12:02:00Z")
            assert worker.wait() == 0, worker.log
            assert time.monotonic() - noticed < DRAIN_SECONDS
            assert "spot interruption notice" in worker.log
            checkpoint = load_checkpoint(store, SEGMENT)
            assert checkpoint is not None and checkpoint.next_batch == worker.last_batch >= target
            # nothing done is redone: the next attempt starts right after the last batch that ran
            assert checkpoint.rows_done == checkpoint.next_batch * batch_size
            resume_at = checkpoint.next_batch
        assert imds.requests > INTERRUPTIONS  # the workers really polled
        imds.clear_notice(instance)
        final = WorkerProcess(args)
        assert final.wait() == 0, final.log
        assert f"resuming at batch {resume_at} " in final.log
    assert_exactly_once(output, sentences_parquet, reference)
