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


def spotbatch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coordinator", "plan", *args], capture_output=True, text=True, timeout=120
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


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--rows", "0"], "--rows 0"),
        (["--rows", "10", "--throughput", "c7i.xlarge=fast"], "--throughput 'c7i.xlarge=fast'"),
        (["--rows", "10", "--deadline-minutes", "-5"], "--deadline-minutes -5"),
        (["--rows", "10", "--regions", "mars-north-1"], "mars-north-1: no prices for that region"),
        (["--input", "/nonexistent.parquet"], "--input /nonexistent.parquet: not a readable Parquet file"),
    ],
)
def test_bad_input_is_one_line_naming_it(args: list[str], names: str) -> None:
    result = spotbatch(*args)
    assert result.returncode == 2 and names in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
