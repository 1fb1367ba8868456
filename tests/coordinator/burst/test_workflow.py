"""The burst workflow against local stand-ins: Lambda's published API served on 127.0.0.1 and a real sshd
as the rented box (parity, rsync, smoke run, pull-back over real SSH). Failure cases: launch error after
the box was created, a terminate that fails once, a box that never becomes active, a parity mismatch, a
payload off the allow-list, SIGTERM and SIGKILL of the CLI (then `burst down`). The API key must not appear
in any file, log or MLflow record."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from coordinator.burst.burst_state import BurstPlan, BurstState
from coordinator.burst.payload import build_payload
from coordinator.burst.providers.lambda_cloud import LambdaCloud
from coordinator.burst.workflow import run_burst
from coordinator.cost.budget import BudgetGuard
from coordinator.errors import (
    BurstFailed,
    ParityMismatch,
    PreflightFailed,
    SshdUnavailable,
)
from coordinator.sim.lambda_standin import LambdaStandIn
from coordinator.sim.local_sshd import LocalSshd
from tests.coordinator.burst.conftest import API_KEY
from tests.host_load import scaled


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSshd]:
    try:
        with LocalSshd(tmp_path_factory.mktemp("box")) as sshd:
            yield sshd
    except SshdUnavailable as reason:
        pytest.skip(f"no local sshd for the burst's box: {reason}")


@pytest.fixture(scope="module")
def payload(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path, sentences_parquet: Path) -> Path:
    return build_payload(
        tmp_path_factory.mktemp("payload") / "burst-payload",
        model_dir=tiny_model_dir,
        dataset=sentences_parquet,
        rows=200,
    )


def plan_for(tmp_path: Path, payload: Path, box: LocalSshd, **changes: Any) -> BurstPlan:
    plan = BurstPlan(
        name="spotbatch-burst-test",
        provider="lambda",
        instance_type="gpu_1x_a100_sxm4_80gb",
        region="us-east-1",
        gpus=1,
        rate_per_gpu_hour=1.79,
        price_date=date.today(),
        planned_hours=0.5,
        payload=payload,
        ssh_key_name="standin-key",
        ssh_private_key=box.client_key,
        run_dir=tmp_path / "run",
        ssh_user=box.user,
        ssh_port=box.port,
        remote_python=sys.executable,
        remote_root=str(tmp_path / "remote"),
        poll_seconds=0.05,
        boot_timeout=20.0,
    )
    return replace(plan, **changes)


def guard_in(tmp_path: Path) -> BudgetGuard:
    return BudgetGuard(5.0, tmp_path / "spend_log.jsonl")


def files_under(*roots: Path) -> list[Path]:
    return [p for root in roots if root.exists() for p in root.rglob("*") if p.is_file()]


def assert_key_nowhere(*roots: Path, text: str = "") -> None:
    assert API_KEY not in text
    for path in files_under(*roots):
        assert API_KEY.encode() not in path.read_bytes(), f"the API key is in {path}"


# -- the client against the stand-in -------------------------------------------------------------------------


# -- the workflow over real SSH ------------------------------------------------------------------------------


def test_round_trip_runs_the_job_on_the_box_and_leaves_nothing(
    standin: LambdaStandIn,
    cloud: LambdaCloud,
    box: LocalSshd,
    payload: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    guard = guard_in(tmp_path)
    tracking = f"sqlite:///{tmp_path / 'mlflow.db'}"
    plan = plan_for(tmp_path, payload, box)
    standin.terminate_failures = 1  # the first terminate answers 500: it is retried
    outcome = run_burst(plan, cloud, guard, tracking_uri=tracking)
    printed = capsys.readouterr().out
    predictions = (outcome.artifacts / "predictions.csv").read_text().splitlines()
    assert predictions[0] == "id,prediction,score" and len(predictions) == 201
    assert json.loads((outcome.artifacts / "metrics-job.json").read_text())["rows"] == 200
    assert (outcome.artifacts / "logs" / "job.log").is_file()
    assert not (outcome.artifacts / "outputs").exists()  # only what was listed came back
    assert standin.alive() == [] and outcome.state.status == "cost-logged"
    assert standin.requests.count("POST /api/v1/instance-operations/terminate") == 2  # a 500, then accepted
    for expected in (
        "parity: python, torch, transformers, tokenizers and the lock hash agree",
        "send burst_job.py",
        "smoke run: ok",
        "job: ok",
        "re-listed: standin-",
        "within it",
    ):
        assert expected in printed, expected
    (line,) = [json.loads(x) for x in (plan.run_dir / "ledger.jsonl").read_text().splitlines()]
    assert line["kind"] == "burst" and line["cost_usd"] == pytest.approx(outcome.state.cost_usd)
    assert line["boot_utc"] == outcome.state.boot_utc and line["billing"] == "per-minute"
    spend = [json.loads(x) for x in (tmp_path / "spend_log.jsonl").read_text().splitlines()]
    assert [("actual" in s, s["op_label"]) for s in spend] == [(False, plan.label), (True, plan.label)]
    assert spend[1]["actual"] == pytest.approx(line["cost_usd"])
    assert_key_nowhere(tmp_path, text=printed)


def test_launch_error_after_create_finds_the_box_by_name_and_tears_it_down(
    standin: LambdaStandIn, cloud: LambdaCloud, box: LocalSshd, payload: Path, tmp_path: Path
) -> None:
    standin.launch_error_after_create = 1
    plan = plan_for(tmp_path, payload, box)
    with pytest.raises(BurstFailed, match="launch failed"):
        run_burst(plan, cloud, guard_in(tmp_path), tracking_uri=None)
    state = BurstState.load(plan.run_dir)
    assert state.instance_id in standin.boxes and standin.alive() == []
    assert state.status == "cost-logged" and state.cost_usd is not None


def test_a_box_that_never_becomes_active_is_terminated(
    standin: LambdaStandIn, cloud: LambdaCloud, box: LocalSshd, payload: Path, tmp_path: Path
) -> None:
    standin.never_active = True
    plan = plan_for(tmp_path, payload, box, boot_timeout=0.5)
    with pytest.raises(BurstFailed, match=r"not active within 0.5 s \(status booting\)"):
        run_burst(plan, cloud, guard_in(tmp_path), tracking_uri=None)
    assert len(standin.boxes) == 1 and standin.alive() == []
    assert "re-listed: standin-" in (plan.run_dir / "burst.log").read_text()


@pytest.mark.parametrize(("fault", "status"), [("boot_unhealthy", "unhealthy"), ("preempt", "preempted")])
def test_an_unhealthy_or_preempted_box_fails_at_once_and_counts_as_gone(
    standin: LambdaStandIn,
    cloud: LambdaCloud,
    box: LocalSshd,
    payload: Path,
    tmp_path: Path,
    fault: str,
    status: str,
) -> None:
    setattr(standin, fault, True)
    standin.boot_seconds = 0.0
    plan = plan_for(tmp_path, payload, box, boot_timeout=120.0)
    started = time.monotonic()
    with pytest.raises(BurstFailed, match=f"is {status} while booting"):
        run_burst(plan, cloud, guard_in(tmp_path), tracking_uri=None)
    assert time.monotonic() - started < 30  # not the boot timeout, not the 300 s wait for "terminated"
    assert len(standin.boxes) == 1 and standin.alive() == []
    assert BurstState.load(plan.run_dir).status == "cost-logged"


def test_a_parity_mismatch_voids_the_run_and_says_what_differs(
    standin: LambdaStandIn, cloud: LambdaCloud, box: LocalSshd, payload: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "bare-venv"  # a Python on the box without the project's packages
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    plan = plan_for(tmp_path, payload, box, remote_python=str(bare / "bin" / "python"))
    with pytest.raises(
        ParityMismatch, match=r"run void: torch: 2\.13\.0 here, None on the box; transformers: "
    ) as error:
        run_burst(plan, cloud, guard_in(tmp_path), tracking_uri=None)
    assert "lock_sha256" in str(error.value)
    assert standin.alive() == [] and not (tmp_path / "remote").exists()  # nothing was sent


def test_a_payload_off_the_allow_list_is_refused_before_anything_is_launched(
    standin: LambdaStandIn, cloud: LambdaCloud, box: LocalSshd, tmp_path: Path
) -> None:
    bad = tmp_path / "payload"
    (bad / "data").mkdir(parents=True)
    (bad / ".env").write_text("SECRET=1\n")
    (bad / "data" / "dump.bin").write_bytes(b"\0")
    guard = guard_in(tmp_path)
    with pytest.raises(PreflightFailed) as error:
        run_burst(plan_for(tmp_path, bad, box), cloud, guard, tracking_uri=None)
    assert ".env: looks like a secret" in str(error.value) and "data/dump.bin: not on the allow-list" in str(
        error.value
    )
    assert standin.boxes == {} and guard.state().reserved == 0.0
    assert not any(r.startswith("POST") for r in standin.requests)


def test_dry_run_prints_the_plan_and_touches_nothing(tmp_path: Path) -> None:
    run_dir = tmp_path / "never"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "coordinator",
            "burst",
            "--dry-run",
            "--run-dir",
            str(run_dir),
            "--hours",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=scaled(60),
        env={**os.environ, "LAMBDA_API_URL": "http://127.0.0.1:9/api/v1", "SPOTBATCH_HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert (
        "estimate $4.47 (+25% margin)" in done.stdout and "nothing is launched" in done.stdout
    )  # 1.79 x 2 h x 1.25
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no run folder, no spend log, no MLflow


def cli_env(standin: LambdaStandIn, home: Path) -> dict[str, str]:
    """SPOTBATCH_HOME: the spend log and MLflow of these runs go to the test's folder."""
    return {
        **os.environ,
        "LAMBDA_API_KEY": API_KEY,
        "LAMBDA_API_URL": standin.api_url,
        "PYTHONUNBUFFERED": "1",
        "SPOTBATCH_HOME": str(home),
    }


