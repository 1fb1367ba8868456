"""`spotbatch run`'s options: the steady heartbeat interval follows the loss timeout, and one that would let
a live worker be taken for lost is refused in one line; so is the budget guard's test mode."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coordinator.commands.run import steady_heartbeat
from coordinator.errors import ConfigError
from inference.heartbeat import STEADY_HEARTBEAT_SECONDS
from tests.host_load import scaled


def options(steady: float | None, timeout: float) -> argparse.Namespace:
    return argparse.Namespace(steady_heartbeat_seconds=steady, heartbeat_timeout=timeout)


def test_the_steady_interval_defaults_to_30_s_or_a_third_of_the_timeout() -> None:
    assert steady_heartbeat(options(None, 90)) == STEADY_HEARTBEAT_SECONDS == 30
    assert steady_heartbeat(options(None, 8)) == pytest.approx(8 / 3)  # a test's short timeout
    assert steady_heartbeat(options(20, 90)) == 20


@pytest.mark.parametrize("steady", [0, -1, 46])
def test_an_interval_two_beats_do_not_fit_in_the_timeout_is_refused(steady: float) -> None:
    with pytest.raises(ConfigError, match=f"--steady-heartbeat-seconds {steady:g}: .*--heartbeat-timeout"):
        steady_heartbeat(options(steady, 90))


def test_no_events_turns_the_queue_off_and_the_default_keeps_it() -> None:
    from coordinator.cli import build_parser

    parse = build_parser().parse_args
    assert parse(["run", "--input-key", "data/k"]).use_events is True
    assert parse(["run", "--input-key", "data/k", "--no-events"]).use_events is False


def test_instance_types_are_the_jobs_pools_of_the_stacks_kind() -> None:
    from coordinator.commands.run_setup import pool_types
    from coordinator.stack.outputs import StackOutputs

    stack = StackOutputs(
        region="us-east-1",
        bucket="b",
        launch_template_ids={"spot": "lt-1"},
        subnet_ids={},
        name="s",
        worker_role_path="/spotbatch/s/",
        worker_boundary_arn="arn:aws:iam::123456789012:policy/spotbatch/s/boundary",
        repository_arn="arn:aws:ecr:us-east-1:123456789012:repository/s-worker",
        log_group="/spotbatch/s/workers",
        log_group_arn="arn:aws:logs:us-east-1:123456789012:log-group:/spotbatch/s/workers",
        metrics_namespace="spotbatch",
        instance_type="c7i.xlarge",
    )
    assert pool_types(None, stack) == ()
    assert pool_types("m7i.xlarge, c7i.xlarge,m7i.xlarge", stack) == ("m7i.xlarge", "c7i.xlarge")
    with pytest.raises(ConfigError, match=r"--instance-types g5.xlarge: a GPU type, and the stack's c7i"):
        pool_types("m7i.xlarge,g5.xlarge", stack)
    with pytest.raises(ConfigError, match=r"nope\.large"):
        pool_types("nope.large", stack)


def test_a_real_run_refuses_the_budget_test_mode_left_in_a_shell(tmp_path: Path) -> None:
    """`BUDGET_GUARD_TEST_MODE=1` kept a real run's spend log in memory only: two jobs under one ceiling both
    ran. Now the run stops before it reads, uploads or spends anything, in one line."""
    env = {**os.environ, "BUDGET_GUARD_TEST_MODE": "1", "SPOTBATCH_HOME": str(tmp_path)}
    outputs = tmp_path / "never-applied" / "outputs.json"
    command = [sys.executable, "-m", "coordinator", "run", "--input-key", "data/k", "--outputs", str(outputs)]
    refused = subprocess.run(command, capture_output=True, text=True, env=env, timeout=scaled(120))
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    assert "BUDGET_GUARD_TEST_MODE=1 is set" in refused.stderr and "outputs" not in refused.stderr


NO_CREDENTIALS = {
    "AWS_CONFIG_FILE": "/nonexistent/config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def _spotbatch(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return subprocess.run(
        [sys.executable, "-m", "coordinator", *args],
        capture_output=True,
        text=True,
        env={**base, "SPOTBATCH_HOME": str(tmp_path), **(env or {})},
        timeout=scaled(120),
    )


def test_a_run_on_a_stack_never_applied_points_to_apply_real(tmp_path: Path) -> None:
    outputs = tmp_path / "runs" / "infra" / "aws" / "outputs.json"
    ran = _spotbatch(tmp_path, "run", "--input-key", "data/k", "--outputs", str(outputs))
    assert ran.returncode == 2 and ran.stderr.count("\n") == 1, ran.stderr
    assert "the stack was never applied here; run `make apply-real" in ran.stderr


def test_no_aws_credentials_is_one_line_and_exit_2_not_a_traceback(tmp_path: Path) -> None:
    """botocore's NoCredentialsError came out as a 60-line traceback with exit 1."""
    ran = _spotbatch(tmp_path, "preflight", "--region", "us-east-1", "--estimate", "1", env=NO_CREDENTIALS)
    assert ran.returncode == 2 and ran.stderr.count("\n") == 1, ran.stderr
    assert ran.stderr.startswith("error: AWS credentials: Unable to locate credentials. Set AWS_PROFILE")
