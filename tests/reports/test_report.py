"""The comparison report, built from a runs folder that the project's own simulator made (real workers on a
moto server, a tiny model): tables equal the ledgers, charts are sane PNGs, the HTML is self-contained,
two builds are identical, and missing, partial or corrupt runs are named."""

from __future__ import annotations

import json
import re
import shutil
import statistics
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.errors import ReportError
from coordinator.plan.bar import FAIR_FILE, Fair
from coordinator.sim.emulator_stack import Infrastructure
from coordinator.sim.matrix import run_matrix
from coordinator.sim.settings import SimulationSettings
from reports.blocks import money
from reports.build import build_report
from reports.runs import load_runs
from tests.host_load import scaled

RUNS = {"on-demand": 1, "spot-only": 1, "hybrid": 2, "deadline": 1}


@pytest.fixture(scope="module")
def runs_folder(
    tmp_path_factory: pytest.TempPathFactory,
    tiny_model_dir: Path,
    sentences_parquet: Path,
    deployed_stack: Infrastructure,
) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("report-runs")
    settings = SimulationSettings(
        out_dir=tmp / "simulate-test",
        model=tiny_model_dir,
        dataset=sentences_parquet,
        runs=RUNS,
        rows=1_500,
        segments=4,
        interruption_probability=0.0,
        batch_size=16,
        checkpoint_every=4,
        mlflow=False,
        spot_share=0.75,
        time_scale=30.0,
        paced=False,
        forced_interruptions={"hybrid-01": [15.0], "hybrid-02": [15.0, 30.0], "spot-only-01": [15.0]},
    )
    run_matrix(settings, deployed_stack)
    (settings.out_dir / "simulation.json").write_text(
        json.dumps(
            {
                "runs": RUNS,
                "rows": 1500,
                "segments": 4,
                "time_scale": 30.0,
                "seed": 0,
                "interruption_model": "forced (test)",
            }
        )
    )
    yield settings.out_dir


def ledger_totals(run_dir: Path) -> dict[str, float]:
    lines = [json.loads(line) for line in (run_dir / "ledger.jsonl").read_text().splitlines()]
    return next(line for line in lines if line["kind"] == "job")


def model_verdict(costs: list[float], predicted: float) -> str | None:
    """What the report must say of a model's cost, from the ledgers alone: it agrees within 5% of the
    measured mean; it disagrees outside that and outside every run's cost (a bootstrap interval of the mean
    lies within them); in between, the interval decides (None: either word)."""
    mean = statistics.mean(costs)
    if abs(predicted - mean) <= 0.05 * mean:
        return "agrees"
    if not min(costs) <= predicted <= max(costs):
        return "DISAGREES"
    return None


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_tables_match_the_ledgers_and_charts_are_sane(runs_folder: Path, tmp_path: Path) -> None:
    paths = build_report(runs_folder, tmp_path / "out")
    report = paths.markdown.read_text()
    costs = {
        c: [ledger_totals(runs_folder / f"{c}-{i:02d}")["total_cost_usd"] for i in range(1, n + 1)]
        for c, n in RUNS.items()
    }
    baseline = statistics.mean(costs["on-demand"])
    for config, values in costs.items():
        row = next(line for line in report.splitlines() if line.startswith(f"| {config} |"))
        assert f"{money(statistics.mean(values))} (" in row
        if config != "on-demand":
            assert f"{(baseline - statistics.mean(values)) / baseline * 100:.1f}%" in row
        # the second definition, each run against its own work at the on-demand price (MLflow's), beside it
        own = [
            ledger_totals(runs_folder / f"{config}-{i:02d}")["savings_pct"] for i in range(1, len(values) + 1)
        ]
        assert f"| {statistics.mean(own):.1f}% |" in row
        assert "100.00% (" in row  # every row exactly once in every run
    interruptions = sum(ledger_totals(runs_folder / f"hybrid-{i:02d}")["interruptions"] for i in (1, 2)) / 2
    assert f"| {interruptions:.1f} |" in next(
        line for line in report.splitlines() if line.startswith("| hybrid |")
    )
    assert "Recommended: **" in report and "Savings target (>= 60%)" in report
    assert report.startswith("# spotbatch: on-demand, spot-only, hybrid and deadline compared")
    # the model's prediction beside each configuration's measurement, from the matrix's expected.json
    expected = json.loads((runs_folder / "expected.json").read_text())["predictions_with_overheads"]
    section = report.split("## Measured against the model", 1)[1].split("\n## ", 1)[0]
    for config in RUNS:
        row = next(line for line in section.splitlines() if line.startswith(f"| {config} |"))
        predicted = expected[config]["mean_cost_usd"]
        verdict = model_verdict(costs[config], predicted)
        assert f"{money(predicted)} ({verdict})" in row if verdict else f"{money(predicted)} (" in row
    assert "## Expected savings from first principles" in report and "(the price ceiling)" in report
    met = json.loads((runs_folder / "deadline-01" / "run.json").read_text())["deadline_met"]

    def cells(config: str) -> list[str]:
        return next(line for line in report.splitlines() if line.startswith(f"| {config} |")).split(" | ")

    assert cells("deadline")[-2] == f"{int(met)} / 1"
    assert f"Deadline for deadline: met in {int(met)} of 1 runs" in report
    assert cells("hybrid")[-2] == "-"
    # the workers' CPU and memory, read from CloudWatch (moto) into each ledger: the on-demand run's own
    on_demand = ledger_totals(runs_folder / "on-demand-01")
    assert cells("on-demand")[-1] == f"{on_demand['cpu_percent']:.0f}% / {on_demand['memory_mb']:,.0f} MB |"
    assert set(paths.charts) == {"cost_per_run", "wall_time", "cumulative_cost", "hybrid_timeline"}
    for chart in paths.charts.values():
        width, height = png_size(chart)
        assert 500 <= width <= 2000 and 300 <= height <= 2000, (chart, width, height)
        assert chart.stat().st_size > 10_000
        assert f"]({chart.name})" in report
    page = paths.html.read_text()
    assert page.count('src="data:image/png;base64,') == 4 and 'src="http' not in page