def start_cli(standin: LambdaStandIn, box: LocalSshd, payload: Path, run_dir: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "coordinator",
            "burst",
            "--payload",
            str(payload),
            "--run-dir",
            str(run_dir),
            "--ssh-key-name",
            "standin-key",
            "--ssh-key",
            str(box.client_key),
            "--ssh-user",
            box.user,
            "--remote-python",
            sys.executable,
            "--ceiling",
            "5",
        ],
        env=cli_env(standin, run_dir.parent / "home"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for_launch(run_dir: Path, timeout: float = 60.0) -> BurstState:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (run_dir / "instance.json").exists():
            state = BurstState.load(run_dir)
            if state.instance_id:
                return state
        time.sleep(0.05)
    raise AssertionError("the CLI never recorded a launched instance")


def test_sigterm_after_launch_tears_down_and_exits_non_zero(
    standin: LambdaStandIn, box: LocalSshd, payload: Path, tmp_path: Path
) -> None:
    standin.boot_seconds = 30.0  # it will still be booting when the signal comes
    run_dir = tmp_path / "run"
    process = start_cli(standin, box, payload, run_dir)
    state = wait_for_launch(run_dir)
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=scaled(120))
    assert process.returncode == 130, output
    assert standin.boxes[state.instance_id or ""].status == "terminated" and standin.alive() == []
    assert BurstState.load(run_dir).status == "cost-logged"
    assert "FAILED: KeyboardInterrupt" in output and "re-listed: " in output
    assert_key_nowhere(tmp_path, text=output)
    assert (tmp_path / "home" / "runs" / "mlflow.db").is_file()  # the cost went to MLflow, without the key


