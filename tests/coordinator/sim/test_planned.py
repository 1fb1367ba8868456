"""The planned pool's matrix runs at a time scale this host can pace: a type twice as fast as the pinned
one runs at half the time scale, so its ten workers ask for the same rows per wall second (at 15x, the
full matrix's c7i.2xlarge workers ran 30-60% behind their pace on 2 cores and every run was distorted)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from coordinator.errors import DataError
from coordinator.sim.planned import job_of, same_wall_load
from coordinator.sim.settings import SimulationSettings


def test_a_faster_type_runs_at_a_lower_time_scale_for_the_same_wall_pace(tmp_path: Path) -> None:
    pinned = SimulationSettings(
        out_dir=tmp_path, model=tmp_path, dataset=tmp_path, instance_type="c7i.xlarge"
    )
    faster = replace(pinned, instance_type="c7i.2xlarge")
    scale = same_wall_load(pinned, faster)
    assert scale == pytest.approx(7.5)
    slowed = replace(faster, time_scale=scale)
    assert slowed.workload().wall_rows_per_second == pytest.approx(pinned.workload().wall_rows_per_second)
    assert same_wall_load(pinned, pinned) == 15.0  # the same type: unchanged
    assert same_wall_load(faster, pinned) == 15.0  # a slower type keeps the time scale
    assert same_wall_load(replace(pinned, paced=False), faster) == 15.0  # unpaced: as fast as the host goes


def test_the_planned_job_of_a_folder_dataset_is_sized_from_all_its_files(tmp_path: Path) -> None:
    """`simulate --dataset FOLDER` plans the job its files make, as one dataset (it read a folder as a
    Parquet file before)."""
    folder = tmp_path / "dataset"
    folder.mkdir()
    for n, rows in enumerate((300, 500)):
        table = pa.table({"id": list(range(n * 1_000, n * 1_000 + rows)), "text": ["a fine film"] * rows})
        pq.write_table(table, folder / f"part-{n}.parquet")
    size = sum(f.stat().st_size for f in folder.iterdir())
    settings = SimulationSettings(out_dir=tmp_path, model=tmp_path, dataset=folder, rows=800, row_weight=3)
    job = job_of(settings)
    assert job.rows == 2_400 and job.input_bytes == 3 * size  # three times the rows, three times the bytes
    empty = replace(settings, dataset=tmp_path / "out")
    empty.dataset.mkdir()
    with pytest.raises(DataError, match=r"no \.parquet files in the folder"):
        job_of(empty)
