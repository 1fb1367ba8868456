"""The simulator's processes die with the process that started them: a SIGKILL of `spotbatch simulate`'s
process group leaves no emulator, no boot script and no worker behind (each runs in a session of its own,
so the group kill alone does not reach them); and the next start stops a leftover it recorded."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coordinator.sim.lifeline import record_pid, stop_leftover
from tests.host_load import scaled

ROOT = Path(__file__).resolve().parents[3]

PARENT = """
import os, subprocess, sys, time
from pathlib import Path
from coordinator.sim.emulator import MotoServer
from coordinator.sim.lifeline import die_with_parent
from coordinator.sim.worker_boot import WorkerLauncher

out, model = Path(sys.argv[1]), sys.argv[2]
os.mkfifo(out / "input.parquet")  # a worker that opens it waits for a writer that never comes: it lives
args = ("--input", str(out / "input.parquet"), "--start", "0", "--stop", "10", "--segment-id", "seg-0000",
        "--output-prefix", str(out / "output"), "--model", model, "--no-notice-poll")
aws = MotoServer(pid_file=out / "moto.pid").start()
script = subprocess.Popen(["bash", "-c", "sleep 600"], start_new_session=True,
                          preexec_fn=die_with_parent(os.getpid()))
env = {"PATH": os.environ["PATH"], "PYTHONPATH": os.environ["PYTHONPATH"]}
forked = WorkerLauncher("fork").start(env, out / "forked.log", args)
execd = WorkerLauncher("exec").start(env, out / "exec.log", args)
time.sleep(8)  # both past their imports, waiting on the input
(out / "pids").write_text(f"{aws.process.pid} {script.pid} {forked.pid} {execd.pid}")
time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
def test_a_sigkilled_simulator_takes_its_emulator_scripts_and_workers_with_it(
    tmp_path: Path, tiny_model_dir: Path
) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(tmp_path), str(tiny_model_dir)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        start_new_session=True,
    )
    deadline = time.monotonic() + scaled(60)
    while not (tmp_path / "pids").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    children = [int(p) for p in (tmp_path / "pids").read_text().split()]
    logs = {name: (tmp_path / name).read_text() for name in ("forked.log", "exec.log")}
    assert [alive(pid) for pid in children] == [True] * 4, logs
    os.killpg(parent.pid, signal.SIGKILL)  # the process group, as a terminal's kill would
    parent.wait(scaled(10))
    deadline = time.monotonic() + scaled(10)
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in children if alive(pid)] == []


def test_the_next_start_stops_a_leftover_it_recorded_and_nothing_else(tmp_path: Path) -> None:
    leftover = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)", "moto.server", "-p", "1"],
        start_new_session=True,
    )
    innocent = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        record_pid(tmp_path / "moto.pid", leftover.pid, "moto.server -p 1")
        assert stop_leftover(tmp_path / "moto.pid") == leftover.pid
        assert leftover.wait(scaled(10)) == -signal.SIGKILL
        record_pid(tmp_path / "moto.pid", innocent.pid, "moto.server -p 1")  # a pid reused by another
        assert stop_leftover(tmp_path / "moto.pid") is None
        assert innocent.poll() is None and not (tmp_path / "moto.pid").exists()
    finally:
        innocent.kill()
        leftover.kill()
        innocent.wait()
        leftover.wait()
