"""`spotbatch plan` through the real entry point over the shipped price table; bad input refused by name."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from coordinator.stack.opt_in_regions import OPT_IN_REGIONS
from tests.host_load import scaled


def spotbatch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coordinator", "plan", *args],
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )


def test_the_plan_of_a_file_over_the_whole_price_table(tmp_path: Path) -> None:
    data = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": list(range(5_000)), "text": ["a fine film"] * 5_000}), data)
    out = tmp_path / "plan.json"
    result = spotbatch("--input", str(data), "--samples", "40", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert "job: 5,000 rows" in result.stdout and "pinned default" in result.stdout
    assert re.search(r"throughput c7i\.xlarge: [\d,]+ rows/s, measured", result.stdout)  # and its source
    plan = json.loads(out.read_text())
    assert len(plan["ranked"]) == 5 and plan["pools_priced"] > 100
    costs = [r["sampled"]["spot-only"]["mean_usd"] for r in plan["ranked"]]
    assert all(r["zone_id"].count("-") == 1 for r in plan["ranked"])  # no Local Zone unless asked
    assert plan["default"]["region"] == "us-east-1" and plan["default"]["zone_id"] == "median"
    cheapest = min(costs)
    assert cheapest < plan["default"]["sampled"]["spot-only"]["mean_usd"]  # the default pool is not the best
    assert "t3.medium" in plan["skipped"] and "V100" in plan["skipped"]["p3.2xlarge"]
    # an opt-in region a new account has disabled is said so, in the table and the JSON
    opt_in = {r["region"] for r in plan["ranked"] if r["opt_in_region"]}
    assert all(f"note: {region} is an opt-in region: enable it" in result.stdout for region in opt_in)
    assert {r["region"] for r in plan["ranked"] if not r["opt_in_region"]}.isdisjoint(OPT_IN_REGIONS)


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--rows", "0"], "--rows 0"),
        (["--rows", "10", "--throughput", "c7i.xlarge=fast"], "--throughput 'c7i.xlarge=fast'"),
        (["--rows", "10", "--deadline-minutes", "-5"], "--deadline-minutes -5"),
        (["--rows", "10", "--regions", "mars-north-1"], "mars-north-1: no prices for that region"),
        (["--input", "/nonexistent.parquet"], "--input /nonexistent.parquet: not a readable Parquet file"),
        (["--rows", "10", "--segment-minutes", "0"], "--segment-minutes 0: a finite number above 0"),
    ],
)
def test_bad_input_is_one_line_naming_it(args: list[str], names: str) -> None:
    result = spotbatch(*args)
    assert result.returncode == 2 and names in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_folder_of_files_is_planned_as_one_dataset_in_segments_of_the_asked_minutes(tmp_path: Path) -> None:
    """A dataset of three files (as `run --input-key PREFIX/` reads one) is sized from all of them, and
    `--segment-minutes` sizes the segments by work: the count is the type's minutes of work over the
    asked minutes, each segment's rows and minutes printed and in the JSON `run --plan` reads."""
    folder = tmp_path / "dataset"
    folder.mkdir()
    for n, rows in enumerate((40_000, 25_000, 35_000)):
        table = pa.table({"id": list(range(n * 10**6, n * 10**6 + rows)), "text": ["a fine film"] * rows})
        pq.write_table(table, folder / f"part-{n}.parquet")
    out = tmp_path / "plan.json"
    given = ("--types", "c7i.xlarge", "--throughput", "c7i.xlarge=50", "--samples", "20")
    result = spotbatch("--input", str(folder), *given, "--segment-minutes", "5", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert "job: 100,000 rows" in result.stdout
    sizing = json.loads(out.read_text())["ranked"][0]["sizing"]
    # 100,000 rows at 50 rows/s: 2,000 s of work; 5-minute segments: 7 of 286 s (15,000 rows is 300 s)
    assert sizing["segments"] == 7 and sizing["segment_seconds"] == pytest.approx(2_000 / 7)
    assert "7 segments of about 14,286 rows, 4.8 minutes of work each" in result.stdout
    assert "--segment-minutes" in sizing["why"]
    by_count = spotbatch("--input", str(folder), *given, "--segments", "4", "--json", str(out))
    assert by_count.returncode == 0, by_count.stderr
    assert "4 segments of about 25,000 rows, 8.3 minutes of work each" in by_count.stdout
    both = spotbatch("--input", str(folder), "--segments", "4", "--segment-minutes", "5")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


def test_a_folder_without_parquet_files_is_refused_by_name(tmp_path: Path) -> None:
    result = spotbatch("--input", str(tmp_path))
    assert result.returncode == 2 and f"--input {tmp_path}: no .parquet files in the folder" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
