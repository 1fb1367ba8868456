"""A simulated machine's power-off, with real processes: an OS shutdown lets the boot script's EXIT trap
and its children finish their last writes (the shim's final log ship); a hard stop does not."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from coordinator.sim.machine import SimulatedInstance, stop_processes
from tests.host_load import scaled

# The boot script's last act, as the real one's EXIT trap and the docker shim's final ship: a write that
# happens only after SIGTERM, and takes a moment.
SCRIPT = """
trap 'sleep 0.3; echo shipped > "$1"; exit 0' TERM
echo up > "$1.up"
while :; do sleep 0.05; done
"""


# The real shape: bash (no TERM trap: it ends at once on SIGTERM, running its EXIT trap) waiting on the
# docker shim, a child that forwards the signal and ships its last lines afterwards, outliving bash.
SCRIPT_AND_SHIM = """
trap 'echo trapped > "$1.trap"' EXIT
python3 -c '
import signal, sys, time
def shutting_down(*_):
    time.sleep(0.5)
    open(sys.argv[1], "w").write("shipped")
    sys.exit(0)
signal.signal(signal.SIGTERM, shutting_down)
open(sys.argv[1] + ".up", "w").write("up")
while True:
    time.sleep(0.05)
' "$1"
"""


def _boot(tmp_path: Path, script_text: str = SCRIPT) -> tuple[SimulatedInstance, Path]:
    mark = tmp_path / "last-write"
    script = subprocess.Popen(["bash", "-c", script_text, "boot", str(mark)], start_new_session=True)
    deadline = time.monotonic() + scaled(10)
    while not Path(f"{mark}.up").exists():
        assert time.monotonic() < deadline, "the boot script never started"
        time.sleep(0.02)
    instance = SimulatedInstance(instance_id="i-0power", tags={}, booted_at=time.time(), role=None)
    instance.script = script
    return instance, mark


@pytest.mark.parametrize(("hard", "shipped"), [(False, True), (True, False)])
def test_power_off_lets_the_boot_script_finish_only_when_soft(
    tmp_path: Path, hard: bool, shipped: bool
) -> None:
    instance, mark = _boot(tmp_path)
    stop_processes(instance, hard=hard, grace=5.0)
    assert instance.script is not None and instance.script.poll() is not None
    assert mark.exists() is shipped


@pytest.mark.parametrize(("hard", "shipped"), [(False, True), (True, False)])
def test_power_off_waits_for_the_children_that_outlive_the_boot_script(
    tmp_path: Path, hard: bool, shipped: bool
) -> None:
    instance, mark = _boot(tmp_path, SCRIPT_AND_SHIM)
    stop_processes(instance, hard=hard, grace=5.0)
    assert Path(f"{mark}.trap").exists() is not hard  # SIGKILL runs no trap
    assert mark.exists() is shipped
