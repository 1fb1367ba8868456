"""`spotbatch infra apply-real` never plans one target's stack against another's state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coordinator.cli import main


def test_apply_real_refuses_a_state_folder_of_another_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], terraform_ready: None
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    saved = {"region": "us-east-1", "bucket_name": "b-123", "endpoint": "http://127.0.0.1:5999"}
    (state / "variables.tfvars.json").write_text(json.dumps(saved))
    assert main(["infra", "apply-real", "--state-dir", str(state), "--region", "us-east-1"]) == 2
    err = capsys.readouterr().err
    assert f"{state} holds a stack applied to the emulator at http://127.0.0.1:5999, not AWS us-east-1" in err
    assert json.loads((state / "variables.tfvars.json").read_text()) == saved  # untouched
