"""Worker types the worker image cannot run on are refused before anything is built, applied or launched."""

from __future__ import annotations

import subprocess
import sys

import pytest

from coordinator.errors import ConfigError
from coordinator.stack.defaults import require_worker_type, unsupported_reason
from coordinator.stack.deployment import StackSettings


@pytest.mark.parametrize(
    ("instance_type", "why"),
    [
        ("p3.2xlarge", "no sm_70 kernels"),  # V100: two crashes per segment at $3.06/h otherwise
        ("p3dn.24xlarge", "no sm_70 kernels"),
        ("g5g.xlarge", "arm64"),  # Graviton: the amd64 image would fail with "exec format error"
        ("c7g.xlarge", "arm64"),
        ("m6gd.large", "arm64"),
        ("inf2.xlarge", "Neuron"),
    ],
)
def test_a_type_the_image_cannot_run_is_refused_with_why(instance_type: str, why: str) -> None:
    reason = unsupported_reason(instance_type)
    assert reason is not None and why in reason
    with pytest.raises(ConfigError, match=f"--instance-type {instance_type}:"):
        require_worker_type(instance_type)
    with pytest.raises(ConfigError, match=instance_type):
        StackSettings(bucket_name="b", instance_type=instance_type)


@pytest.mark.parametrize(
    "instance_type",
    ["c7i.xlarge", "m7i-flex.large", "g4dn.xlarge", "g5.xlarge", "g6e.xlarge", "p4d.24xlarge", "t3.medium"],
)
def test_x86_cpu_and_turing_or_newer_gpu_types_are_taken(instance_type: str) -> None:
    assert unsupported_reason(instance_type) is None


def test_the_cli_refuses_a_volta_image_build_in_one_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "coordinator", "image", "build", "--instance-type", "p3.2xlarge"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "sm_70" in result.stderr
