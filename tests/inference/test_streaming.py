"""A segment streamed a chunk at a time across row groups: drained at any batch and resumed, it writes
every row of its range exactly once, the same predictions as a run never stopped, and a manifest whose
digest, rows and first and last ids are its input's; ids of either type digest regardless of order."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from inference.checkpoint import load_checkpoint, read_segment_table
from inference.classifier import BatchResult
from inference.config import WorkerConfig
from inference.digest import as_text, id_digest
from inference.heartbeat import Heartbeat, HeartbeatWriter
from inference.interruption import StopSignal
from inference.layout import manifest_key
from inference.segment_run import SegmentRun
from inference.storage import LocalStore

START, STOP, BATCH, EVERY = 50, 700, 8, 3  # chunks of 24 rows over 37-row groups


class StandIn:
    """Labels by the text's length: deterministic, and it counts batches to stop a run at one."""

    backend, max_length = "stand-in", 128

    def __init__(self, stop: StopSignal | None = None, after: int = 0) -> None:
        self.stop, self.after, self.batches = stop, after, 0

    def token_lengths(self, texts: list[str]) -> list[int]:
        return [len(text.split()) for text in texts]

    def predict(self, texts: list[str], lengths: list[int] | None = None) -> BatchResult:
        self.batches += 1
        if self.stop is not None and self.batches == self.after:
            self.stop.request("test")
        return BatchResult(
            ["long" if len(t) % 2 else "short" for t in texts], [len(t) / 100 for t in texts], 0
        )


def _dataset(path: Path, ids: pa.Array) -> Path:
    texts = [" ".join(["word"] * (i % 7 + 1)) + f" {i}" for i in range(len(ids))]
    pq.write_table(pa.table({"id": ids, "text": texts}), path, row_group_size=37)
    return path


def _run(dataset: Path, out: Path, classifier: StandIn, stop: StopSignal, attempt: str) -> str:
    config = WorkerConfig(
        input_uri=str(dataset),
        start=START,
        stop=STOP,
        segment_id="seg-0001",
        output_prefix=str(out),
        model="none",
        batch_size=BATCH,
        checkpoint_every=EVERY,
        attempt=attempt,
        poll_notices=False,
    )
    store = LocalStore(out)
    beat = HeartbeatWriter(store, Heartbeat("seg-0001", "i", "spot", attempt, STOP - START), every=60)
    return SegmentRun(config, store, stop).run(classifier, beat).state


@pytest.mark.parametrize(
    "ids", [pa.array(range(1000, 2000), pa.int64()), pa.array([f"r{i:04d}" for i in range(1000)])]
)
@pytest.mark.parametrize("stop_after", [1, 3, 5, 44, 81])
def test_drained_at_any_batch_and_resumed_is_the_uninterrupted_run(
    tmp_path: Path, ids: pa.Array, stop_after: int
) -> None:
    dataset = _dataset(tmp_path / "in.parquet", ids)
    assert _run(dataset, tmp_path / "whole", StandIn(), StopSignal(), "a1") == "done"
    stop = StopSignal()
    assert _run(dataset, tmp_path / "cut", StandIn(stop, stop_after), stop, "b1") == "draining"
    assert _run(dataset, tmp_path / "cut", StandIn(), StopSignal(), "b2") == "done"
    whole = read_segment_table(LocalStore(tmp_path / "whole"), "seg-0001").sort_by("id")
    cut = read_segment_table(LocalStore(tmp_path / "cut"), "seg-0001").sort_by("id")
    assert cut.equals(whole) and whole.column("id").to_pylist() == ids.to_pylist()[START:STOP]
    manifest = json.loads(LocalStore(tmp_path / "cut").get(manifest_key("seg-0001")))
    own = ids.slice(START, STOP - START)
    assert manifest["digest"] == as_text(id_digest(own)) and manifest["rows"] == STOP - START
    assert (manifest["first_id"], manifest["last_id"]) == (str(own[0].as_py()), str(own[-1].as_py()))
    assert manifest["parts"] == load_checkpoint(LocalStore(tmp_path / "cut"), "seg-0001").parts  # type: ignore[union-attr]


def test_the_digest_sees_order_not_and_a_missing_repeated_or_foreign_id() -> None:
    ids = pa.array([5, 9, 12, 40])
    assert id_digest(ids) == id_digest(pa.array([40, 12, 5, 9]))
    assert id_digest(ids) == id_digest(pa.chunked_array([ids.slice(0, 1), ids.slice(1)]))
    for other in ([5, 9, 12], [5, 9, 12, 12], [5, 9, 12, 41], [5, 9, 12, 40, 40]):
        assert id_digest(pa.array(other)) != id_digest(ids)
    texts = pa.array(["a", "bc", "", "é"])
    assert id_digest(texts) == id_digest(pa.array(["é", "", "bc", "a"]))
    assert id_digest(texts.slice(1, 2)) == id_digest(pa.array(["", "bc"]))
    assert id_digest(pa.array(["ab"])) != id_digest(pa.array(["ba"]))
    assert id_digest(pa.array(["5"])) != id_digest(pa.array([5]))  # an id keeps its type
    with pytest.raises(ValueError, match="must not be null"):
        id_digest(pa.array([1, None]))
    with pytest.raises(ValueError, match="cannot be digested"):
        id_digest(pa.array([1.5]))
