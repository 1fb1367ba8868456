"""The coordinator's own overheads, measured from a matrix's runs for the model's second prediction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coordinator.cost.ledger import AttemptRecord
from coordinator.job.loop.controller import JobOutcome
from coordinator.job.loop.runner import RunResult
from coordinator.sim.prediction import OVERHEAD_NAMES, measured_overheads
from coordinator.sim.settings import SimulatedRun


def _attempt(segment_id: str, launched_at: float) -> AttemptRecord:
    return AttemptRecord(
        job_id="j",
        segment_id=segment_id,
        attempt_id=f"j/{segment_id}/{launched_at:g}",
        instance_id="i-0",
        provider="aws",
        region="us-east-1",
        instance_type="c7i.xlarge",
        market="spot",
        gpus=0,
        rate_usd_per_hour=0.07,
        price_source="table",
        billing="per-second",
        launched_at=launched_at,
        ended_at=launched_at + 50.0,
        billed_seconds=50,
        cost_usd=0.001,
        end_reason="done",
        rows_kept=10,
        rows_wasted=0,
        rows_per_s=1.0,
    )


def test_the_reaction_is_the_mean_from_each_notice_to_its_segments_next_launch(tmp_path: Path) -> None:
    served = [
        {"segment_id": "seg-0000", "kind": "notice", "notice_cloud": 100.0},  # relaunched 4 s later
        {"segment_id": "seg-0001", "kind": "notice", "notice_cloud": 200.0},  # 12 s later (it was booting)
        {"segment_id": "seg-0001", "kind": "notice", "notice_cloud": 400.0},  # its drain ended the segment
        {"segment_id": "seg-0000", "kind": "hard", "notice_cloud": 300.0},  # no warning: not a reaction
    ]
    (tmp_path / "interruptions.jsonl").write_text("".join(json.dumps(s) + "\n" for s in served))
    launches = [("seg-0000", 10.0), ("seg-0000", 104.0), ("seg-0001", 11.0), ("seg-0001", 212.0)]
    attempts = [_attempt(s, t) for s, t in launches]
    outcome = JobOutcome(
        "j", 2, 2, {}, attempts, started_cloud=5.0, ended_cloud=500.0, wall_seconds=9.0, api_retries=0
    )
    (tmp_path / "run.json").write_text(json.dumps({"cloud_seconds": 495.0}))  # the job's start to its end
    run = SimulatedRun("spot-only-01", "spot-only", RunResult(outcome, None, None, tmp_path), interruptions=3)
    overheads = dict(zip(OVERHEAD_NAMES, measured_overheads([run]), strict=True))
    assert overheads["reaction_seconds"] == pytest.approx(8.0)
    assert overheads["first_launch_seconds"] == pytest.approx(5.0) and overheads["end_seconds"] == 238.0
