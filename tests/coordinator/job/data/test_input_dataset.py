"""A dataset of many files in, a verified output out: segments cut from the files' footers (by count or
by work, at row-group boundaries, big row groups split), each segment's input digest from the id column
alone, and a job over three files with uneven row groups run end to end: every row exactly once, proven
from the manifests, and fetched."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from coordinator.errors import DataError
from coordinator.job.data.input_dataset import InputFile, cut_segments, input_digests, list_input
from coordinator.sim.emulator_stack import Infrastructure
from coordinator.sim.matrix import run_matrix
from coordinator.sim.settings import SimulationSettings
from inference.digest import as_text, id_digest
from inference.storage import LocalStore
from tests.host_load import scaled

# three files, their row groups uneven: many small, one big, a few middling
ROW_GROUPS = {"part-a.parquet": [50] * 6, "part-b.parquet": [700], "part-c.parquet": [120, 80, 200, 50]}


def write_three_files(folder: Path, *, first_id: int = 0) -> list[int]:
    folder.mkdir(parents=True, exist_ok=True)
    words = ["a fine film", "dull and long", "the best this year", "not worth it", "quietly moving"]
    ids: list[int] = []
    for name, groups in ROW_GROUPS.items():
        rows = sum(groups)
        chunk = list(range(first_id + len(ids), first_id + len(ids) + rows))
        table = pa.table({"id": chunk, "text": [f"{words[i % 5]} {i}" for i in chunk]})
        with pq.ParquetWriter(folder / name, table.schema) as writer:
            offset = 0
            for size in groups:
                writer.write_table(table.slice(offset, size))
                offset += size
        ids.extend(chunk)
    return ids


def test_segments_by_work_end_at_row_group_boundaries_and_split_a_big_group(tmp_path: Path) -> None:
    write_three_files(tmp_path / "three")
    store = LocalStore(tmp_path)
    files = list_input(store, "three/")
    assert [(f.key, f.row_groups) for f in files] == [(f"three/{k}", tuple(v)) for k, v in ROW_GROUPS.items()]
    segments = cut_segments(files, count=None, segment_rows=200, bucket="b")
    by_file = [(s.input_key, s.start, s.stop) for s in segments]
    assert by_file == [
        ("three/part-a.parquet", 0, 200),  # four 50-row groups
        ("three/part-a.parquet", 200, 300),  # the file's rest: a segment never spans files
        ("three/part-b.parquet", 0, 175),  # a 700-row group split in four
        ("three/part-b.parquet", 175, 350),
        ("three/part-b.parquet", 350, 525),
        ("three/part-b.parquet", 525, 700),
        ("three/part-c.parquet", 0, 200),  # 120 + 80
        ("three/part-c.parquet", 200, 400),
        ("three/part-c.parquet", 400, 450),
    ]
    assert [s.segment_id for s in segments] == [f"seg-{i:04d}" for i in range(9)]
    # by count over many files: about rows / count each
    by_count = cut_segments(files, count=3, segment_rows=None, bucket="b")  # 484 rows: the files whole
    assert [(s.start, s.stop) for s in by_count] == [(0, 300), (0, 700), (0, 450)]
    # one file by count: equal ranges, as a small job always had
    one = cut_segments([InputFile("x.parquet", (1000,))], count=3, segment_rows=None, bucket="b")
    assert [(s.start, s.stop) for s in one] == [(0, 334), (334, 667), (667, 1000)]
    digests = input_digests(store, segments, id_column="id")
    assert digests["seg-0002"] == as_text(id_digest(pa.array(range(300, 475))))


def test_an_input_that_is_not_a_dataset_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "notes.parquet").write_bytes(b"not parquet")
    with pytest.raises(DataError, match=r"in/notes.parquet: not a Parquet file"):
        list_input(LocalStore(tmp_path), "in/")
    with pytest.raises(DataError, match=r"empty/: no .parquet object under this prefix"):
        list_input(LocalStore(tmp_path), "empty/")
    pq.write_table(
        pa.table({"id": pa.array([], pa.int64()), "text": pa.array([], pa.string())}), tmp_path / "z.parquet"
    )
    with pytest.raises(DataError, match=r"z.parquet: has no rows"):
        list_input(LocalStore(tmp_path), "z.parquet")


def _cut_and_digest(store: LocalStore, prefix: str) -> dict[str, str]:
    files = list_input(store, prefix)
    return input_digests(store, cut_segments(files, count=3, segment_rows=None, bucket="b"), id_column="id")


def test_an_input_prefix_is_checked_whole_before_any_launch(tmp_path: Path) -> None:
    """Each was found only after instances were paid (or never): the same ids in two files ("verified
    exactly once", every id twice), int ids beside text ids (the merge died on every resume), a file
    without the text column (the worker said so), a stale copy in a folder below (part of the input)."""
    store = LocalStore(tmp_path)
    write_three_files(tmp_path / "twice")
    pq.write_table(
        pa.table({"id": [260, 9], "text": ["again", "new"]}), tmp_path / "twice" / "part-d.parquet"
    )
    with pytest.raises(DataError, match=r"twice/part-d.parquet: id '260' at row 0 is also at row 260 of"):
        _cut_and_digest(store, "twice/")
    write_three_files(tmp_path / "types")
    pq.write_table(pa.table({"id": ["x"], "text": ["words"]}), tmp_path / "types" / "part-d.parquet")
    with pytest.raises(DataError, match=r"types/part-d.parquet: column 'id' is string, in .* int64"):
        list_input(store, "types/")
    write_three_files(tmp_path / "notext")
    pq.write_table(pa.table({"id": [9999], "body": ["words"]}), tmp_path / "notext" / "part-d.parquet")
    with pytest.raises(DataError, match=r"notext/part-d.parquet: no column 'text' \(columns: id, body\)"):
        list_input(store, "notext/")
    write_three_files(tmp_path / "nested")
    write_three_files(tmp_path / "nested" / "old")
    with pytest.raises(DataError, match=r"nested/old/part-a.parquet: in a folder under the input's prefix"):
        list_input(store, "nested/")
    write_three_files(tmp_path / "fine")
    assert len(_cut_and_digest(store, "fine/")) == 3  # unique ids, one schema: no refusal


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_a_three_file_job_with_uneven_row_groups_runs_exactly_once_and_fetches(
    tmp_path: Path, deployed_stack: Infrastructure, busy_model_dir: Path
) -> None:
    ids = write_three_files(tmp_path / f"three{uuid.uuid4().hex[:6]}", first_id=10_000)
    dataset = next(tmp_path.glob("three*"))
    settings = SimulationSettings(
        out_dir=tmp_path / "runs" / f"t{uuid.uuid4().hex[:6]}",
        model=busy_model_dir,
        dataset=dataset,
        rows=len(ids),
        segment_rows=250,
        runs={"spot-only": 1},
        interruption_probability=0.0,
        forced_interruptions={"spot-only-01": [20.0]},  # one segment drains mid-file and resumes
        batch_size=16,
        checkpoint_every=4,
        mlflow=False,
        time_scale=30.0,
        paced=False,
    )
    (run,) = run_matrix(settings, deployed_stack)
    outcome = run.result.outcome
    assert outcome.succeeded, outcome.failures
    assert run.interruptions == 1
    run_dir = run.result.run_dir
    table = pq.read_table(run_dir / "predictions.parquet")
    assert table.column("id").to_pylist() == ids  # every row once, in the files' order
    state = sqlite3.connect(run_dir / "state.db")
    keys = [row[0] for row in state.execute("SELECT input_key FROM segments ORDER BY segment_id")]
    assert len(keys) == 7 and {k.rsplit("/", 1)[1] for k in keys} == set(ROW_GROUPS)
    job = f"{settings.out_dir.name}-spot-only-01"
    record = json.loads((run_dir / "run.json").read_text())
    assert record["rows_verified"] == len(ids)
    assert record["output_digest"] == as_text(id_digest(pa.array(ids)))
    # the output in S3 is the parts the job manifest lists: fetched, they are the rows again
    outputs = deployed_stack.save_outputs(tmp_path / "outputs.json")
    fetched = subprocess.run(
        [
            sys.executable,
            "-m",
            "coordinator",
            "fetch",
            job,
            "--csv",
            "--outputs",
            str(outputs),
            "--endpoint",
            deployed_stack.endpoint,
            "--out",
            str(tmp_path / "fetched"),
        ],
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    assert fetched.returncode == 0, fetched.stderr[-2000:]
    assert f"{len(ids)} rows from" in fetched.stdout
    got = pq.read_table(tmp_path / "fetched" / "predictions.parquet")
    assert sorted(got.column("id").to_pylist()) == ids
    assert (tmp_path / "fetched" / "predictions.csv").read_text().count("\n") == len(ids) + 1
    missing = subprocess.run(
        [
            sys.executable,
            "-m",
            "coordinator",
            "fetch",
            "no-such-job",
            "--outputs",
            str(outputs),
            "--endpoint",
            deployed_stack.endpoint,
            "--out",
            str(tmp_path / "none"),
        ],
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    assert (
        missing.returncode != 0 and "no job manifest" in missing.stderr and "Traceback" not in missing.stderr
    )
