"""The worker's contract beyond interruptions: S3 through a moto server, resume rules, bad input, logs."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from inference.checkpoint import load_checkpoint, read_segment_output
from inference.config import WorkerConfig
from inference.dataset import write_dataset
from inference.storage import open_store
from inference.worker import run_worker
from tests.conftest import synthetic_sentences
from tests.inference.workerproc import WorkerProcess


def config(dataset: str, model: Path, output: str, **overrides: object) -> WorkerConfig:
    fields: dict[str, object] = dict(
        input_uri=dataset,
        start=200,
        stop=900,
        segment_id="seg-0002",
        output_prefix=output,
        model=str(model),
        batch_size=32,
        checkpoint_every=4,
        poll_notices=False,
        heartbeat_every=0.5,
    )
    fields.update(overrides)
    return WorkerConfig(**fields)  # type: ignore[arg-type]


def cli_args(c: WorkerConfig) -> list[str]:
    return [
        "--input",
        c.input_uri,
        "--start",
        str(c.start),
        "--stop",
        str(c.stop),
        "--segment-id",
        c.segment_id,
        "--output-prefix",
        c.output_prefix,
        "--model",
        c.model,
        "--batch-size",
        str(c.batch_size),
        "--checkpoint-every",
        str(c.checkpoint_every),
        "--no-notice-poll",
        "--heartbeat-every",
        "0.5",
    ]


@pytest.mark.slow
def test_s3_input_and_output_through_moto_server_survive_a_kill(
    moto_endpoint: str, tmp_path: Path, sentences_parquet: Path, tiny_model_dir: Path
) -> None:
    s3 = boto3.client("s3", endpoint_url=moto_endpoint)
    s3.create_bucket(Bucket="spotbatch-test")
    s3.upload_file(str(sentences_parquet), "spotbatch-test", "data/sentences.parquet")
    remote = config(
        "s3://spotbatch-test/data/sentences.parquet", tiny_model_dir, "s3://spotbatch-test/jobs/j1"
    )
    local = run_worker(config(str(sentences_parquet), tiny_model_dir, str(tmp_path / "local")))
    assert local.state == "done"

    first = WorkerProcess(cli_args(remote))  # AWS_ENDPOINT_URL points the subprocess at moto
    assert first.wait_for_batch(9)
    first.signal(signal.SIGKILL)
    first.wait()
    second = WorkerProcess(cli_args(remote))
    assert second.wait() == 0, second.log
    assert "resuming at batch 8 " in second.log  # the checkpoint after batch 8 was in S3

    remote_rows = read_segment_output(open_store(remote.output_prefix), remote.segment_id)
    local_rows = read_segment_output(open_store(str(tmp_path / "local")), remote.segment_id)
    assert sorted(remote_rows) == sorted(local_rows)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="spotbatch-test", Prefix="jobs/j1/")["Contents"]]
    assert "jobs/j1/heartbeats/seg-0002.json" in keys
    tagging = s3.get_object_tagging(Bucket="spotbatch-test", Key="jobs/j1/heartbeats/seg-0002.json")["TagSet"]
    assert tagging == [{"Key": "spotbatch:kind", "Value": "heartbeat"}]  # what the lifecycle rule expires
    assert "jobs/j1/parts/seg-0002/00000200-00000328.parquet" in keys  # key fixed by the chunk's row range


def test_rerun_of_a_done_segment_changes_nothing(
    tmp_path: Path, sentences_parquet: Path, tiny_model_dir: Path
) -> None:
    c = config(str(sentences_parquet), tiny_model_dir, str(tmp_path))
    assert run_worker(c).state == "done"
    store = open_store(str(tmp_path))
    before = {key: store.get(key) for key in store.list("parts/")}
    again = run_worker(c)
    assert (again.state, again.batches_run, again.rows_done) == ("done", 0, 700)
    assert {key: store.get(key) for key in store.list("parts/")} == before


def test_resume_with_a_different_plan_is_refused(
    tmp_path: Path, sentences_parquet: Path, tiny_model_dir: Path
) -> None:
    c = config(str(sentences_parquet), tiny_model_dir, str(tmp_path))
    run_worker(c)
    worker = WorkerProcess([*cli_args(c), "--batch-size", "64"])  # the last --batch-size wins
    assert worker.wait() == 2
    assert "checkpoint of seg-0002 was written for rows [200, 900), batch size 32" in worker.log
    assert load_checkpoint(open_store(str(tmp_path)), "seg-0002") is not None  # untouched


def test_orphan_part_from_a_crash_is_ignored_and_removed(
    tmp_path: Path, sentences_parquet: Path, tiny_model_dir: Path
) -> None:
    c = config(str(sentences_parquet), tiny_model_dir, str(tmp_path))
    store = open_store(str(tmp_path))
    store.put("parts/seg-0002/00000200-00000328.b000-002.parquet", b"id,prediction,score\n999,positive,0.5\n")
    run_worker(c)
    assert "parts/seg-0002/00000200-00000328.b000-002.parquet" not in store.list("parts/")
    assert len(read_segment_output(store, "seg-0002")) == 700


def test_a_corrupt_checkpoint_is_written_over_and_the_segment_starts_over(
    tmp_path: Path, sentences_parquet: Path, tiny_model_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Any worker of the job may write it: one that does not parse failed every attempt of the segment."""
    c = config(str(sentences_parquet), tiny_model_dir, str(tmp_path), attempt="j/seg-0002/2")
    store = open_store(str(tmp_path))
    store.put("checkpoints/seg-0002.json", b'{"segment_id": "seg-0002", "parts": ["/etc/passwd"]}')
    assert run_worker(c).rows_done == 700
    assert len(read_segment_output(store, "seg-0002")) == 700
    assert "corrupt checkpoint (TypeError: its keys are not" in caplog.text and "starts over" in caplog.text


