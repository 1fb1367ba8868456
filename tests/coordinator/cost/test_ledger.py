"""The ledger: attempts priced by hand-worked cases, the job summary, a corrupt line named, MLflow."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from coordinator.cost.billing import EC2_LINUX, cost_usd
from coordinator.cost.ledger import (
    AttemptRecord,
    log_to_mlflow,
    price_attempt,
    read_ledger,
    summarize_job,
    write_ledger,
)

SPOT, ON_DEMAND = 0.918, 3.06  # p3.2xlarge, us-east-1, from the shipped table


def attempt(
    segment: str, market: str, start: float, end: float, reason: str, kept: int, wasted: int
) -> AttemptRecord:
    return price_attempt(
        rule=EC2_LINUX,
        rate_usd_per_hour=SPOT if market == "spot" else ON_DEMAND,
        launched_at=start,
        ended_at=end,
        job_id="job-1",
        segment_id=segment,
        attempt_id=f"{segment}-{start:g}",
        instance_id=f"i-{segment}{start:g}",
        provider="aws",
        region="us-east-1",
        instance_type="p3.2xlarge",
        market=market,
        gpus=1,
        price_source="table",
        end_reason=reason,
        rows_kept=kept,
        rows_wasted=wasted,
        rows_per_s=2.0,
    )


def test_mixed_spot_and_on_demand_job_by_hand(tmp_path: Path) -> None:
    attempts = [
        attempt("a", "spot", 0, 1_800, "interrupted", kept=3_000, wasted=500),  # 1,800 s at 0.918 = 0.459
        attempt("a", "on-demand", 1_900, 3_400, "done", kept=1_000, wasted=0),  # 1,500 s at 3.06 = 1.275
        attempt("b", "spot", 0, 2_000, "done", kept=4_000, wasted=0),  # 2,000 s at 0.918 = 0.51
        attempt("c", "spot", 0, 10, "failed", kept=0, wasted=0),  # 10 s bills 60 s: 0.0153
    ]
    assert [a.billed_seconds for a in attempts] == [1_800, 1_500, 2_000, 60]
    summary = summarize_job("job-1", attempts, ON_DEMAND)
    assert summary.total_cost_usd == pytest.approx(0.459 + 1.275 + 0.51 + 0.0153)
    assert summary.spot_cost_usd == pytest.approx(0.459 + 0.51 + 0.0153)
    assert summary.spot_hours == pytest.approx(3_860 / 3_600)
    assert summary.on_demand_hours == pytest.approx(1_500 / 3_600)
    assert summary.interruptions == 1 and summary.rows_redone == 500
    assert summary.redone_cost_usd == pytest.approx(250 * 0.918 / 3_600)  # 500 rows at 2 rows/s
    # all on demand: the interrupted attempt counts only its kept rows (3,000 / 2 = 1,500 s)
    all_on_demand = (1_500 + 1_500 + 2_000 + 60) * 3.06 / 3_600
    assert summary.all_on_demand_cost_usd == pytest.approx(all_on_demand)
    assert summary.savings_pct == pytest.approx(
        (all_on_demand - summary.total_cost_usd) / all_on_demand * 100
    )

    path = write_ledger(tmp_path / "run", attempts, summary)
    assert read_ledger(path) == (attempts, summary)


def test_the_cost_of_watching_is_in_the_summary() -> None:
    """Heartbeat PUTs per instance-hour and their price: 2 h of instances that beat 300 times."""
    attempts = [
        replace(attempt("a", "spot", 0, 3_600, "done", kept=10, wasted=0), heartbeat_puts=120),
        replace(attempt("b", "spot", 0, 3_600, "done", kept=10, wasted=0), heartbeat_puts=180),
    ]
    summary = summarize_job("job-1", attempts, ON_DEMAND)
    assert summary.heartbeat_puts_per_instance_hour == pytest.approx(150.0)
    assert summary.heartbeat_put_usd == pytest.approx(300 * 0.005 / 1_000)
    assert summary.heartbeat_put_usd / summary.total_cost_usd < 0.01  # watching costs under 1%


def test_corrupt_ledger_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    path.write_text('{"kind": "job", "job_id": "x"}\n')
    with pytest.raises(ValueError, match=r"ledger.jsonl:1: corrupt ledger line"):
        read_ledger(path)


@pytest.mark.slow
def test_job_lands_in_mlflow_with_its_params_and_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking import MlflowClient

    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # MLflow's default artifact root is ./mlruns of the working directory

    attempts = [attempt("a", "spot", 0, 1_800, "done", kept=3_600, wasted=0)]
    summary = summarize_job("job-ml", attempts, ON_DEMAND)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    ledger = write_ledger(tmp_path / "run", attempts, summary)
    run_id = log_to_mlflow(summary, attempts, tracking_uri=uri, ledger_path=ledger)
    run = MlflowClient(tracking_uri=uri).get_run(run_id)
    assert run.data.metrics["cost_usd"] == pytest.approx(cost_usd(SPOT, 1_800))
    assert run.data.metrics["billable_hours"] == pytest.approx(0.5)
    assert run.data.params["instance_type"] == "p3.2xlarge"
    assert run.data.params["spot_rate_usd_per_hour"] == "0.918"
    assert run.data.params["first_launch_cloud_clock_utc"] == "1970-01-01T00:00:00+00:00"
    # a spot-only run still names the on-demand rate its savings figure used, under a name that says which
    assert run.data.params["on_demand_rate_usd_per_hour"] == f"{ON_DEMAND:g}"
    assert run.data.metrics["savings_vs_own_work_on_demand_pct"] == pytest.approx(summary.savings_pct)
    assert run.info.artifact_uri.startswith(
        (tmp_path / "mlartifacts" / "spotbatch").as_uri()
    )  # beside the store
    assert (
        list(tmp_path.glob("mlartifacts/*/*/artifacts/ledger.jsonl")) and not (elsewhere / "mlruns").exists()
    )


def test_logging_to_mlflow_leaves_the_environment_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mlflow.set_tracking_uri sets MLFLOW_TRACKING_URI; child processes started later must not inherit it."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    attempts = [attempt("a", "spot", 0, 600, "done", kept=1_200, wasted=0)]
    summary = summarize_job("job-env", attempts, ON_DEMAND)
    log_to_mlflow(summary, attempts, tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert "MLFLOW_TRACKING_URI" not in os.environ
