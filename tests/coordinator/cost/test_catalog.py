"""The EC2 price rows generated from the catalog extract: a sample of it here (not the shared data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coordinator.cost.catalog import main
from coordinator.cost.pricing import PriceTable
from tests.conftest import FIXTURES

SAMPLE = FIXTURES / "aws-prices" / "ec2-prices.csv"


def test_sample_catalog_becomes_region_and_zone_rows_with_its_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "prices.csv"
    assert main([str(SAMPLE), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "left out 4 catalog row(s): Inferentia/Trainium type" in printed
    assert "left out 2 catalog row(s): Local Zone" in printed  # c7i and p3 in Atlanta
    assert "left out 2 catalog row(s): zone without a spot price" in printed  # p3 in use1-az3, az4
    table = PriceTable.load(out)
    c7i = table.lookup("aws", "us-east-1", "c7i.xlarge", "spot")
    assert c7i.usd_per_hour == 0.07  # median of az1 .0685, az2 .0752, az4 .0785, az5 .0678, az6 .07
    assert "skypilot-org/skypilot-catalog@00148f2af367" in c7i.source and "sha256" in c7i.source
    assert table.lookup("aws", "us-east-1", "g5.xlarge", "on-demand").usd_per_hour == 1.006
    g5 = table.lookup("aws", "us-east-1", "g5.xlarge", "spot", "use1-az2")
    assert (g5.usd_per_hour, g5.gpus, g5.gpu_model, g5.gpu_memory_gb, g5.vcpus) == (0.4246, 1, "A10G", 24, 4)
    assert {r.provider for r in table.rows} >= {"lambda", "runpod"}  # the other providers kept
    assert main([str(SAMPLE), "--out", str(out), "--check"]) == 0  # generated again: the same bytes


def test_a_catalog_with_other_columns_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "ec2-prices.csv"
    bad.write_text("instance_type,price\nc7i.xlarge,0.1\n")
    assert main([str(bad), "--out", str(tmp_path / "p.csv")]) == 2
    assert "columns ['instance_type', 'price'] are not" in capsys.readouterr().err
    assert not (tmp_path / "p.csv").exists()