def test_burst_down_tears_down_after_the_cli_was_killed(
    standin: LambdaStandIn, box: LocalSshd, payload: Path, tmp_path: Path
) -> None:
    standin.boot_seconds = 30.0
    run_dir = tmp_path / "run"
    process = start_cli(standin, box, payload, run_dir)
    state = wait_for_launch(run_dir)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=scaled(30))
    assert standin.alive() == [state.instance_id]  # killed with its box running: what `burst down` is for
    down = subprocess.run(
        [sys.executable, "-m", "coordinator", "burst", "down", "--run-dir", str(run_dir)],
        env=cli_env(standin, tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    assert down.returncode == 0, down.stdout + down.stderr
    assert standin.alive() == [] and "is gone; cost $" in down.stdout
    (line,) = [json.loads(x) for x in (run_dir / "ledger.jsonl").read_text().splitlines()]
    assert line["kind"] == "burst" and line["boot_utc"] == state.boot_utc
    again = subprocess.run(
        [sys.executable, "-m", "coordinator", "burst", "down", "--run-dir", str(run_dir)],
        env=cli_env(standin, tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert again.returncode == 0 and "already logged" in again.stdout
    assert len((run_dir / "ledger.jsonl").read_text().splitlines()) == 1  # the cost is logged once
    assert_key_nowhere(tmp_path, text=down.stdout + down.stderr)