def test_missing_text_column_names_the_object_and_column(tmp_path: Path, tiny_model_dir: Path) -> None:
    dataset = tmp_path / "raw.parquet"
    write_dataset(pa.table({"id": list(range(1_000)), "body": ["x"] * 1_000}), dataset)
    worker = WorkerProcess(cli_args(config(str(dataset), tiny_model_dir, str(tmp_path / "out"))))
    assert worker.wait() == 2
    assert f"{tmp_path}/raw.parquet: column 'text' not found; columns are: id, body" in worker.log


def test_segment_outside_the_dataset_is_refused(
    tmp_path: Path, sentences_parquet: Path, tiny_model_dir: Path
) -> None:
    worker = WorkerProcess(
        cli_args(config(str(sentences_parquet), tiny_model_dir, str(tmp_path), stop=2_000))
    )
    assert worker.wait() == 2
    assert "segment rows [200, 2000) outside the dataset's 1500 rows" in worker.log


def test_truncated_long_texts_are_counted_in_the_log(
    tmp_path: Path, tiny_model_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    texts = synthetic_sentences(100)
    texts[10] = "very long " * 400
    texts[50] = "also long " * 300
    dataset = tmp_path / "long.parquet"
    write_dataset(pa.table({"id": list(range(100)), "text": texts}), dataset)
    caplog.set_level("INFO", logger="inference.worker")
    outcome = run_worker(config(str(dataset), tiny_model_dir, str(tmp_path / "out"), start=0, stop=100))
    assert outcome.truncated == 2
    assert "2 text(s) longer than 128 tokens were truncated" in caplog.text


def test_a_checkpoint_of_an_older_worker_is_resumed_with_its_digest_made_from_its_parts(
    tmp_path: Path, sentences_parquet: Path, tiny_model_dir: Path
) -> None:
    """A checkpoint written before the segment manifests has no digest and no first or last id. The next
    attempt makes them from the parts it lists and resumes where it stopped (it started the segment over
    before), and the segment's manifest proves its rows against the input's."""
    from inference.digest import as_text, id_digest
    from inference.layout import checkpoint_key
    from inference.manifest import read_segment_manifest

    c = config(str(sentences_parquet), tiny_model_dir, str(tmp_path), attempt="j/seg-0002/1")
    assert run_worker(c).state == "done"
    store = open_store(str(tmp_path))
    done = load_checkpoint(store, "seg-0002")
    assert done is not None and len(done.parts) >= 3
    kept = done.parts[:2]  # an older worker that stopped after two parts
    rows = sum(len(read_part_ids(store, key)) for key in kept)
    for key in [*done.parts[2:], *store.list("manifests/")]:
        store.delete(key)
    older = {
        **{k: getattr(done, k) for k in ("segment_id", "start", "stop", "batch_size", "checkpoint_every")},
        **{"next_batch": rows // c.batch_size, "rows_done": rows, "parts": kept, "done": False},
        **{"attempt": "j/seg-0002/1", "updated_at": 1.0},
    }
    store.put(checkpoint_key("seg-0002"), json.dumps(older).encode())

    resumed = run_worker(
        config(str(sentences_parquet), tiny_model_dir, str(tmp_path), attempt="j/seg-0002/2")
    )
    assert (resumed.state, resumed.rows_done) == ("done", 700)
    assert resumed.batches_run == (700 - rows + c.batch_size - 1) // c.batch_size  # only what was left
    manifest = read_segment_manifest(store, "seg-0002")
    ids = pq.read_table(sentences_parquet).column("id").slice(200, 700)
    assert manifest is not None and (manifest.rows, manifest.digest) == (700, as_text(id_digest(ids)))
    assert (manifest.first_id, manifest.last_id) == (str(ids[0].as_py()), str(ids[-1].as_py()))


def read_part_ids(store: Any, key: str) -> list[object]:
    from inference.checkpoint import decode_part

    ids: list[object] = decode_part(store.get(key)).column("id").to_pylist()
    return ids


def test_an_older_workers_checkpoint_that_lists_a_missing_part_is_corrupt_and_starts_over(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from inference.checkpoint import load_versioned_checkpoint, rows_checkpointed
    from inference.errors import CheckpointError

    store = open_store(str(tmp_path))
    older = {
        **{"segment_id": "seg-0002", "start": 200, "stop": 900, "batch_size": 32, "checkpoint_every": 4},
        **{"next_batch": 4, "rows_done": 128, "parts": ["parts/seg-0002/gone.parquet"], "done": False},
        **{"attempt": "j/seg-0002/1", "updated_at": 1.0},
    }
    store.put("checkpoints/seg-0002.json", json.dumps(older).encode())
    assert rows_checkpointed(store, "seg-0002", (200, 900)) == 0
    assert "corrupt checkpoint (a part it lists is missing" in caplog.text and "starts over" in caplog.text
    with pytest.raises(CheckpointError, match=r"checkpoints/seg-0002\.json: corrupt checkpoint"):
        load_versioned_checkpoint(store, "seg-0002")
