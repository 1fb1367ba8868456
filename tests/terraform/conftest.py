"""Terraform tests need the binary and, offline, a provider mirror; without them they skip and say why."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from coordinator.stack.terraform import find_mirror

TERRAFORM_DIR = Path(__file__).resolve().parents[2] / "terraform"
MODULES = sorted(p.name for p in (TERRAFORM_DIR / "modules").iterdir() if (p / "main.tf").is_file())
STACKS = sorted(p.name for p in (TERRAFORM_DIR / "stacks").iterdir() if (p / "main.tf").is_file())


@pytest.fixture(scope="session")
def terraform_ready() -> None:
    if shutil.which("terraform") is None:
        pytest.skip("terraform is not on PATH")
    if find_mirror() is None:
        pytest.skip(
            "no hashicorp/aws provider mirror found (set SPOTBATCH_TF_PLUGIN_MIRROR); the registry is "
            "unreachable offline"
        )
