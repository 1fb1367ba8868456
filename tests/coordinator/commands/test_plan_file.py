"""`spotbatch run --plan`: the run takes the plan's types, sizing and speed in the stack's region, flags given
win, and a plan for another region or another job is refused in one line."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from coordinator.cli import build_parser
from coordinator.commands.plan import to_json
from coordinator.commands.plan_file import apply_plan, first_pool, read_plan
from coordinator.commands.run import DEFAULT_SEGMENTS
from coordinator.errors import ConfigError
from coordinator.plan.planner import Job, make_plan
from tests.coordinator.plan.test_planner import EXACT_BOOT, FIGURES, TABLE


@pytest.fixture
def plan_file(tmp_path: Path) -> Path:
    plan = make_plan(
        Job(rows=90_000, input_bytes=1, probability=0.0, boot=EXACT_BOOT), TABLE, FIGURES, samples=20
    )
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(to_json(plan)))
    return path


def run_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["run", "--input-key", "data/x.parquet", *argv])


def test_the_run_takes_the_plans_choices_in_the_stacks_region(plan_file: Path) -> None:
    chosen = read_plan(plan_file, region="us-east-1", rows=90_000)
    assert chosen.instance_types == ("c7i.xlarge",) and chosen.segments == 1
    assert chosen.rows_per_second == 100.0 and chosen.policy == "spot-only"
    args = run_args("--plan", str(plan_file))
    apply_plan(args, "us-east-1", 90_000)
    assert (args.segments, args.instance_types, args.planned_rows_per_s) == (1, "c7i.xlarge", 100.0)
    assert args.checkpoint_every == chosen.checkpoint_every
    given = run_args("--plan", str(plan_file), "--segments", "4", "--checkpoint-every", "7")
    apply_plan(given, "us-east-1", 90_000)
    assert (given.segments, given.checkpoint_every) == (4, 7)  # the command line wins
    assert run_args().segments is None and DEFAULT_SEGMENTS == 10  # without a plan: 10, as before
    assert first_pool(plan_file) == ("us-east-1", "c7i.xlarge")  # what `make apply-real PLAN=` applies


def test_a_plan_for_another_region_or_job_is_refused_by_name(plan_file: Path, tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"the stack in ap-south-1: apply the stack there \(make apply-real"
    ):
        read_plan(plan_file, region="ap-south-1", rows=90_000)
    with pytest.raises(ConfigError, match="made for 90,000 rows; this job has 5: plan it again"):
        read_plan(plan_file, region="us-east-1", rows=5)
    for bad in (b"{", b"[]", b'{"job": {"rows": 90000}}', b"\xff"):
        broken = tmp_path / "broken.json"
        broken.write_bytes(bad)
        with pytest.raises(ConfigError, match="not a plan of `spotbatch plan --json`"):
            read_plan(broken, region="us-east-1", rows=90_000)
    with pytest.raises(ConfigError, match="No such file"):
        read_plan(tmp_path / "none.json", region="us-east-1", rows=90_000)


def _edited(plan_file: Path, tmp_path: Path, edit: str, value: object) -> Path:
    plan = json.loads(plan_file.read_text())
    first = plan["ranked"][0]
    if edit == "instance_type":
        first["instance_type"] = value
    elif edit == "rows_per_second":
        first["throughput"]["rows_per_second"] = value
    else:
        first["sizing"][edit] = value
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(plan))
    return path


@pytest.mark.parametrize(
    ("edit", "value", "why"),
    [
        ("segments", 10**9, "segments 1000000000 is not a whole number from 1 to 10,000"),
        ("segments", 2.9, "segments 2.9 is not a whole number"),
        ("segments", True, "segments True is not a whole number"),
        ("checkpoint_every_batches", 0, "checkpoint_every_batches 0 is not a whole number"),
        ("rows_per_second", 1e300, "rows_per_second 1e+300 is not a number above 0"),
        ("rows_per_second", "100", "rows_per_second '100' is not a number above 0"),
        ("instance_type", "c7i.xlarge,p5.48xlarge", "instance type 'c7i.xlarge,p5.48xlarge' is not one EC2"),
    ],
)
def test_a_plans_number_or_type_out_of_bounds_is_one_line(
    plan_file: Path, tmp_path: Path, edit: str, value: object, why: str
) -> None:
    """A plan is a file anyone may edit: 10**9 segments were 2,000 launch attempts, 1e999 rows/s priced every
    estimate at $0.00, two types in one field reached EC2."""
    with pytest.raises(ConfigError, match=re.escape(why)):
        read_plan(_edited(plan_file, tmp_path, edit, value), region="us-east-1", rows=90_000)


def test_1e999_in_a_plan_is_refused_as_it_is_read(plan_file: Path, tmp_path: Path) -> None:
    path = tmp_path / "inf.json"
    path.write_text(plan_file.read_text().replace('"rows_per_second": 100.0', '"rows_per_second": 1e999'))
    assert "1e999" in path.read_text()
    with pytest.raises(ConfigError, match="1e999 is not a finite number"):
        read_plan(path, region="us-east-1", rows=90_000)
