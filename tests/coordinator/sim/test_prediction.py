"""The coordinator's own overheads, measured from a matrix's runs for the model's second prediction."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from coordinator.sim.prediction import OVERHEAD_NAMES, measured_overheads


def test_the_reaction_is_the_mean_from_each_notice_to_its_segments_next_launch(tmp_path: Path) -> None:
    served = [
        {"segment_id": "seg-0000", "kind": "notice", "notice_cloud": 100.0},  # relaunched 4 s later
        {"segment_id": "seg-0001", "kind": "notice", "notice_cloud": 200.0},  # 12 s later (it was booting)
        {"segment_id": "seg-0001", "kind": "notice", "notice_cloud": 400.0},  # its drain ended the segment
        {"segment_id": "seg-0000", "kind": "hard", "notice_cloud": 300.0},  # no warning: not a reaction
    ]
    (tmp_path / "interruptions.jsonl").write_text("".join(json.dumps(s) + "\n" for s in served))
    launches = [("seg-0000", 10.0), ("seg-0000", 104.0), ("seg-0001", 11.0), ("seg-0001", 212.0)]
    attempts = [SimpleNamespace(segment_id=s, launched_at=t, ended_at=t + 50.0) for s, t in launches]
    outcome = SimpleNamespace(attempts=attempts, ended_cloud=500.0)
    run = SimpleNamespace(result=SimpleNamespace(outcome=outcome, run_dir=tmp_path), job_seconds=495.0)
    overheads = dict(zip(OVERHEAD_NAMES, measured_overheads([run]), strict=True))  # type: ignore[list-item]
    assert overheads["reaction_seconds"] == pytest.approx(8.0)
    assert overheads["first_launch_seconds"] == pytest.approx(5.0) and overheads["end_seconds"] == 238.0
