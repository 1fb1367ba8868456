"""The Makefile's real-AWS targets pass what a user gives them (checked with `make -n`: nothing runs)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.conftest import REPO


def dry_run(*args: str) -> str:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    # the venv's stamp is up to date in any checkout that ran `make setup`; -n prints the commands only.
    # Under `make test` the outer make's MAKEFLAGS and MAKELEVEL would make this a sub-make, which prints
    # "Leaving directory" last.
    env = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MAKELEVEL", "MFLAGS"}}
    result = subprocess.run(
        ["make", "--no-print-directory", "-n", "-W", ".venv/.installed", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("target", ["apply-real BUCKET=b", "run-real INPUT=x.parquet"])
def test_a_preflight_failure_can_be_overridden_on_the_record_from_make(target: str) -> None:
    line = dry_run(*target.split(), "OVERRIDE=teardown-dry-run=checked in the console by hand")
    assert '--override "teardown-dry-run=checked in the console by hand"' in line
    assert "--override" not in dry_run(*target.split())


def test_image_targets_pass_the_base_image_and_the_endpoint() -> None:
    assert '--base-image "debian"' in dry_run("image", "BASE_IMAGE=debian")
    assert '--endpoint "http://127.0.0.1:5000"' in dry_run("image-push", "ENDPOINT=http://127.0.0.1:5000")
