"""`spotbatch run`'s input is checked before anything is launched: the row count comes from the dataset's
own metadata (a `--rows` that disagrees paid for instances before the merge found rows missing), a key that
is not there is one line (it was botocore's 404 traceback), and there are never more segments than rows
(a 1-row file with the default 10 segments was a ValueError traceback after the upload)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from coordinator.cli import build_parser
from coordinator.commands.options import positive_int
from coordinator.commands.run_setup import input_of
from coordinator.errors import ConfigError
from coordinator.job.aws.cloud_target import CloudTarget
from coordinator.stack.outputs import StackOutputs
from coordinator.stack.target import AwsTarget

STACK = StackOutputs(
    region="us-east-1",
    bucket="inputs",
    launch_template_ids={"spot": "lt-1"},
    subnet_ids={},
    name="s",
    worker_role_path="/spotbatch/s/",
    worker_boundary_arn="arn:aws:iam::123456789012:policy/spotbatch/s/boundary",
    repository_arn="arn:aws:ecr:us-east-1:123456789012:repository/s-worker",
    log_group="/spotbatch/s/workers",
    log_group_arn="arn:aws:logs:us-east-1:123456789012:log-group:/spotbatch/s/workers",
    metrics_namespace="spotbatch",
)


@pytest.fixture
def cloud(moto_endpoint: str, tmp_path: Path) -> CloudTarget:
    target = AwsTarget.emulator(moto_endpoint, "us-east-1")
    cloud = CloudTarget.connect(target, STACK)
    cloud.s3.create_bucket(Bucket="inputs")
    table = pa.table({"id": list(range(2000)), "text": ["a sentence"] * 2000})
    pq.write_table(table, tmp_path / "x.parquet")
    cloud.s3.upload_file(str(tmp_path / "x.parquet"), "inputs", "data/x.parquet")
    for name in ("a.parquet", "b.parquet", "notes.txt"):
        cloud.s3.upload_file(str(tmp_path / "x.parquet"), "inputs", f"data/many/{name}")
    cloud.s3.put_object(Bucket="inputs", Key="data/not.parquet", Body=b"id,text\n1,a\n")
    return cloud


def _args(key: str, rows: int | None = None) -> argparse.Namespace:
    return argparse.Namespace(input=None, input_key=key, rows=rows, text_column="text")


def test_the_row_count_comes_from_the_datasets_metadata(cloud: CloudTarget) -> None:
    assert input_of(_args("data/x.parquet"), cloud) == ("data/x.parquet", 2000)
    assert input_of(_args("data/x.parquet", rows=2000), cloud) == ("data/x.parquet", 2000)
    assert input_of(_args("data/many/"), cloud) == ("data/many/", 4000)  # a prefix: its .parquet objects


@pytest.mark.parametrize(
    ("key", "rows", "why"),
    [
        ("data/x.parquet", 1000, r"--rows 1000: s3://inputs/data/x.parquet has 2000 rows"),
        ("data/x.parquet", 2400, r"--rows 2400: s3://inputs/data/x.parquet has 2000 rows"),
        (
            "data/missing.parquet",
            None,
            r"--input-key data/missing.parquet: s3://inputs/data/missing.parquet: no such",
        ),
        ("data/not.parquet", None, r"s3://inputs/data/not.parquet: not a Parquet file"),
        (
            "data/none/",
            None,
            r"--input-key data/none/: s3://inputs/data/none/: no .parquet object under this prefix",
        ),
    ],
)
def test_an_input_that_is_not_what_it_says_is_one_line(
    cloud: CloudTarget, key: str, rows: int | None, why: str
) -> None:
    with pytest.raises(ConfigError, match=why):
        input_of(_args(key, rows), cloud)


@pytest.mark.parametrize("text", ["0", "-3", "ten"])
def test_a_segment_count_below_one_is_refused_by_the_parser(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        positive_int(text)


def test_never_more_segments_than_rows() -> None:
    from coordinator.commands.run import _spec

    args: Any = build_parser().parse_args(["run", "--input-key", "data/k", "--segments", "10"])
    spec = _spec(args, "j", "k", 1, STACK)
    assert spec.segments == 1