def test_two_builds_are_identical(runs_folder: Path, tmp_path: Path) -> None:
    first, second = build_report(runs_folder, tmp_path / "a"), build_report(runs_folder, tmp_path / "b")
    for name in ("comparison_report.md", "comparison_report.html", "cost_per_run.png", "hybrid_timeline.png"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert first.markdown.read_text().replace(str(tmp_path / "a"), "") == second.markdown.read_text().replace(
        str(tmp_path / "b"), ""
    )


def test_distorted_runs_are_left_out_of_the_headline_and_counted_in_a_line_below(
    runs_folder: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "simulate-copy"
    shutil.copytree(runs_folder, copy)
    record_path = copy / "hybrid-02" / "run.json"
    record = json.loads(record_path.read_text())
    record["pace"] = {**record.get("pace", {}), "distorted": True}
    record_path.write_text(json.dumps(record))
    report = build_report(copy, tmp_path / "out").markdown.read_text()
    hybrid = next(line for line in report.splitlines() if line.startswith("| hybrid |"))
    one = ledger_totals(copy / "hybrid-01")["total_cost_usd"]
    assert hybrid.startswith("| hybrid | 1 |") and f"{money(one)} (95%: {money(one)}-{money(one)}" in hybrid
    both = statistics.mean(ledger_totals(copy / f"hybrid-{i:02d}")["total_cost_usd"] for i in (1, 2))
    assert "Left out of the figures above: 1 distorted run(s)" in report and "hybrid-02" in report
    assert f"hybrid {money(both)}" in report.split("With them counted:", 1)[1]
    assert "95% interval" in report.split("## Conclusions", 1)[1]  # the recommendation says how sure


def test_two_pools_head_the_report_with_each_pools_bar(runs_folder: Path, tmp_path: Path) -> None:
    parent = tmp_path / "simulate-pools"
    for pool, region in (("planned", "eu-south-2"), ("pinned", "us-east-1")):
        shutil.copytree(runs_folder, parent / pool)
        record = json.loads((parent / pool / "simulation.json").read_text())
        (parent / pool / "simulation.json").write_text(
            json.dumps({**record, "region": region, "instance_type": "c7i.xlarge"})
        )
    # the baseline's cost per row is half the pool's on-demand one: the runs' on-demand cost halves
    fair = Fair("us-east-1 c6i.xlarge on-demand", 1.0e-8, 2.0e-8, spot_per_row=0.3e-8, boots_only_savings=0.7)
    fair.write(parent / "planned")
    latest = subprocess.run(
        [sys.executable, "-m", "reports", "--out", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "SPOTBATCH_HOME": str(tmp_path)},
    )
    assert latest.returncode == 2 and "no runs under" in latest.stderr  # runs/ is where the newest is sought
    (tmp_path / "runs").mkdir()
    parent.rename(tmp_path / "runs" / parent.name)
    parent = tmp_path / "runs" / parent.name
    latest = subprocess.run(
        [sys.executable, "-m", "reports", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "SPOTBATCH_HOME": str(tmp_path)},
    )
    assert latest.returncode == 0, latest.stderr  # the newest runs folder is found with its pools inside
    report = (tmp_path / "out" / "comparison_report.md").read_text()
    bar = report.split("## The bar: at least 60% below the fair baseline", 1)[1].split("\n## ", 1)[0]
    costs = {
        c: [ledger_totals(runs_folder / f"{c}-{i:02d}")["total_cost_usd"] for i in range(1, n + 1)]
        for c, n in RUNS.items()
    }
    baseline = statistics.mean(costs["on-demand"]) / 2
    assert "**planned pool (eu-south-2 c7i.xlarge)**: the bar" in bar and f"${baseline:.4f} a run" in bar
    for config in ("spot-only", "hybrid", "deadline"):
        savings = 1 - statistics.mean(costs[config]) / baseline
        assert f"- {config}: {savings:.1%} (95%: " in bar, config
    assert "price ceiling 70.0%" in bar
    assert (
        "**pinned pool (us-east-1 c7i.xlarge)**: no fair baseline recorded (`fair.json`), so no bar." in bar
    )
    assert "## Results: planned pool (eu-south-2 c7i.xlarge)" in report
    assert "## Results: pinned pool (us-east-1 c7i.xlarge)" in report
    assert (tmp_path / "out" / "cost_per_run.png").is_file()
    for text, why in (
        ("{not json", "not a fair baseline (Expecting"),
        ('{"baseline": 3}', "field 'baseline' is 3"),
    ):
        (parent / "pinned" / FAIR_FILE).write_text(text)
        with pytest.raises(ReportError, match=rf"{parent / 'pinned' / FAIR_FILE}: {re.escape(why)}"):
            build_report(parent, tmp_path / "bad")


def test_missing_partial_and_corrupt_runs_are_named(runs_folder: Path, tmp_path: Path) -> None:
    copy = tmp_path / "simulate-copy"
    shutil.copytree(runs_folder, copy)
    shutil.rmtree(copy / "hybrid-02")
    (copy / "spot-only-01" / "ledger.jsonl").write_text(
        (copy / "spot-only-01" / "ledger.jsonl").read_text().splitlines()[0] + "\n"
    )
    folder = load_runs(copy)
    assert folder.missing == [
        "spot-only-01: ledger.jsonl has no job line (the run was cut short)",
        "hybrid-02: no run.json (the run did not finish)",
    ]
    paths = build_report(copy, tmp_path / "out")
    assert "hybrid-02: no run.json" in paths.markdown.read_text()
    ledger = copy / "hybrid-01" / "ledger.jsonl"
    lines = ledger.read_text().splitlines()
    lines[1] = lines[1][:40]
    ledger.write_text("\n".join(lines) + "\n")
    with pytest.raises(ReportError, match=rf"{ledger}:2: corrupt ledger line"):
        load_runs(copy)
    result = subprocess.run(
        [sys.executable, "-m", "reports", "--runs", str(copy), "--out", str(tmp_path / "x")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and f"{ledger}:2" in result.stderr


def test_no_runs_tells_the_user_what_to_run(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "coordinator", "report"],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "SPOTBATCH_HOME": str(tmp_path)},
    )
    assert result.returncode == 2
    assert "run `make simulate`" in result.stderr


@pytest.mark.skipif(
    shutil.which("chromium") is None,
    reason="Debian chromium is not installed (`make report-check` installs it)",
)
def test_html_opens_in_headless_chromium(runs_folder: Path, tmp_path: Path) -> None:
    paths = build_report(runs_folder, tmp_path / "out")
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--window-size=1200,2400",
            f"--screenshot={shot}",
            paths.html.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=scaled(120),
    )
    assert png_size(shot) == (1200, 2400) and shot.stat().st_size > 50_000
