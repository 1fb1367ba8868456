"""The programs a simulated machine finds on its PATH run the checkout that runs the simulator, whichever
copy of the project the interpreter has installed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from coordinator.paths import REPO_ROOT, checkout_first
from coordinator.sim.standins import PROGRAMS, install


def test_every_stand_in_runs_this_checkout_first(tmp_path: Path) -> None:
    bin_dir = install(tmp_path / "bin", docker_module="site")  # `python -m site` prints its sys.path
    assert sorted(p.name for p in bin_dir.iterdir()) == sorted(PROGRAMS)
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": "/elsewhere"}
    shown = subprocess.run(
        [str(bin_dir / "docker")], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    ).stdout
    path = [line.strip().strip("',") for line in shown.splitlines() if line.startswith("    '")]
    assert path[1:3] == [str(REPO_ROOT), "/elsewhere"], shown  # after `-m`'s working directory


def test_checkout_first_keeps_what_was_there() -> None:
    assert checkout_first({})["PYTHONPATH"] == str(REPO_ROOT)
    assert checkout_first({"PYTHONPATH": "/a", "X": "1"}) == {"PYTHONPATH": f"{REPO_ROOT}:/a", "X": "1"}
